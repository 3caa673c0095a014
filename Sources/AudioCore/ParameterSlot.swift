import Synchronization

/// A value that control threads set and the render thread reads each
/// block: the latest write wins and nothing queues, so no update can be
/// lost or pile up behind a stalled reader.
///
/// A triple buffer: the writer fills a spare copy and publishes it with one
/// atomic exchange; the reader takes the newest published copy with
/// another. Neither side waits for the other or allocates. Writers
/// serialise among themselves through a lock the render thread never
/// takes.
public final class ParameterSlot<Value: BitwiseCopyable>: @unchecked Sendable {
    /// A published copy's index, with this bit set until the reader takes it.
    private static var fresh: Int { 4 }

    private let copies: UnsafeMutablePointer<Value>
    /// The copy between the writer and the reader.
    private let middle = Atomic<Int>(1)
    /// The writer's spare copy, under `writers`.
    private var back = 2
    private var lastWritten: Value
    /// The reader's copy; the render thread's alone.
    private var front = 0
    private let writers = Mutex(())

    /// A slot holding `value`, which `load` returns until the first write.
    public init(_ value: Value) {
        copies = .allocate(capacity: 3)
        lastWritten = value
        copies.initialize(repeating: value, count: 3)
    }

    deinit { copies.deallocate() }

    /// Publishes `value`. Any thread but the one that reads.
    public func store(_ value: Value) { update { $0 = value } }

    /// Publishes `change` made to the newest value, with no other writer
    /// between the read and the write. Any thread but the one that reads.
    public func update(_ change: (inout Value) -> Void) {
        writers.withLock { _ in
            change(&lastWritten)
            copies[back] = lastWritten
            back = middle.exchange(back | Self.fresh, ordering: .acquiringAndReleasing) & 3
        }
    }

    /// The newest value published. The reading thread only.
    public func load() -> Value {
        if middle.load(ordering: .relaxed) & Self.fresh != 0 {
            front = middle.exchange(front, ordering: .acquiringAndReleasing) & 3
        }
        return copies[front]
    }

    /// The newest value a writer published, for control threads that read
    /// back what they set.
    public var latest: Value {
        writers.withLock { _ in lastWritten }
    }
}
