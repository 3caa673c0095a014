import AudioMeasurements
import Foundation
import Testing

/// Tools/roomctl.py, the Python client a game can copy, drives a live room:
/// what it asks for is measured on the sink, and its events resume where
/// it left off.
@Suite(.serialized, .enabled(if: PulseServer.isAvailable, "needs pulseaudio and pactl"))
struct ScriptedClientTests {
    @Test func thePythonClientMovesASourceAndResumesItsEvents() throws {
        let room = try LiveRoom(scene: .tone(at: [-2, 0, 0]))
        let status = try Self.json(room.roomctl("status"))
        #expect(status["scene"] as? String == "Test room")
        #expect((status["sources"] as? [[String: Any]])?.first?["id"] as? String == "tone")

        let before = try room.record("phones.monitor", seconds: 1)
        try room.roomctl("request", "move", #"{"id": "tone", "position": [2, 0, 0], "overMs": 100}"#)
        Thread.sleep(forTimeInterval: 0.4)
        let after = try room.record("phones.monitor", seconds: 1)
        let ildBefore = Measure.rmsDecibels(before.left) - Measure.rmsDecibels(before.right)
        let ildAfter = Measure.rmsDecibels(after.left) - Measure.rmsDecibels(after.right)
        print("roomctl move: ILD \(ildBefore) dB -> \(ildAfter) dB")
        #expect(ildBefore > 3 && ildAfter < -3)

        try room.roomctl("request", "gain", #"{"id": "tone", "db": -20}"#)
        Thread.sleep(forTimeInterval: 0.4)
        let quieter = try room.record("phones.monitor", seconds: 1)
        let drop = Measure.rmsDecibels(after.right) - Measure.rmsDecibels(quieter.right)
        print("roomctl gain -20: \(drop) dB quieter")
        #expect(abs(drop - 20) < 2)

        // A refusal is roomd's message and exit code 1.
        #expect(throws: (any Error).self) { try room.roomctl("request", "move", #"{"id": "nobody", "position": [0, 0, 0]}"#) }

        // A client that saw the first route change goes away; two more
        // happen; coming back with --since it gets exactly those, in order.
        try room.scenectl("route", "speakers")
        let first = try Self.events(room.roomctl("events", "--since", "0", "--only", "routeChanged", "--count", "1"))
        let seen = try #require(first.first?["seq"] as? Int)
        #expect(first.first?["to"] as? String == "speakers")
        try room.scenectl("route", "headphones")
        // Heard before the next change, which would otherwise overtake it
        // before its renderers play, and a change never heard is not told.
        _ = try room.roomctl("events", "--since", "\(seen)", "--only", "routeChanged", "--count", "1")
        try room.scenectl("route", "speakers")
        let missed = try Self.events(room.roomctl("events", "--since", "\(seen)", "--only", "routeChanged", "--count", "2"))
        let seqs = missed.compactMap { $0["seq"] as? Int }
        print("resumed after seq \(seen): \(missed.map { "\($0["seq"]!) \($0["to"]!)" })")
        #expect(missed.map { $0["to"] as? String } == ["headphones", "speakers"])
        #expect(seqs.count == 2 && seqs[0] > seen && seqs[1] > seqs[0])
        #expect(missed.allSatisfy { ($0["t"] as? Double ?? -1) >= 0 })
    }

    /// `roomctl.py events --follow` outlives its roomd: when another starts
    /// on the socket it reconnects, sees a stream of another name, and
    /// replays what that roomd kept, so no event of either is lost.
    @Test func theFollowerReconnectsToARoomdStartedAnew() throws {
        let daemon = try RoomDaemon()
        let folder = daemon.folder, socket = daemon.socket, scene = daemon.scene, environment = daemon.environment
        let followed = folder + "/followed.jsonl", notices = folder + "/follower.err"
        let follower = try ChildProcess.spawn("/usr/bin/python3", [LiveRoom.packageRoot.appendingPathComponent("Tools/roomctl.py").path,
                                                                   "--socket", socket, "events", "--follow", "--since", "0"],
                                              environment: environment, output: followed, errors: notices)
        defer { follower.signal(SIGTERM); follower.wait() }
        func routeChanges() -> [[String: Any]] {
            ((try? String(contentsOfFile: followed, encoding: .utf8)) ?? "").split(separator: "\n")
                .compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["event"] as? String == "routeChanged" }
        }
        func waitFor(_ count: Int) throws {
            let deadline = Date().addingTimeInterval(20)
            while routeChanges().count < count {
                guard Date() < deadline else { throw PulseServerError("the follower printed \(routeChanges().count) route changes, not \(count)") }
                Thread.sleep(forTimeInterval: 0.05)
            }
        }
        _ = try RawClient(path: socket).request(#"{"v":1,"verb":"route","args":{"route":"speakers"}}"#)
        try waitFor(1)
        daemon.stop()
        // Another roomd on the same socket, counting its events from 1 again.
        let again = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--socket", socket, "--output", folder + "/again.wav"],
                                           environment: environment, output: folder + "/again.out", errors: folder + "/again.err")
        defer { again.signal(SIGTERM); again.wait() }
        let deadline = Date().addingTimeInterval(10)
        while (try? RawClient(path: socket).request(#"{"v":1,"verb":"status"}"#)) == nil {
            guard again.isRunning, Date() < deadline else { throw PulseServerError("the second roomd did not start") }
            Thread.sleep(forTimeInterval: 0.05)
        }
        _ = try RawClient(path: socket).request(#"{"v":1,"verb":"route","args":{"route":"speakers"}}"#)
        try waitFor(2)
        let changes = routeChanges()
        let said = (try? String(contentsOfFile: notices, encoding: .utf8)) ?? ""
        print("follower: \(changes.map { "seq \($0["seq"]!) to \($0["to"]!)" }); said: \(said.split(separator: "\n"))")
        #expect(changes.map { $0["to"] as? String } == ["speakers", "speakers"])
        #expect(said.contains("roomd went; reconnecting") && said.contains("started anew"))
    }

    /// A `load` starts the new room's timeline at 0: its events carry
    /// `epoch` 1, after `sceneLoaded`, and every event of the old room
    /// comes before it; `seq` goes on counting.
    @Test func aLoadMarksTheNewRoomsEpoch() throws {
        let daemon = try RoomDaemon()
        let watcher = try RawClient(path: daemon.socket)
        let answer = try watcher.request(#"{"v":1,"verb":"events","args":{"only":["routeChanged","sceneLoaded"]}}"#)
        #expect((answer["result"] as? [String: Any])?["stream"] is String)
        let control = try RawClient(path: daemon.socket)
        for request in [#"{"v":1,"verb":"route","args":{"route":"speakers"}}"#,
                        #"{"v":1,"verb":"load","args":{"path":"\#(daemon.scene)"}}"#,
                        #"{"v":1,"verb":"route","args":{"route":"headphones"}}"#] {
            #expect(try control.request(request)["ok"] as? Bool == true, "\(request)")
        }
        var events: [[String: Any]] = []
        while events.count < 3, let line = watcher.readLine() {
            if let event = RawClient.object(line)?["event"] as? [String: Any] { events.append(event) }
        }
        print("around the load: \(events)")
        #expect(events.map { $0["event"] as? String } == ["routeChanged", "sceneLoaded", "routeChanged"])
        #expect(events.map { $0["epoch"] as? Int ?? 0 } == [0, 1, 1])
        #expect(events[1]["t"] as? Double == 0, "the new room's timeline starts at 0")
        let seqs = events.compactMap { $0["seq"] as? Int }
        #expect(seqs == seqs.sorted() && Set(seqs).count == 3)
        let status = try control.request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any]
        #expect(status?["epoch"] as? Int == 1 && (status?["lastEventSeq"] as? Int ?? 0) >= seqs.last ?? 0)
    }

    /// A `set` of a key that would make another source (which the schema
    /// has no place for) is refused with the verb to use, never answered ok,
    /// and the source plays on where it was.
    @Test func aKeyThatWouldMakeAnotherSourceIsRefused() throws {
        let daemon = try RoomDaemon(wellFormedRequests: false)
        let control = try RawClient(path: daemon.socket)
        for (key, value, advice) in [("position", "[1, 0, 0]", "move it"), ("file", "other.wav", "remove the source and add it again")] {
            let reply = try control.request(#"{"v":1,"verb":"set","args":{"id":"tone","key":"\#(key)","value":"\#(value)"}}"#)
            print("set \(key): \(reply["error"] ?? "ok")")
            #expect(reply["ok"] as? Bool == false)
            #expect((reply["error"] as? String ?? "").contains("tone.\(key): \"\(value)\": does not change while the source plays: \(advice)"))
        }
        let status = try control.request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any]
        let tone = (status?["sources"] as? [[String: Any]])?.first
        #expect(tone?["position"] as? [Double] == [-2, 0, 0])
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    static func events(_ text: String) throws -> [[String: Any]] {
        try text.split(separator: "\n").map { try json(String($0)) }
    }
}

extension LiveRoom {
    /// Runs Tools/roomctl.py against this room's socket; throws when it exits with an error.
    @discardableResult
    func roomctl(_ arguments: String...) throws -> String {
        try server.run("/usr/bin/python3", [Self.packageRoot.appendingPathComponent("Tools/roomctl.py").path, "--socket", socket] + arguments)
    }
}
