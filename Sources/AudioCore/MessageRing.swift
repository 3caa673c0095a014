import Synchronization

/// A lock-free queue of fixed capacity between one sending thread and one
/// receiving thread: commands into the render thread, events out of it.
/// Neither side blocks or allocates; a full ring hands what is sent back
/// to the sender, who decides whether to wait, retry or report it.
///
/// Messages are moved in and out, so a class reference sent through it
/// changes threads without being copied; the receiver decides where its
/// last reference is dropped.
public final class MessageRing<Message>: @unchecked Sendable {
    /// The most messages the ring holds at once.
    public let capacity: Int
    private let slots: UnsafeMutablePointer<Message>
    /// Messages sent and received since the start; their difference is what is held.
    private let sent = Atomic<Int>(0)
    private let received = Atomic<Int>(0)

    /// An empty ring of `capacity` slots (at least 1), allocated once here.
    public init(capacity: Int) {
        precondition(capacity > 0, "a ring holds something")
        self.capacity = capacity
        slots = .allocate(capacity: capacity)
    }

    deinit {
        while receive() != nil {}
        slots.deallocate()
    }

    /// Messages waiting to be received.
    public var count: Int { sent.load(ordering: .acquiring) - received.load(ordering: .acquiring) }

    /// Queues `message`; when the ring is full, hands it back. Sender's thread only.
    @discardableResult
    public func send(_ message: consuming Message) -> Message? {
        let head = sent.load(ordering: .relaxed)
        guard head - received.load(ordering: .acquiring) < capacity else { return message }
        (slots + head % capacity).initialize(to: message)
        sent.store(head + 1, ordering: .releasing)
        return nil
    }

    /// The oldest message, or nil when there is none. Receiver's thread only.
    public func receive() -> Message? {
        let tail = received.load(ordering: .relaxed)
        guard sent.load(ordering: .acquiring) > tail else { return nil }
        let message = (slots + tail % capacity).move()
        received.store(tail + 1, ordering: .releasing)
        return message
    }
}
