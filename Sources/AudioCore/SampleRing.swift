import Synchronization

/// A lock-free ring of samples between one writing thread and one reading
/// thread, of fixed capacity. Neither side blocks or allocates.
public final class SampleRing: Sendable {
    /// The most samples the ring holds at once.
    public let capacity: Int
    private nonisolated(unsafe) let storage: UnsafeMutableBufferPointer<Float>
    /// Samples written and read since the start; their difference is what is held.
    private let written = Atomic<Int>(0)
    private let consumed = Atomic<Int>(0)

    /// An empty ring of `capacity` samples (at least 1), allocated once here.
    public init(capacity: Int) {
        precondition(capacity > 0, "a ring holds something")
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
        storage.initialize(repeating: 0)
    }

    deinit { storage.deallocate() }

    /// Samples waiting to be read.
    public var count: Int { written.load(ordering: .acquiring) - consumed.load(ordering: .acquiring) }

    /// Writes as many of `samples` as fit; returns how many. Writer's thread only.
    @discardableResult
    public func write(_ samples: UnsafeBufferPointer<Float>) -> Int {
        let head = written.load(ordering: .relaxed)
        let room = capacity - (head - consumed.load(ordering: .acquiring))
        let count = min(room, samples.count)
        copy(count, from: samples.baseAddress, toRingAt: head % capacity)
        written.store(head + count, ordering: .releasing)
        return count
    }

    /// Reads up to `block.count` samples into its start; returns how many. Reader's thread only.
    public func read(into block: UnsafeMutableBufferPointer<Float>) -> Int {
        let tail = consumed.load(ordering: .relaxed)
        let count = min(written.load(ordering: .acquiring) - tail, block.count)
        copy(count, fromRingAt: tail % capacity, to: block.baseAddress)
        consumed.store(tail + count, ordering: .releasing)
        return count
    }

    /// Copies `count` samples into the ring from `start` on, wrapping once at its end.
    private func copy(_ count: Int, from source: UnsafePointer<Float>?, toRingAt start: Int) {
        guard count > 0, let source, let ring = storage.baseAddress else { return }
        let first = min(count, capacity - start)
        (ring + start).update(from: source, count: first)
        ring.update(from: source + first, count: count - first)
    }

    /// Copies `count` samples out of the ring from `start` on, wrapping once at its end.
    private func copy(_ count: Int, fromRingAt start: Int, to target: UnsafeMutablePointer<Float>?) {
        guard count > 0, let target, let ring = storage.baseAddress else { return }
        let first = min(count, capacity - start)
        target.update(from: ring + start, count: first)
        (target + first).update(from: ring, count: count - first)
    }

    /// Drops the oldest `count` samples held, or all there are. Reader's thread only.
    public func skip(_ count: Int) {
        let tail = consumed.load(ordering: .relaxed)
        consumed.store(tail + min(count, written.load(ordering: .acquiring) - tail), ordering: .releasing)
    }

    /// Drops everything held. Reader's thread only.
    public func clear() {
        consumed.store(written.load(ordering: .acquiring), ordering: .releasing)
    }
}
