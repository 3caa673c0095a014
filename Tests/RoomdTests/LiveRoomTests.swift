import AudioCore
import AudioMeasurements
import Devices
import Foundation
import Testing

/// roomd against a real PulseAudio daemon with null sinks: what plays is
/// recorded from the sinks' monitors and measured.
@Suite(.serialized, .enabled(if: PulseServer.isAvailable, "needs pulseaudio and pactl"))
struct LiveRoomTests {
    @Test func playsTheRoomAndAMoveFlipsTheLevelDifference() throws {
        let room = try LiveRoom(scene: .tone(at: [-2, 0, 0]))
        let before = try room.record("phones.monitor", seconds: 1)
        let left = Measure.rmsDecibels(before.left), right = Measure.rmsDecibels(before.right)
        print("left source: \(left) / \(right) dBFS, \(Measure.frequency(before.left)) Hz")
        #expect(left > -40, "the room plays on the sink")
        #expect(abs(Measure.frequency(before.left) - 1_000) < 20, "the tone the scene holds")
        #expect(left - right > 3)

        try room.scenectl("move", "tone", "--over", "100", "--", "2", "0", "0")
        Thread.sleep(forTimeInterval: 0.4)
        let after = try room.record("phones.monitor", seconds: 1)
        let ild = Measure.rmsDecibels(after.left) - Measure.rmsDecibels(after.right)
        print("after the move: ILD \(ild) dB (was \(left - right))")
        #expect(ild < -3)
        // The listener steps past it, a metre down (X,Y,Z takes the negative number): the tone is on the left again.
        try room.scenectl("listener", "--position", "4,-1,0")
        Thread.sleep(forTimeInterval: 0.4)
        let passed = try room.record("phones.monitor", seconds: 1)
        let passedILD = Measure.rmsDecibels(passed.left) - Measure.rmsDecibels(passed.right)
        print("with the listener past it: ILD \(passedILD) dB")
        #expect(passedILD > 3)
        let status = try room.status()
        #expect(status["route"] as? String == "headphones" && status["algorithm"] as? String == "hrtf")
        let latency = try #require(status["latencyMs"] as? Double)
        print("output latency: \(latency) ms")
        #expect(latency <= 30)
    }

    /// A source added over the socket plays where its entry puts it, takes
    /// `set`, and is gone once removed; a bad entry is refused with the
    /// scene file's message and changes nothing.
    @Test func sourcesJoinChangeAndLeaveOverTheSocket() throws {
        let room = try LiveRoom(scene: .tone(at: [-2, 0, 0]))
        try room.scenectl("stop", "tone")
        let bad = try? room.scenectl("add", "{id: bell, file: \(room.folder)/tone.wav, position: [2, 0, 0], gain: 90}")
        #expect(bad == nil, "an entry with a gain of 90 dB was accepted")
        try room.scenectl("add", "{id: bell, file: \(room.folder)/tone.wav, position: [2, 0, 0], loop: true, reverbBlend: 0}")
        Thread.sleep(forTimeInterval: 0.3)
        let added = try room.record("phones.monitor", seconds: 1)
        let ild = Measure.rmsDecibels(added.left) - Measure.rmsDecibels(added.right)
        print("added at the right: \(Measure.rmsDecibels(added.right)) dBFS, ILD \(ild) dB")
        #expect(Measure.rmsDecibels(added.right) > -40 && ild < -3)

        try room.scenectl("set", "bell", "gain", "--", "-20")
        Thread.sleep(forTimeInterval: 0.3)
        let quieter = try room.record("phones.monitor", seconds: 1)
        let drop = Measure.rmsDecibels(added.right) - Measure.rmsDecibels(quieter.right)
        print("set gain -20: \(drop) dB quieter")
        #expect(abs(drop - 20) < 2)

        try room.scenectl("remove", "bell")
        Thread.sleep(forTimeInterval: 0.3)
        let gone = try room.record("phones.monitor", seconds: 1)
        print("removed: \(Measure.rmsDecibels(gone.left + gone.right)) dBFS")
        #expect(Measure.rmsDecibels(gone.left + gone.right) < -80)
        let ids = (try room.status()["sources"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(ids == ["tone"])
    }

    @Test func duckingFollowsSpeechInTheMicrophone() throws {
        let room = try LiveRoom(scene: .tone(at: [0, 0, -2], voice: "aec: off\n  ducking: { level: default, advanced: false }"))
        try room.scenectl("duck", "--level", "max", "--advanced", "on")
        let recording = try room.record("phones.monitor", seconds: 6) { try room.speak(after: 1.5) }
        let windows = stride(from: 0, to: recording.left.count - 4_800, by: 4_800).map {
            Measure.rmsDecibels(Array(recording.left[$0..<($0 + 4_800)]))
        }
        let quiet = windows[2...8].sorted()[3]
        let ducked = windows.min()!
        print("ducking: \(quiet) dBFS before speech, \(ducked) at the deepest: \(ducked - quiet) dB")
        #expect(abs((ducked - quiet) - -24) < 3, "max is -24 dB")
    }

    @Test func aMutedTalkerIsTold() throws {
        let room = try LiveRoom(scene: .tone(at: [0, 0, -2], voice: "aec: off\n  muted: false"))
        try room.scenectl("mute", "on")
        let events = try room.events(during: {
            try room.speak(after: 0.5)
            Thread.sleep(forTimeInterval: 6)
        })
        let names = events.compactMap { $0["event"] as? String }
        print("events: \(names)")
        let started = try #require(names.firstIndex(of: "mutedSpeechStarted"))
        #expect(names[started...].contains("mutedSpeechEnded"))
        #expect(!names.contains("speechStarted"), "muted speech is not the talker's")
    }

    @Test func theRouteFollowsTheDefaultSink() throws {
        let room = try LiveRoom(scene: .tone(at: [-2, 0, 0]))
        let events = try room.events(during: {
            try room.server.pactl("set-default-sink", "speakers")
            Thread.sleep(forTimeInterval: 1)
        })
        let change = try #require(events.first { $0["event"] as? String == "routeChanged" })
        #expect(change["from"] as? String == "headphones" && change["to"] as? String == "speakers")
        #expect(change["algorithm"] as? String == "panning")
        #expect(try room.status()["algorithm"] as? String == "panning")
        let onSpeakers = try room.record("speakers.monitor", seconds: 1)
        #expect(Measure.rmsDecibels(onSpeakers.left) - Measure.rmsDecibels(onSpeakers.right) > 3, "panned left")

        try room.server.pactl("set-default-sink", "surround")
        Thread.sleep(forTimeInterval: 1)
        let status = try room.status()
        #expect(status["route"] as? String == "surround51" && status["channels"] as? Int == 6)
        let streams = try room.server.pactl("list", "short", "sink-inputs")
        #expect(streams.contains("6ch"), "the stream follows with 6 channels: \(streams)")
    }

    @Test func survivesTheServerAndReconnects() throws {
        let room = try LiveRoom(scene: .tone(at: [-2, 0, 0]))
        try room.scenectl("gain", "tone", "--", "-6")
        try room.scenectl("move", "tone", "--", "0", "0", "-3")
        room.server.kill()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try room.status()["server"] as? String != "pulseaudio", "roomd answers without a server")
        try room.server.restart()
        let restarted = Date()
        var reconnected: Double?
        while Date().timeIntervalSince(restarted) < 5 {
            if try room.status()["server"] as? String == "pulseaudio" {
                reconnected = Date().timeIntervalSince(restarted)
                break
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        let seconds = try #require(reconnected, "roomd came back to the server")
        print("reconnected \(seconds) s after the server came back")
        #expect(seconds < 2)
        let status = try room.status()
        let tone = try #require((status["sources"] as? [[String: Any]])?.first)
        #expect(tone["gain"] as? Double == -6)
        #expect((tone["position"] as? [Double]) == [0, 0, -3])
        // A new null sink starts rendering about 2 s after it is first played to.
        Thread.sleep(forTimeInterval: 2.3)
        let recording = try room.record("phones.monitor", seconds: 1)
        #expect(Measure.rmsDecibels(recording.left) > -40, "plays again")
    }

    /// A server that stops answering (SIGSTOP) is left after 2 s: roomd
    /// says so, plays on its own clock and answers meanwhile, and is back on
    /// the server once it goes on.
    @Test func aHungServerIsLeftAndReturnedTo() throws {
        let room = try LiveRoom(scene: .tone(at: [-2, 0, 0]))
        var lostAfter: Double?, clockRan = 0.0, backAfter: Double?
        func waitFor(server: String, within seconds: Double) throws -> Double? {
            let start = Date()
            while Date().timeIntervalSince(start) < seconds {
                if (try room.status()["server"] as? String == "pulseaudio") == (server == "pulseaudio") { return Date().timeIntervalSince(start) }
                Thread.sleep(forTimeInterval: 0.05)
            }
            return nil
        }
        let events = try room.events(during: {
            room.server.freeze()
            lostAfter = try waitFor(server: "none", within: 8)
            let before = try room.status()["time"] as? Double ?? 0
            Thread.sleep(forTimeInterval: 0.5)
            clockRan = (try room.status()["time"] as? Double ?? 0) - before
            room.server.resume()
            backAfter = try waitFor(server: "pulseaudio", within: 5)
        })
        let names = events.compactMap { $0["event"] as? String }
        print("hung server: left after \(lostAfter ?? -1) s, the room's clock ran \(clockRan) s in 0.5 s, back \(backAfter ?? -1) s after it went on; events \(names)")
        let left = try #require(lostAfter, "roomd left the hung server")
        #expect(left >= 1.9 && left < 4, "after 2 s without an answer")
        #expect(clockRan > 0.3, "the room plays on its own clock")
        #expect(try #require(backAfter, "roomd came back") < 2)
        let lost = try #require(names.firstIndex(of: "serverLost"))
        #expect(names[lost...].contains("serverReconnected"))
        Thread.sleep(forTimeInterval: 2.3)
        #expect(Measure.rmsDecibels(try room.record("phones.monitor", seconds: 1).left) > -40, "plays on the server again")
    }

    /// When the microphone goes away and the server moves the capture to the
    /// room's own output monitor, roomd says so, silences it and decides
    /// `aec: auto` again; a new default microphone is followed and heard.
    @Test func theCaptureIsFollowedAndTheRoomsOwnMonitorIsNoMicrophone() throws {
        let room = try LiveRoom(scene: .tone(at: [0, 0, -2], voice: "aec: auto\n  muted: false"), recordsUplink: true)
        #expect(try room.status()["captureDevice"] as? String == "mic_feed.monitor")
        let modules = try room.server.pactl("list", "short", "modules")
        let micFeed = try #require(modules.split(separator: "\n").first { $0.contains("sink_name=mic_feed") }?.split(separator: "\t").first)
        var heard = -Double.infinity
        let lost = try room.events(during: {
            // The microphone unplugged: the server's fallback is the room's own output.
            try room.server.pactl("set-default-source", "phones.monitor")
            try room.server.pactl("unload-module", String(micFeed))
            Thread.sleep(forTimeInterval: 1)
            heard = Measure.rmsDecibels(try room.record("phones.monitor", seconds: 2).left)
        })
        let moved = try #require(lost.first { $0["event"] as? String == "microphoneChanged" }, "\(lost)")
        #expect(moved["device"] as? String == "phones.monitor" && moved["roomOutputMonitor"] as? Bool == true)
        let decided = lost.last { $0["event"] as? String == "echoCancellation" }
        #expect(decided?["mode"] as? String == "off" && (decided?["reason"] as? String)?.contains("own output monitor") == true, "\(lost)")
        let status = try room.status()
        #expect(status["captureDevice"] as? String == "phones.monitor" && status["captureSilenced"] as? Bool == true)

        // A new microphone made the default is followed, and what it hears goes up.
        try room.server.pactl("load-module", "module-null-sink", "sink_name=mic2", "format=float32le", "rate=48000")
        let found = try room.events(during: {
            try room.server.pactl("set-default-source", "mic2.monitor")
            Thread.sleep(forTimeInterval: 1)
            _ = try room.server.spawn("paplay", ["-d", "mic2", try room.speech()])
            Thread.sleep(forTimeInterval: 4)
        })
        let back = try #require(found.first { $0["event"] as? String == "microphoneChanged" }, "\(found)")
        #expect(back["device"] as? String == "mic2.monitor" && back["roomOutputMonitor"] as? Bool == false)
        #expect(found.contains { $0["event"] as? String == "echoCancellation" && $0["mode"] as? String == "on" })
        Thread.sleep(forTimeInterval: 0.5)

        let uplink = try AudioFileReader.read(path: room.uplink).monoSamples(at: 48_000)
        func level(_ from: Double, _ to: Double) -> Double {
            Measure.rmsDecibels(Array(uplink[min(uplink.count, Int(from * 48_000))..<min(uplink.count, Int(to * 48_000))]))
        }
        let movedAt = try #require(moved["t"] as? Double), backAt = try #require(back["t"] as? Double)
        let silenced = level(movedAt + 0.2, backAt - 0.1), speaking = level(backAt + 1, backAt + 4)
        print("capture: the room's own monitor at \(heard) dBFS; the uplink \(silenced) dBFS while it was the capture, "
              + "\(speaking) dBFS from the new microphone")
        #expect(heard > -40, "the monitor hears the room")
        #expect(silenced < -90, "none of it goes up the uplink")
        #expect(speaking > -50, "the new microphone is heard")
    }

    /// The loop of a real room: what the output plays comes back into the
    /// microphone through a room's impulse response, and echo cancellation,
    /// aligned by the devices' reported latencies, takes it off the uplink.
    @Test func cancellationTakesTheEchoOffTheUplink() throws {
        let room = try LiveRoom(scene: .talker(voice: "aec: on\n  muted: false"), echoPath: true, recordsUplink: true)
        Thread.sleep(forTimeInterval: 8)
        let events = try room.events(during: {
            try room.scenectl("aec", "off")
            Thread.sleep(forTimeInterval: 4)
            try room.scenectl("aec", "on")
            // Five seconds to measure, and time for the recorder to write them.
            Thread.sleep(forTimeInterval: 5.5)
        })
        let switches = events.filter { $0["event"] as? String == "echoCancellation" }.compactMap { $0["t"] as? Double }
        try #require(switches.count == 2, "aec off and on: \(events)")
        let uplink = try AudioFileReader.read(path: room.uplink).monoSamples(at: 48_000)
        try #require(uplink.count >= Int((switches[1] + 5) * 48_000), "the uplink recording covers the switches")
        func level(_ from: Double, _ to: Double) -> Double {
            Measure.rmsDecibels(Array(uplink[Int(from * 48_000)..<min(uplink.count, Int(to * 48_000))]))
        }
        let cancelled = level(switches[0] - 3, switches[0]), echoing = level(switches[0] + 0.5, switches[1])
        let relearned = level(switches[1] + 2, switches[1] + 5)
        print("uplink: \(cancelled) dBFS cancelled, \(echoing) dBFS with the echo, \(relearned) dBFS 2 s after cancellation is back")
        #expect(echoing > -40, "the echo path carries the room into the microphone")
        #expect(echoing - cancelled >= 20)
        #expect(echoing - relearned >= 20)
    }
}

/// A roomd on a private server, with a scene made for the test.
final class LiveRoom {
    let server: PulseServer
    let folder: String
    let socket: String
    /// Where roomd records the uplink, when it does.
    let uplink: String
    private let daemon: ChildProcess

    struct Scene {
        let text: String

        /// A looping 1 kHz tone at `position`, with an optional voice section.
        static func tone(at position: [Double], voice: String? = nil) -> Scene {
            var text = """
                version: 1
                name: Test room
                distance: { model: inverse, reference: 1, maximum: 50, rolloff: 1 }
                sources:
                  - { id: tone, file: tone.wav, mode: point, position: [\(position.map { "\($0)" }.joined(separator: ", "))], loop: true, reverbBlend: 0 }

                """
            if let voice { text += "voice:\n  mic: default\n  \(voice)\n" }
            return Scene(text: text)
        }

        /// Writes the scene as `room.yaml` in `folder`, with the tone it may
        /// play (a second of 1 kHz at -12 dBFS peak); the scene file's path.
        func write(into folder: String) throws -> String {
            let writer = try AudioFileWriter(path: folder + "/tone.wav", format: .wavFloat, channelCount: 1, sampleRate: 48_000)
            try Signals.sine(frequency: 1_000, frames: 48_000, amplitude: 0.25).withUnsafeBufferPointer { try writer.write(interleaved: $0) }
            try writer.close()
            try text.write(toFile: folder + "/room.yaml", atomically: true, encoding: .utf8)
            return folder + "/room.yaml"
        }

        /// The barkeep talking without pause, looping, a metre ahead, with a voice section.
        static func talker(voice: String) -> Scene {
            Scene(text: """
                version: 1
                name: Talking room
                distance: { model: inverse, reference: 1, maximum: 50, rolloff: 1 }
                sources:
                  - { id: barkeep, file: \(LiveRoom.asset("barkeep.wav")), mode: point, position: [0, 0, -1], loop: true, reverbBlend: 0 }
                voice:
                  mic: default
                  \(voice)

                """)
        }
    }

    /// - echoPath: the headphones' monitor plays into the virtual microphone
    ///   through a room's impulse response, as loudspeakers would.
    init(scene: Scene, echoPath: Bool = false, recordsUplink: Bool = false) throws {
        server = try PulseServer()
        folder = server.directory
        socket = folder + "/roomd.sock"
        uplink = folder + "/uplink.wav"
        if echoPath { try Self.addEchoPath(to: server) }
        daemon = try server.spawn(Self.product("roomd"), [try scene.write(into: folder), "--socket", socket, "--protocol-log", folder + "/protocol.log"]
                                  + (recordsUplink ? ["--uplink", uplink] : []),
                                  output: folder + "/roomd.out", errors: folder + "/roomd.err")
        let deadline = Date().addingTimeInterval(10)
        while (try? status()) == nil {
            guard daemon.isRunning, Date() < deadline else {
                throw PulseServerError("roomd did not start: " + ((try? String(contentsOfFile: folder + "/roomd.err", encoding: .utf8)) ?? ""))
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        // A null sink starts rendering about 2 s after it is first played to.
        Thread.sleep(forTimeInterval: 2.2)
    }

    deinit {
        daemon.signal(SIGTERM)
        daemon.wait()
        ProtocolSchema.check(trace: folder + "/protocol.log", requests: true)
    }

    /// The package's folder, for the demo audio and the release build.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// A file of the demo audio in Scenes/audio.
    static func asset(_ name: String) -> String { packageRoot.appendingPathComponent("Scenes/audio/\(name)").path }

    /// A virtual room between the headphones and the microphone: a loopback
    /// from `phones.monitor` into a sink that convolves with an impulse
    /// response (the virtual-surround module with a one-channel response)
    /// and plays into `mic_feed`. The response is the direct sound 2 ms
    /// late at half level and a diffuse tail decaying by 60 dB in 0.15 s.
    /// The loopback keeps its rate (`adjust_time=0`): both null sinks run
    /// on the system clock, and its rate adjustments would make the path drift.
    private static func addEchoPath(to server: PulseServer) throws {
        let length = 4_800, decay = 0.15 * 48_000 / log(1_000)
        var response = Signals.whiteNoise(frames: length, rms: 0.05, seed: 9).enumerated().map { index, sample in
            index < 192 ? 0 : sample * Float(exp(-Double(index - 192) / decay))
        }
        response[96] = 0.5
        let file = server.directory + "/room-response.wav"
        let writer = try AudioFileWriter(path: file, format: .wavFloat, channelCount: 1, sampleRate: 48_000)
        try response.withUnsafeBufferPointer { try writer.write(interleaved: $0) }
        try writer.close()
        try server.pactl("load-module", "module-virtual-surround-sink", "sink_name=echo_room", "sink_master=mic_feed", "hrir=" + file)
        try server.pactl("load-module", "module-loopback", "source=phones.monitor", "sink=echo_room", "latency_msec=30", "adjust_time=0")
    }

    static func product(_ name: String) -> String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent().appendingPathComponent(name).path
    }

    @discardableResult
    func scenectl(_ arguments: String...) throws -> String {
        try server.run(Self.product("scenectl"), Array(arguments.prefix(1)) + ["--socket", socket] + arguments.dropFirst())
    }

    func status() throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(scenectl("status", "--json").utf8)) as? [String: Any] ?? [:]
    }

    /// Records a source (a sink's monitor) for `seconds`, doing `meanwhile` as it starts.
    func record(_ source: String, seconds: Double, meanwhile: () throws -> Void = {}) throws -> (left: [Float], right: [Float]) {
        let file = folder + "/recording-\(UUID().uuidString.prefix(6)).raw"
        let parec = try server.spawn("parec", ["-d", source, "--format=float32le", "--rate=48000", "--channels=2",
                                               "--latency-msec=10", "--raw", file])
        Thread.sleep(forTimeInterval: 0.1)
        let start = Date()
        try meanwhile()
        Thread.sleep(forTimeInterval: max(0, seconds - Date().timeIntervalSince(start)))
        parec.signal(SIGTERM)
        parec.wait()
        let data = try Data(contentsOf: URL(fileURLWithPath: file))
        let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let frames = samples.count / 2
        return ((0..<frames).map { samples[2 * $0] }, (0..<frames).map { samples[2 * $0 + 1] })
    }

    /// Plays four seconds of speech into the virtual microphone, starting `after` seconds from now.
    func speak(after delay: Double) throws {
        let speech = try speech()
        Thread.sleep(forTimeInterval: delay)
        _ = try server.spawn("paplay", ["-d", "mic_feed", speech])
    }

    /// Four seconds of a player's speech, loud, as a file to play into a microphone.
    func speech() throws -> String {
        let speech = folder + "/speech.wav"
        if !FileManager.default.fileExists(atPath: speech) {
            try server.run("sox", [Self.asset("player_mic.wav"), speech, "trim", "5.8", "4.4", "gain", "10"])
        }
        return speech
    }

    /// The events `scenectl events` prints while `body` runs.
    func events(during body: () throws -> Void) throws -> [[String: Any]] {
        let file = folder + "/events-\(UUID().uuidString.prefix(6)).jsonl"
        let watcher = try server.spawn(Self.product("scenectl"), ["events", "--socket", socket], output: file)
        // Time to start and subscribe, even on a loaded machine.
        Thread.sleep(forTimeInterval: 1)
        try body()
        watcher.signal(SIGTERM)
        watcher.wait()
        let text = (try? String(contentsOfFile: file, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }
}
