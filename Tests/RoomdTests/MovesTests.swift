import AudioMeasurements
import Foundation
import Testing

/// `moves`, a game's tick: many sources glide from one request, all or
/// nothing, and the daemon answers a crowd's tick quickly.
@Suite(.serialized)
struct MovesTests {
    /// Two tones that the sink's recording tells apart by their pitch, on
    /// the left; and a source played as it is, silent, which has no position.
    static let twoTones = LiveRoom.Scene(text: """
        version: 1
        name: Two tones
        distance: { model: inverse, reference: 1, maximum: 50, rolloff: 1 }
        sources:
          - { id: low, file: tone.wav, mode: point, position: [-2, 0, 0], loop: true, reverbBlend: 0 }
          - { id: high, file: tone.wav, mode: point, position: [-2, 0, -1], loop: true, rate: 2, reverbBlend: 0 }
          - { id: music, file: tone.wav, mode: bypass, loop: true, playing: false }

        """)

    /// The tones' pitches: the file's 1 kHz, and played at twice its rate.
    static let pitches = (low: 1_000.0, high: 2_000.0)

    /// One `moves` takes both tones to the right, each heard there; one
    /// with an id the room lacks is refused, and both stay where they are.
    @Test(.enabled(if: PulseServer.isAvailable, "needs pulseaudio and pactl"))
    func bothSourcesCrossOverAndARequestWithABadIdMovesNeither() throws {
        let room = try LiveRoom(scene: Self.twoTones)
        let before = Self.levelDifferences(try room.record("phones.monitor", seconds: 1))
        let answer = try room.scenectl("moves", "--over", "100", "low=2,0,0", "high=2,0,-1").trimmingCharacters(in: .whitespacesAndNewlines)
        Thread.sleep(forTimeInterval: 0.4)
        let moved = Self.levelDifferences(try room.record("phones.monitor", seconds: 1))
        print("moves: ILD left minus right, low \(before.low) -> \(moved.low) dB, high \(before.high) -> \(moved.high) dB; scenectl said \(answer)")
        #expect(answer.contains("moved 2"))
        #expect(before.low > 3 && before.high > 3, "both start on the left")
        #expect(moved.low < -3 && moved.high < -3, "both are heard on the right")

        let refusal = try RawClient(path: room.socket)
            .request(#"{"v":1,"verb":"moves","args":{"sources":{"low":[-2,0,0],"high":[-2,0,-1],"nobody":[0,0,-1]}}}"#)
        Thread.sleep(forTimeInterval: 0.4)
        let kept = Self.levelDifferences(try room.record("phones.monitor", seconds: 1))
        print("refused moves: \(refusal["error"] ?? "ok"); ILD low \(kept.low) dB, high \(kept.high) dB")
        #expect(refusal["ok"] as? Bool == false)
        #expect((refusal["error"] as? String)?.hasPrefix(#"moves: sources.nobody: [0, 0, -1]: no source "nobody" in this room"#) == true)
        #expect(kept.low < -3 && kept.high < -3, "neither went back to the left")
        #expect(Self.positions(try room.status()) == ["low": [2, 0, 0], "high": [2, 0, -1]])
    }

    /// Every kind of bad entry is refused naming the id, the value and why,
    /// the first in id order, counting the others; nothing moves.
    @Test func refusalsNameTheIdTheValueAndWhyAndMoveNothing() throws {
        let daemon = try RoomDaemon(scene: Self.twoTones, wellFormedRequests: false)
        let client = try RawClient(path: daemon.socket)
        let cases: [(sources: String, error: String)] = [
            (#"{"low":[2,0,0],"bart":[1,2,3]}"#,
             #"moves: sources.bart: [1, 2, 3]: no source "bart" in this room; it has low, high, music; nothing moved"#),
            (#"{"low":[2,0,0],"music":[1,0,0]}"#,
             #"moves: sources.music: [1, 0, 0]: source "music" is played as it is (passthrough): it has no position to move; nothing moved"#),
            (#"{"low":[2,0,0],"zed":[0,0,0],"bart":[0,0,0]}"#,
             #"moves: sources.bart: [0, 0, 0]: no source "bart" in this room; it has low, high, music (and 1 more refused); nothing moved"#),
            (#"{"low":[2,0,20000],"high":[2,0]}"#,
             "moves: sources.high: [2, 0]: expected [x, y, z] in metres, each within 10 km (and 1 more refused); nothing moved"),
            (#"{"low":[2,0,0],"high":[true,0,0]}"#,
             "moves: sources.high: [1, 0, 0]: expected [x, y, z] in metres, each within 10 km; nothing moved"),
            (#"{"low":"2,0,0"}"#, "moves: sources.low: 2,0,0: expected [x, y, z] in metres, each within 10 km; nothing moved"),
            ("{}", "moves: sources: [:]: expected an object of source ids to [x, y, z], at least one"),
            (#"[[2,0,0]]"#, "moves: sources: [[2, 0, 0]]: expected an object of source ids to [x, y, z], at least one"),
        ]
        for (sources, error) in cases {
            let reply = try client.request(#"{"v":1,"verb":"moves","args":{"sources":\#(sources)}}"#)
            #expect(reply["ok"] as? Bool == false)
            #expect(reply["error"] as? String == error, "\(sources)")
        }
        let late = try client.request(#"{"v":1,"verb":"moves","args":{"sources":{"low":[2,0,0]},"overMs":700000}}"#)
        #expect(late["error"] as? String == "moves: overMs: 700000: out of range 0.0...600000.0")
        let status = try client.request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any] ?? [:]
        #expect(Self.positions(status) == ["low": [-2, 0, 0], "high": [-2, 0, -1]], "nothing moved")

        let done = try client.request(#"{"v":1,"verb":"moves","args":{"sources":{"low":[1,0,-3],"high":[0,2,1]}}}"#)
        #expect((done["result"] as? [String: Any])?["moved"] as? Int == 2)
        let after = try client.request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any] ?? [:]
        #expect(Self.positions(after) == ["low": [1, 0, -3], "high": [0, 2, 1]])
    }

    /// `scenectl moves` takes ID=X,Y,Z entries, or reads them from standard
    /// input after `-`; a malformed one is a usage error (exit 2) that sends
    /// nothing, and roomd's refusal is its message and exit 1.
    @Test func scenectlMovesTakesEntriesFromTheCommandLineOrStandardInput() throws {
        let daemon = try RoomDaemon(scene: Self.twoTones)
        /// Runs scenectl moves with `arguments` (and `input` on standard input): its exit status, output and errors.
        func moves(_ arguments: String..., input: String? = nil) throws -> (status: Int32, said: String) {
            let stdin = daemon.folder + "/moves.in", output = daemon.folder + "/moves.out"
            try (input ?? "").write(toFile: stdin, atomically: true, encoding: .utf8)
            let child = try ChildProcess.spawn(LiveRoom.product("scenectl"), ["moves", "--socket", daemon.socket] + arguments,
                                               environment: daemon.environment, input: stdin, output: output, errors: output + ".errors")
            let status = child.wait()
            let said = try String(contentsOfFile: output, encoding: .utf8) + String(contentsOfFile: output + ".errors", encoding: .utf8)
            return (status, said.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        let usage = [try moves("low=1,0,0", "high=2,0"), try moves("low=1,0,0", "low=2,0,0"), try moves("low=1,0,nan"),
                     try moves("--over=-5", "low=1,0,0")]
        print("usage errors: \(usage.map(\.said))")
        #expect(usage.allSatisfy { $0.status == 2 })
        #expect(usage[0].said.contains("high=2,0: expected ID=X,Y,Z in metres, each within 10 km"))
        #expect(usage[1].said.contains("low=2,0,0: source low is given twice"))
        #expect(usage[2].said.contains("low=1,0,nan: expected ID=X,Y,Z"))
        #expect(usage[3].said.contains("--over -5.0: expected 0 to 600000 ms"))

        let refused = try moves("low=1,0,0", "nobody=0,0,-1")
        #expect(refused.status == 1)
        #expect(refused.said == #"scenectl: moves: sources.nobody: [0, 0, -1]: no source "nobody" in this room; it has low, high, music; nothing moved"#)
        let status = try RawClient(path: daemon.socket).request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any] ?? [:]
        #expect(Self.positions(status) == ["low": [-2, 0, 0], "high": [-2, 0, -1]], "nothing moved")

        let piped = try moves("--over", "0", "-", input: "low=3,0,-1\n  high=-3,1,0.5 \n")
        #expect(piped.status == 0 && piped.said == "moved 2", "\(piped)")
        let after = try RawClient(path: daemon.socket).request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any] ?? [:]
        #expect(Self.positions(after) == ["low": [3, 0, -1], "high": [-3, 1, 0.5]])
    }

    /// A tick of a crowd of 1024 (about 40 KB a line) at 30 a second: every
    /// answer is ok, quickly, and the sources end where the last tick put them.
    @Test func aCrowdsTickIsOneCheapRequest() throws {
        let count = 1_024
        let daemon = try RoomDaemon(scene: Self.crowd(count))
        let client = try RawClient(path: daemon.socket)
        var times: [Double] = []
        var last: [Int: [Double]] = [:]
        for tick in 0..<30 {
            let turn = Double(tick) / 30
            last = Dictionary(uniqueKeysWithValues: (0..<count).map { index in
                let angle = turn + Double(index)
                return (index, [(5 * sin(angle) * 1_000).rounded() / 1_000, 0, (-5 * cos(angle) * 1_000).rounded() / 1_000])
            })
            let entries = last.map { index, position in "\"s\(index)\":[\(position.map { "\($0)" }.joined(separator: ","))]" }
            let line = #"{"v":1,"verb":"moves","args":{"overMs":33,"sources":{"# + entries.joined(separator: ",") + "}}}"
            let start = Date()
            let reply = try client.request(line)
            let took = Date().timeIntervalSince(start)
            times.append(took)
            #expect((reply["result"] as? [String: Any])?["moved"] as? Int == count, "\(reply["error"] ?? "")")
            Thread.sleep(forTimeInterval: max(0, 1.0 / 30 - took))
        }
        times.sort()
        print(String(format: "moves of %d sources: median %.2f ms, max %.2f ms over %d ticks", count, 1_000 * times[times.count / 2],
                     1_000 * times.last!, times.count))
        #expect(times[times.count / 2] < 0.1, "a tick is answered well within its 33 ms, even in a debug build")
        Thread.sleep(forTimeInterval: 0.1)
        let status = try client.request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any] ?? [:]
        let positions = Self.positions(status)
        #expect(positions.count == count && (0..<count).allSatisfy { positions["s\($0)"] == last[$0] }, "every source is where the last tick put it")
    }

    /// `count` quiet points in a ring around the listener.
    static func crowd(_ count: Int) -> LiveRoom.Scene {
        let sources = (0..<count).map { index in
            let angle = 2 * Double.pi * Double(index) / Double(count)
            return "  - { id: s\(index), file: tone.wav, mode: point, position: [\(5 * sin(angle)), 0, \(-5 * cos(angle))], loop: true, gain: -40 }"
        }
        return LiveRoom.Scene(text: "version: 1\nname: Crowd\nsources:\n" + sources.joined(separator: "\n") + "\n")
    }

    /// Each tone's level at the left ear minus the right, in dB.
    static func levelDifferences(_ recording: (left: [Float], right: [Float])) -> (low: Double, high: Double) {
        func difference(_ pitch: Double) -> Double { toneDecibels(recording.left, pitch) - toneDecibels(recording.right, pitch) }
        return (difference(pitches.low), difference(pitches.high))
    }

    /// The level in dB of the sine at `frequency` in `samples`: one bin of
    /// a Fourier transform, so the other tone does not count.
    static func toneDecibels(_ samples: [Float], _ frequency: Double) -> Double {
        var real = 0.0, imaginary = 0.0
        for (index, sample) in samples.enumerated() {
            let phase = 2 * Double.pi * frequency * Double(index) / 48_000
            real += Double(sample) * cos(phase)
            imaginary -= Double(sample) * sin(phase)
        }
        return Measure.decibels(2 * (real * real + imaginary * imaginary).squareRoot() / Double(samples.count))
    }

    /// The positions `status` gives, by source id.
    static func positions(_ status: [String: Any]) -> [String: [Double]] {
        var positions: [String: [Double]] = [:]
        for source in status["sources"] as? [[String: Any]] ?? [] {
            if let id = source["id"] as? String, let position = source["position"] as? [Double] { positions[id] = position }
        }
        return positions
    }
}
