import AudioMeasurements
import Foundation
import Testing

/// roomd's render path allocates and frees nothing: `roombench live`
/// renders the tavern through LiveRoom.render in device-sized pieces, with
/// the microphone pushed and the voice bus on, while a control thread
/// steers it as scenectl would (forced routes included, whose new renderers
/// open OpenAL devices meanwhile) and eight remote talkers of a Mumble room
/// fed by hand join, talk in Opus packets and leave every 4 s (decoded on
/// the room's talker thread, played as streamed voices), and counts the
/// render thread's heap allocations, frees and mutex locks. With the route
/// steady it waits for no lock at all; a route change makes OpenAL devices
/// on another thread under OpenAL 1.19's global list lock, which the render
/// thread takes to render, so the waits of that run are printed, not asserted.
///
/// The count is of the release build, the one that ships: a debug build
/// allocates in code the optimiser would keep on the stack. Tools/test.sh
/// builds it before the tests.
struct RenderAllocationTests {
    static let root = LiveRoom.packageRoot

    /// Runs `roombench live` over the tavern with `arguments`; returns its figures.
    static func live(_ arguments: [String]) throws -> (figures: [String: Any], status: Int32) {
        let bench = Self.root.appendingPathComponent(".build/release/roombench").path
        let build = "run `swift build -c release --product roombench` first (Tools/test.sh does)"
        try #require(FileManager.default.isExecutableFile(atPath: bench), "no release roombench: \(build)")
        let built = try #require(Self.modified(bench))
        // What it is built from: every target but the two other programs.
        let folders = try FileManager.default.contentsOfDirectory(atPath: Self.root.appendingPathComponent("Sources").path)
            .filter { $0 != "scenectl" && $0 != "roomd" }.map { "Sources/\($0)" } + ["Tests/AudioMeasurements"]
        let newest = folders.flatMap { folder -> [String] in
            let path = Self.root.appendingPathComponent(folder).path
            return [path] + (FileManager.default.enumerator(atPath: path)?.compactMap { "\(path)/\($0)" } ?? [])
        }.compactMap(Self.modified).max() ?? .distantPast
        try #require(built >= newest, "the release roombench is older than its sources: \(build)")
        // Its output and errors go to files, so that a crash's backtrace is in the failure.
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("roombench-\(UUID().uuidString)").path
        defer { for file in [base + ".json", base + ".err"] { try? FileManager.default.removeItem(atPath: file) } }
        let child = try ChildProcess.spawn(bench, ["live", "--blocks", "10000", "--speed", "4", "--json",
                                                   "--scene", Self.root.appendingPathComponent("Scenes/tavern.yaml").path] + arguments,
                                           environment: ProcessInfo.processInfo.environment, output: base + ".json", errors: base + ".err")
        let status = child.wait()
        let data = (try? Data(contentsOf: URL(fileURLWithPath: base + ".json"))) ?? Data()
        let said = (try? String(contentsOfFile: base + ".err", encoding: .utf8)) ?? ""
        let figures = try #require(try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                                   "roombench live exited \(status) and printed: \(String(decoding: data, as: UTF8.self))\n\(said.prefix(4_000))")
        print("roombench live \(arguments.joined(separator: " ")): \(figures)")
        return (figures, status)
    }

    @Test func theRenderThreadAllocatesAndFreesNothingWhileTheRoomIsSteered() throws {
        let (figures, status) = try Self.live([])
        let events = figures["events"] as? [String: Int] ?? [:]
        #expect(figures["blocks"] as? Int ?? 0 >= 10_000)
        #expect(figures["allocations"] as? Int == 0, "heap allocations on the render thread")
        #expect(figures["frees"] as? Int == 0, "heap frees on the render thread")
        #expect(figures["locks"] as? Int ?? 0 > 0, "the lock counter saw OpenAL's locks")
        #expect(status == 0)
        // The steering reached the room: glides, crossfades to new renderers, the voice bus.
        #expect(figures["commands"] as? Int ?? 0 > 1_000 && figures["refused"] as? Int == 0)
        #expect(events["routeChanged"] ?? 0 >= 1, "forced routes crossfaded in")
        #expect(events["echoCancellation"] ?? 0 >= 2 && events["duckingChanged"] ?? 0 >= 1)
        #expect(events["speechStarted"] ?? 0 >= 1 && events["mutedSpeechStarted"] ?? 0 >= 1, "the uplink heard its talker")
        #expect(figures["outputDecibels"] as? Double ?? -.infinity > -50, "the room plays")
        // Eight remote talkers joined, talked and left every 4 s of the room's 100: every one placed, decoded and heard.
        let joins = figures["remoteJoins"] as? Int ?? 0
        #expect(figures["remoteTalkers"] as? Int == 8)
        #expect(joins >= 8 * 24 && figures["remoteLeaves"] as? Int == joins, "the talkers joined and left again and again")
        #expect(events["talkerJoined"] == joins && events["talkerLeft"] == joins, "the room placed every talker that joined")
        #expect(events["remoteSpeechStarted"] ?? 0 >= joins - 8 && events["remoteSpeechEnded"] ?? 0 >= joins - 8,
                "their packets were decoded, each spurt to its end")
        let talking = figures["remoteTalkingDecibels"] as? Double ?? -200, silent = figures["remoteSilentDecibels"] as? Double ?? -200
        #expect(talking > silent + 6, "their voices reached the output: \(talking) dBFS while they talk, \(silent) dBFS while none does")
    }

    /// Sources of every kind join, change how they render and leave, remote
    /// talkers come and go, and the render thread never waits: no device is
    /// made while it renders.
    @Test func withTheRouteSteadyTheRenderThreadWaitsForNoLock() throws {
        let (figures, status) = try Self.live(["--steady-route"])
        #expect(status == 0)
        #expect(figures["blocks"] as? Int ?? 0 >= 10_000)
        #expect(figures["allocations"] as? Int == 0 && figures["frees"] as? Int == 0)
        #expect(figures["locks"] as? Int ?? 0 > 0, "the lock counter saw OpenAL's locks")
        #expect(figures["contendedLocks"] as? Int == 0, "lock waits on the render thread")
        #expect(figures["commands"] as? Int ?? 0 > 1_000 && figures["refused"] as? Int == 0)
        #expect(figures["renderersMade"] as? Int == 0, "no change made new renderers")
        #expect(figures["remoteJoins"] as? Int ?? 0 >= 8 * 24, "remote talkers came and went")
    }

    static func modified(_ path: String) -> Date? {
        (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date
    }
}
