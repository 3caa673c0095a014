import Engine
import Foundation
import Testing

/// The session's events are numbered, the last `RoomSession.keptEvents`
/// are kept for a subscriber that comes back, and what is older is said.
struct EventLogTests {
    static func session() throws -> RoomSession {
        let tone = [Float](repeating: 0.1, count: Room.sampleRate / 10)
        let entry = SourceDescription(id: "tone", mode: .point, placement: .fixed(Position(-2, 0, 0)), loop: true)
        let scene = SceneDescription(file: "events", name: "Events", route: .headphones, sources: [entry])
        let room = Room(scene: scene, sources: [RoomSource(entry, audio: AudioBuffer(mono: tone))])
        return try RoomSession(room: room, devices: (microphoneIsCapture: false, outputIsPlayback: false), deviceRoute: nil)
    }

    /// The first `count` events a subscription hands over.
    static func first(_ count: Int, of subscription: EventSubscription) async -> [EngineEvent] {
        var taken: [EngineEvent] = []
        for await event in subscription.events {
            taken.append(event)
            if taken.count == count { break }
        }
        return taken
    }

    @Test func aSubscriberThatComesBackGetsWhatIsKeptAndIsToldWhatIsNot() async throws {
        let session = try Self.session()
        defer { session.close() }
        let live = try session.subscribe()
        let posted = RoomSession.keptEvents + 76
        for total in 1...posted { session.post(.underrun(total: total)) }

        let seen = await Self.first(posted, of: live)
        #expect(seen.map(\.seq) == Array(1...posted), "numbered from 1 without a gap, in order")

        // Back after seq 10: 11 to 76 are gone, 77 onwards are replayed.
        let resumed = try session.subscribe(since: 10)
        #expect(resumed.missed == 66 && resumed.replayed == RoomSession.keptEvents && resumed.lastSeq == posted)
        session.post(.serverLost)
        let replay = await Self.first(RoomSession.keptEvents + 1, of: resumed)
        #expect(replay.first?.seq == 77 && replay.last?.seq == posted + 1 && replay.last?.kind == .serverLost)

        // Nothing missed, nothing to replay; ahead of the log, refused.
        let current = try session.subscribe(since: posted + 1)
        #expect(current.missed == 0 && current.replayed == 0)
        #expect(throws: SessionError.self) { try session.subscribe(since: posted + 2) }

        // A seq of another stream (a session started anew) replays all that is kept.
        let elsewhere = try session.subscribe(since: 5, stream: "another")
        #expect(elsewhere.stream != "another" && elsewhere.replayed == RoomSession.keptEvents && elsewhere.missed == 77)
        #expect(try session.subscribe(since: 5, stream: elsewhere.stream).missed == 72)
    }

    @Test func onlyTheKindsAskedForAreHandedOver() async throws {
        let session = try Self.session()
        defer { session.close() }
        session.post(.underrun(total: 1))
        session.post(.serverLost)
        session.post(.serverReconnected(afterSeconds: 1.5))
        let filtered = try session.subscribe(since: 0, only: ["serverLost", "serverReconnected"])
        session.post(.underrun(total: 2))
        session.post(.serverLost)
        let events = await Self.first(3, of: filtered)
        #expect(events.map(\.name) == ["serverLost", "serverReconnected", "serverLost"])
        #expect(events.map(\.seq) == [2, 3, 5], "seq counts every event, so a filter shows as gaps")
        #expect(throws: SessionError.self) { try session.subscribe(only: ["serverlost"]) }
    }
}
