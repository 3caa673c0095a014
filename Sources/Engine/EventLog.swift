import Foundation

/// What a subscriber to the room's events gets: the events it missed that
/// are still kept, then every new one, as one stream.
public struct EventSubscription: Sendable {
    /// The events, oldest first; it ends when the subscriber stops listening.
    public let events: AsyncStream<EngineEvent>
    /// The `seq` of the last event published before the subscription, 0 for none.
    public let lastSeq: Int
    /// How many kept events the stream replays first.
    public let replayed: Int
    /// How many events after `since` are no longer kept and cannot be replayed.
    public let missed: Int
    /// The stream's name, new each time a session starts: a client that
    /// comes back to another stream than it left missed all of it.
    public let stream: String
}

/// Numbers the room's events, keeps the last `keptEvents` of them for
/// subscribers that come back, and hands each to every subscriber whose
/// filter takes it. A subscriber that falls behind loses its oldest
/// events, never the daemon's memory; the gap shows in `seq`.
final class EventLog: @unchecked Sendable {
    /// The events kept for `since`: minutes of a busy room's voice events.
    static let keptEvents = 1_024

    private struct Subscriber {
        let continuation: AsyncStream<EngineEvent>.Continuation
        let only: Set<String>?
    }

    private let lock = NSLock()
    private var subscribers: [UUID: Subscriber] = [:]
    private var kept: [EngineEvent] = []
    /// Where the oldest kept event is in `kept`, once it is full.
    private var oldest = 0
    private var lastSeq = 0
    /// This log's name; `seq` counts within it.
    let stream = String(UUID().uuidString.prefix(8)).lowercased()

    /// The `seq` the last event got.
    var lastPublished: Int { lock.withLock { lastSeq } }

    /// Subscribes to the events after `since` (all kept ones for 0, none
    /// for nil), of the kinds in `only` (all for nil). A `since` counted in
    /// another `stream` (a session that has ended) replays all that is kept.
    func subscribe(since: Int?, stream seen: String? = nil, only: Set<String>?) throws -> EventSubscription {
        let since = seen.map { $0 == stream ? since : 0 } ?? since
        if let only, let unknown = only.subtracting(EngineEvent.names).sorted().first {
            throw SessionError.refused("events: only: \"\(unknown)\": no such event; the events are \(EngineEvent.names.joined(separator: ", "))")
        }
        // Room for the whole replay and as much again of new events.
        let (events, continuation) = AsyncStream<EngineEvent>.makeStream(bufferingPolicy: .bufferingNewest(2 * Self.keptEvents))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in self?.lock.withLock { _ = self?.subscribers.removeValue(forKey: id) } }
        return try lock.withLock {
            if let since, since > lastSeq {
                throw SessionError.refused("events: since: \(since): the last event is \(lastSeq); "
                    + "a roomd started anew counts from 1 again: pass the stream the events came from, or no since")
            }
            let history = kept[oldest...] + kept[..<oldest]
            var replayed = 0, missed = 0
            if let since {
                let firstKept = history.first?.seq ?? lastSeq + 1
                missed = max(0, firstKept - since - 1)
                for event in history where event.seq > since && only.map({ $0.contains(event.name) }) ?? true {
                    continuation.yield(event)
                    replayed += 1
                }
            }
            subscribers[id] = Subscriber(continuation: continuation, only: only)
            return EventSubscription(events: events, lastSeq: lastSeq, replayed: replayed, missed: missed, stream: stream)
        }
    }

    /// Numbers `event`, keeps it and hands it to the subscribers that want it.
    /// Under the lock, so every subscriber sees the events in `seq` order,
    /// its replay first (yielding only buffers).
    func publish(_ event: EngineEvent) {
        var event = event
        lock.withLock {
            lastSeq += 1
            event.seq = lastSeq
            if kept.count < Self.keptEvents {
                kept.append(event)
            } else {
                kept[oldest] = event
                oldest = (oldest + 1) % Self.keptEvents
            }
            for subscriber in subscribers.values where subscriber.only.map({ $0.contains(event.name) }) ?? true {
                subscriber.continuation.yield(event)
            }
        }
    }
}
