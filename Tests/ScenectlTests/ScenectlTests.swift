import AudioCore
import AudioMeasurements
import Devices
import Foundation
import Testing

/// Runs the built `scenectl` the way a person would.
struct Scenectl {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String

        /// The summary `--json` printed.
        func summary() throws -> [String: Any] {
            try JSONSerialization.jsonObject(with: Data(stdout.utf8)) as! [String: Any]
        }
    }

    static var executable: URL {
        // The test binary sits beside the products it was built with.
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("scenectl")
    }

    static func run(_ arguments: [String]) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile()
        let stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// A folder with a small valid scene: a tone on the right and a bed.
final class RenderFolder {
    let path = NSTemporaryDirectory() + "scenectl-tests-" + UUID().uuidString
    var scene: String { path + "/room.yaml" }

    init() throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let tone = Signals.sine(frequency: 440, frames: 48_000, amplitude: 0.5)
        try write("tone.wav", AudioBuffer(mono: tone), rate: 48_000)
        try write("air.wav", AudioBuffer(channelCount: 4, interleaved: tone.flatMap { [$0 * 0.3, 0, 0, $0 * 0.3] }), rate: 48_000)
        try write("slow.wav", AudioBuffer(mono: Signals.sine(frequency: 300, frames: 22_050, amplitude: 0.2, sampleRate: 22_050)),
                  rate: 22_050)
        try """
        name: Test room
        duration: 3
        sources:
          - id: tone
            file: tone.wav
            position: [2, 0, -1]
            loop: true
          - id: air
            file: air.wav
            mode: bed
            gain: -6
          - id: voice
            file: slow.wav
            position: [-1, 0, -1]
            gain: -20
        """.write(toFile: scene, atomically: true, encoding: .utf8)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func write(_ name: String, _ buffer: AudioBuffer, rate: Int) throws {
        let writer = try AudioFileWriter(path: "\(path)/\(name)", format: .wavFloat, channelCount: buffer.channelCount, sampleRate: rate)
        try writer.write(buffer)
        try writer.close()
    }
}

@Suite struct RenderCommandTests {
    @Test func rendersTheScenesDurationAndSummarisesIt() throws {
        let folder = try RenderFolder()
        let out = folder.path + "/out.wav"
        let result = try Scenectl.run(["render", folder.scene, "--out", out])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("route: headphones") && result.stdout.contains("algorithm: hrtf"), "\(result.stdout)")
        #expect(result.stdout.contains("tone") && result.stdout.contains("air") && result.stdout.contains("dBFS"))
        #expect(result.stdout.contains("slow.wav, 1 ch, 22050 Hz (resampled to 48000 Hz)"), "\(result.stdout)")
        let audio = try AudioFileReader.read(path: out)
        #expect(audio.buffer.channelCount == 2 && audio.buffer.frameCount == 3 * 48_000 && audio.sampleRate == 48_000)
        // The tone is on the right; at 440 Hz the head shadows it only a little.
        #expect(Measure.levelDifference(left: audio.buffer.channel(0), right: audio.buffer.channel(1)) > 1)
    }

    @Test func jsonSummaryReportsTheLevelsInTheFile() throws {
        let folder = try RenderFolder()
        let out = folder.path + "/out.wav"
        let result = try Scenectl.run(["render", folder.scene, "--out", out, "--seconds", "2", "--route", "speakers", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try result.summary()
        #expect(summary["algorithm"] as? String == "panning" && summary["route"] as? String == "speakers")
        #expect(summary["seconds"] as? Double == 2)
        let channels = summary["channels"] as! [[String: Any]]
        let audio = try AudioFileReader.read(path: out).buffer
        for (index, channel) in channels.enumerated() {
            let samples = audio.channel(index)
            let peak = Measure.decibels(Double(samples.map(abs).max()!))
            #expect(abs((channel["peakDBFS"] as! Double) - peak) < 0.01)
            #expect(abs((channel["rmsDBFS"] as! Double) - Measure.rmsDecibels(samples)) < 0.01)
        }
        #expect((summary["sources"] as! [[String: Any]]).map { $0["id"] as! String } == ["tone", "air", "voice"])
    }

    @Test(arguments: [("out.flac", [String]()), ("out16.wav", ["--format", "wav-16"])])
    func writesFlacAnd16BitWav(name: String, options: [String]) throws {
        let folder = try RenderFolder()
        let out = folder.path + "/" + name
        let result = try Scenectl.run(["render", folder.scene, "--out", out, "--seconds", "1"] + options)
        #expect(result.status == 0, "\(result.stderr)")
        let audio = try AudioFileReader.read(path: out)
        #expect(audio.buffer.channelCount == 2 && audio.buffer.frameCount == 48_000)
        #expect(Measure.rmsDecibels(audio.buffer.channel(1)) > -40)
    }

    @Test(arguments: [("surround51", ["left", "right", "center", "LFE", "side left", "side right"]),
                      ("surround71", ["left", "right", "center", "LFE", "back left", "back right", "side left", "side right"]),
                      ("mono", ["mono"])])
    func everyRouteWritesItsChannels(route: String, labels: [String]) throws {
        let folder = try RenderFolder()
        let out = folder.path + "/out.wav"
        let result = try Scenectl.run(["render", folder.scene, "--out", out, "--seconds", "1", "--route", route, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try result.summary()
        let channels = summary["channels"] as! [[String: Any]]
        #expect(channels.map { $0["name"] as! String } == labels)
        // The source is ahead and to the right: the right front channel carries it.
        #expect((channels[labels.firstIndex(of: labels.count == 1 ? "mono" : "right")!]["rmsDBFS"] as? Double ?? -200) > -40)
        #expect(try AudioFileReader.read(path: out).buffer.channelCount == labels.count)
    }

    @Test func aRouteChangeIsTakenAndReported() throws {
        let folder = try RenderFolder()
        let out = folder.path + "/out.wav"
        let result = try Scenectl.run(["render", folder.scene, "--out", out, "--seconds", "2", "--route-change", "1:speakers", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try result.summary()
        #expect(summary["routeChanges"] as? [String] == ["1.00 s -> speakers (panning)"])
        #expect(summary["algorithm"] as? String == "hrtf")
        let audio = try AudioFileReader.read(path: out).buffer
        #expect(audio.frameCount == 96_000 && Measure.rmsDecibels(Array(audio.channel(1)[60_000...])) > -40)
    }

    @Test func anInvalidSceneExitsWith2AndRendersNothing() throws {
        let folder = try RenderFolder()
        try "sources:\n  - id: tone\n    file: tone.wav\n    position: [2, 0, .nan]\n".write(toFile: folder.scene, atomically: true, encoding: .utf8)
        let out = folder.path + "/out.wav"
        let result = try Scenectl.run(["render", folder.scene, "--out", out])
        #expect(result.status == 2)
        #expect(result.stderr.contains("room.yaml:4: sources[0].position.z: \".nan\": must be a finite number"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test(arguments: [
        (["--seconds=-1"], "'-1' is invalid for '--seconds <seconds>': expected more than 0 and at most 3600 s"),
        (["--seconds", "nan"], "'nan' is invalid for '--seconds <seconds>': not a number of seconds, such as 90 or 2.5"),
        (["--seconds", "0x1p3"], "'0x1p3' is invalid for '--seconds <seconds>': not a number of seconds"),
        (["--seconds", "1e-400"], "'1e-400' is invalid for '--seconds <seconds>': less than one sample at 48000 Hz"),
        (["--seconds", "3601"], "'3601' is invalid for '--seconds <seconds>': expected more than 0 and at most 3600 s"),
        (["--seconds", "1e309"], "'1e309' is invalid for '--seconds <seconds>': expected more than 0 and at most 3600 s"),
        (["--prompt", "2e14:welcome"], "\"2e14\" is later than any render reaches (3600 s)"),
        (["--route-change", "1e309:speakers"], "\"1e309\" is later than any render reaches (3600 s)"),
        (["--route", "car"], "car"),
        (["--format", "flac"], "does not fit the file name"),
        (["--route-change", "1:surround51"], "a file keeps its channels"),
        (["--route-change", "9:speakers", "--seconds", "2"], "is not inside the 2.0 s rendered"),
        // The scene's own 3 s, and a change that rounds to the last frame's end.
        (["--route-change", "3:speakers"], "--route-change: a route change at 3.0 s is not inside the 3.0 s rendered"),
        (["--route-change", "0.0099999:speakers", "--seconds", "0.01"], "--route-change: a route change at 0.0099999 s is not inside the 0.01 s rendered"),
        // One block takes one change: a second would slip to a later block, or off the end.
        (["--route-change", "1.002:speakers", "--route-change", "1.001:headphones"],
         "--route-change: route changes at 1.001 s and at 1.002 s fall in one of the engine's 10 ms blocks, which takes one route change a block"),
        (["--route-change", "1:speakers", "--route-change", "1:speakers"], "route changes at 1.0 s and at 1.0 s fall in one"),
        (["--route-change", "soon:speakers"], "'soon:speakers' is invalid for '--route-change <route-change>': \"soon\" is not a time"),
        (["--route-change", "1:nosuch"], "\"nosuch\" is not a route; the routes are auto, headphones,"),
        (["--route-change", "0:speakers"], "a route at 0 s is the starting route: give it as --route"),
        (["--route-change", "5e-324:speakers"], "a route at 5e-324 s is the starting route: give it as --route"),
        (["--route-change", "0x1p0:speakers"], "\"0x1p0\" is not a time"),
        (["--route-change", "speakers"], "expected SECONDS:ROUTE, such as 5:speakers"),
        (["--prompt=-1:welcome"], "\"-1\" is not a time: expected seconds on the room's timeline, 0 or more"),
        (["--prompt", "3:"], "expected SECONDS:PROMPT, such as 3.5:welcome"),
        (["--prompt", "2.995:welcome", "--seconds", "3"], "--prompt at 2.995 s, which starts at 3.00 s (prompts start on the engine's 10 ms blocks), is not inside the 3.0 s rendered"),
        (["--memory-budget", "1"], "1 byte is less than the smallest budget, 1 MiB"),
        (["--memory-budget", "lots"], "expected a size such as 2G, 512M, 1.5GiB or a number of bytes"),
        (["--seconds", "0.00001"], "'0.00001' is invalid for '--seconds <seconds>': less than one sample at 48000 Hz; nothing would be rendered"),
        (["--seconds", "-1"], "'-1' is invalid for '--seconds <seconds>': expected more than 0 and at most 3600 s"),
        (["--prompt", "-1:welcome"], "\"-1\" is not a time"),
        (["--memory-budget", "9999999999G"], "more bytes than a budget can count"),
        (["--memory-budget", "1048575"], "1048575 bytes is less than the smallest budget, 1 MiB (1048576 bytes)"),
        (["--memory-budget", "0x10M"], "expected a size such as 2G"),
    ])
    func usageErrorsExitWith2(options: [String], message: String) throws {
        let folder = try RenderFolder()
        let result = try Scenectl.run(["render", folder.scene, "--out", folder.path + "/out.wav"] + options)
        #expect(result.status == 2)
        #expect(result.stderr.contains(message), "\(result.stderr)")
    }

    /// A multichannel file in spatializeIfMono plays as it is and needs no
    /// position; a mono one is a point and does.
    @Test func aMultichannelFileNeedsNoPositionToPlayAsItIs() throws {
        let folder = try RenderFolder()
        try "sources:\n  - { id: air, file: air.wav }\n".write(toFile: folder.scene, atomically: true, encoding: .utf8)
        let result = try Scenectl.run(["render", folder.scene, "--out", folder.path + "/out.wav", "--seconds", "1", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let summary = try result.summary()
        let rendering = (summary["sources"] as? [[String: Any]])?.first?["rendering"] as? String
        #expect(rendering == "spatializeIfMono with 4 channels -> passthrough", "\(String(describing: rendering))")
        let levels = (summary["channels"] as? [[String: Any]])?.compactMap { $0["rmsDBFS"] as? Double } ?? []
        #expect(levels.count == 2 && levels.allSatisfy { $0 > -30 }, "\(levels)")

        try "sources:\n  - { id: tone, file: tone.wav }\n".write(toFile: folder.scene, atomically: true, encoding: .utf8)
        let mono = try Scenectl.run(["render", folder.scene, "--out", folder.path + "/out.wav"])
        #expect(mono.status == 2 && mono.stderr.contains("a point source needs a position or a motion"), "\(mono.stderr)")
    }

    /// A route that changes a frame or two into a room with reverb splits the engine's first
    /// call to OpenAL; OpenAL Soft 1.19.1's reverb crashed on such splits (frames 1 to 3 and 5)
    /// until each mixer rendered its reverb's first fade before the room. The tone plays on through it.
    @Test(arguments: [1, 2, 3, 5])
    func aRouteChangeFramesIntoTheRoomRenders(frame: Int) throws {
        let folder = try RenderFolder()
        try "reverb: { preset: mediumRoom }\nsources:\n  - { id: tone, file: tone.wav, position: [0, 0, -1] }\n"
            .write(toFile: folder.scene, atomically: true, encoding: .utf8)
        let out = folder.path + "/out.wav"
        let result = try Scenectl.run(["render", folder.scene, "--out", out, "--seconds", "0.2", "--route", "speakers",
                                       "--route-change", "\(Double(frame) / 48_000):headphones"])
        #expect(result.status == 0, "\(result.stderr)")
        let left = try AudioFileReader.read(path: out).buffer.channel(0)
        #expect(left.count == 9_600)
        // The tone ahead at 1 m, on the speakers and then through the crossfade to headphones.
        #expect(Measure.rmsDecibels(Array(left[480..<9_600])) > -20)
    }

    /// A source's start splits the engine's call to OpenAL on its frame, which crashed OpenAL Soft 1.19.1's
    /// reverb at frames 1 to 3 and 6 into a room. Starting there, on either route, the source plays exactly
    /// what it plays from frame 0, that many frames later.
    @Test(arguments: [1, 2, 3, 6], ["speakers", "headphones"])
    func aSourceStartingFramesIntoARoomWithReverbPlaysThatLate(frame: Int, route: String) throws {
        let folder = try RenderFolder()
        func render(start: Int) throws -> [Float] {
            try "reverb: { preset: mediumRoom }\nsources:\n  - { id: tone, file: tone.wav, position: [0, 0, -1], start: \(Double(start) / 48_000) }\n"
                .write(toFile: folder.scene, atomically: true, encoding: .utf8)
            let out = folder.path + "/start-\(start).wav"
            let result = try Scenectl.run(["render", folder.scene, "--out", out, "--seconds", "0.2", "--route", route])
            #expect(result.status == 0, "\(result.stderr)")
            return try AudioFileReader.read(path: out).buffer.channel(0)
        }
        let fromZero = try render(start: 0), late = try render(start: frame)
        try #require(fromZero.count == 9_600 && late.count == 9_600)
        #expect(Measure.rmsDecibels(Array(fromZero[480..<9_600])) > -20)
        #expect(late[0..<frame].allSatisfy { $0 == 0 })
        let worst = (0..<(9_600 - frame)).map { abs(late[$0 + frame] - fromZero[$0]) }.max()!
        #expect(worst < 1e-6, "\(frame) frames late, the render differs by \(worst)")
    }

    /// A scene's duration shorter than a sample would render an empty file.
    @Test func aSceneTooShortForOneSampleIsRefused() throws {
        let folder = try RenderFolder()
        try "duration: 0.00001\nsources:\n  - { id: tone, file: tone.wav, position: [1, 0, 0] }\n"
            .write(toFile: folder.scene, atomically: true, encoding: .utf8)
        let out = folder.path + "/out.wav"
        let result = try Scenectl.run(["render", folder.scene, "--out", out])
        #expect(result.status == 2 && result.stderr.contains("room.yaml:1: duration: \"0.00001\": is less than one sample at 48000 Hz"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        // The scene itself is wrong, whatever --seconds says.
        #expect(try Scenectl.run(["render", folder.scene, "--out", out, "--seconds", "0.01"]).status == 2)
        // One block renders; a budget's units are read whatever their case.
        try "duration: 0.01\nsources:\n  - { id: tone, file: tone.wav, position: [1, 0, 0] }\n"
            .write(toFile: folder.scene, atomically: true, encoding: .utf8)
        #expect(try Scenectl.run(["render", folder.scene, "--out", out, "--memory-budget", "64m"]).status == 0)
        #expect(try AudioFileReader.read(path: out).buffer.frameCount == 480)
    }

    @Test func outMustBeWavOrFlac() throws {
        let folder = try RenderFolder()
        let result = try Scenectl.run(["render", folder.scene, "--out", folder.path + "/out.mp3"])
        #expect(result.status == 2 && result.stderr.contains("--out must name a .wav or .flac file"))
    }

    /// An angle that is not a finite number is a usage error naming it, before any daemon is asked.
    @Test func aListenerTurnedByNoNumberIsAUsageError() throws {
        let socket = ["--socket", NSTemporaryDirectory() + "no-roomd-" + UUID().uuidString + ".sock"]
        let cases: [([String], String)] = [
            (["turn"] + socket + ["nan"], "yaw nan: expected a finite angle in degrees"),
            (["turn"] + socket + ["0", "inf"], "pitch inf: expected a finite angle in degrees"),
            (["listener"] + socket + ["--yaw", "inf"], "--yaw inf: expected a finite angle in degrees"),
            (["listener"] + socket + ["--roll", "nan"], "--roll nan: expected a finite angle in degrees"),
        ]
        for (arguments, message) in cases {
            let result = try Scenectl.run(arguments)
            #expect(result.status == 2 && result.stderr.contains(message), "\(arguments): \(result.status) \(result.stderr)")
        }
        // A negative angle after a space is an angle, sent on to roomd (here, none answers), not a missing value.
        let negative = try Scenectl.run(["listener"] + socket + ["--yaw", "-45", "--pitch", "-10", "--roll", "-5"])
        #expect(negative.status == 1 && negative.stderr.contains("no-roomd-") && !negative.stderr.contains("Missing value"), "\(negative.stderr)")
    }
}

/// The rooms in Scenes/ render: Tools/make_assets.sh makes their audio first.
@Suite struct DemoRoomTests {
    static let scenes: [String] = {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Scenes").standardized.path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return names.filter { $0.hasSuffix(".yaml") }.sorted().map { "\(folder)/\($0)" }
    }()

    @Test func thereAreAtLeastThreeRooms() {
        #expect(Self.scenes.count >= 3)
    }

    @Test(arguments: scenes)
    func demoRoomRendersEveryChannelAudiblyAndWithinFullScale(scene: String) throws {
        let out = NSTemporaryDirectory() + UUID().uuidString + ".wav"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try Scenectl.run(["render", scene, "--out", out, "--seconds", "6", "--json"])
        try #require(result.status == 0, "\(result.stderr) (run Tools/make_assets.sh to make the demo audio)")
        let summary = try result.summary()
        let sources = summary["sources"] as! [[String: Any]]
        #expect(sources.contains { $0["mode"] as? String == "bed" }, "a demo room has a bed")
        #expect(sources.contains { $0["moving"] as? Bool == true }, "a demo room has a moving source")
        #expect(sources.contains { $0["loop"] as? Bool == true && $0["mode"] as? String == "point" }, "a demo room loops a point source")
        let audio = try AudioFileReader.read(path: out).buffer
        for channel in 0..<audio.channelCount {
            let samples = audio.channel(channel)
            #expect(Measure.rmsDecibels(samples) > -45, "channel \(channel) is near silent")
            #expect(samples.allSatisfy { $0.isFinite && abs($0) <= 1 })
        }
    }
}
