import AudioMeasurements
import Devices
import Foundation
import Testing

/// The room's decoded audio against its memory budget: what a file's
/// header says it decodes to is refused before anything is decoded, and
/// every source of one file shares one decoded copy.
struct MemoryBudgetTests {
    /// A small FLAC whose header declares an hour of eight channels at
    /// 192 kHz, 20.6 GiB decoded: scenectl refuses the scene with the
    /// sizes at once, as a usage error, and writes nothing.
    @Test func aFileThatDecodesToGigabytesIsRefusedFromItsHeader() throws {
        let folder = try Scratch()
        let flac = folder.path + "/hour.flac"
        try Self.writeFLAC(flac, channels: 8, sampleRate: 192_000, declaringFrames: 3_600 * 192_000)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: flac)[.size] as? Int)
        try """
            version: 1
            name: Heavy room
            sources:
              - { id: hour, file: hour.flac, algorithm: passthrough }
            """.write(toFile: folder.path + "/room.yaml", atomically: true, encoding: .utf8)
        let out = folder.path + "/out.wav"
        let start = Date()
        let child = try ChildProcess.spawn(LiveRoom.product("scenectl"), ["render", folder.path + "/room.yaml", "--out", out, "--seconds", "1"],
                                           environment: folder.environment, errors: folder.path + "/scenectl.err")
        let status = child.wait()
        let took = Date().timeIntervalSince(start)
        let said = try String(contentsOfFile: folder.path + "/scenectl.err", encoding: .utf8)
        print("a \(size)-byte FLAC declaring an hour of 8 x 192 kHz: exit \(status) after \(took) s: \(said)")
        #expect(status == 2)
        #expect(said.contains(#"room.yaml:4: sources[0].file: "\#(flac)": decodes to 20.6 GiB (60 min 0 s, 8 channels at 192000 Hz), over the memory budget of 2 GiB"#),
                "\(said)")
        #expect(!FileManager.default.fileExists(atPath: out))

        // With a budget it fits, the same scene renders.
        let allowed = try ChildProcess.spawn(LiveRoom.product("scenectl"), ["render", folder.path + "/room.yaml", "--out", out, "--seconds", "0.5",
                                                                           "--memory-budget", "24G"],
                                             environment: folder.environment, errors: folder.path + "/allowed.err")
        #expect(allowed.wait() == 0, "\((try? String(contentsOfFile: folder.path + "/allowed.err", encoding: .utf8)) ?? "")")
    }

    /// A file whose header does not say how long it is (a FLAC written as a
    /// stream) is stopped at the budget as it decodes, counted at the
    /// engine's rate it is converted to: ten seconds of 8 kHz, 1.8 MiB at
    /// 48 kHz, against 1 MiB.
    @Test func aFileOfUnknownLengthIsStoppedAtTheBudget() throws {
        let folder = try Scratch()
        let flac = folder.path + "/unknown-length.flac"
        try Self.writeFLAC(flac, channels: 1, sampleRate: 8_000, seconds: 10, noise: true, declaringFrames: 0)
        try """
            version: 1
            name: Lying room
            sources:
              - { id: noise, file: unknown-length.flac, position: [0, 0, -2] }
            """.write(toFile: folder.path + "/room.yaml", atomically: true, encoding: .utf8)
        let out = folder.path + "/out.wav"
        let child = try ChildProcess.spawn(LiveRoom.product("scenectl"), ["render", folder.path + "/room.yaml", "--out", out, "--seconds", "1",
                                                                         "--memory-budget", "1M"],
                                           environment: folder.environment, errors: folder.path + "/scenectl.err")
        let status = child.wait()
        let said = try String(contentsOfFile: folder.path + "/scenectl.err", encoding: .utf8)
        print("ten seconds at 8 kHz of unknown length, with 1 MiB: exit \(status): \(said)")
        #expect(status == 2)
        #expect(said.contains(#"room.yaml:4: sources[0].file: "\#(flac)": decodes to more than the 1 MiB left of the memory budget"#), "\(said)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    /// A running room with a 4 MiB budget refuses an `add`, a `mic` and a
    /// `load` over it, with the sizes, and plays on as it was; a source of
    /// a file it already holds costs nothing, a new file its own size.
    @Test func aRunningRoomRefusesWhatWouldTakeItOverItsBudget() throws {
        let daemon = try RoomDaemon(arguments: ["--memory-budget", "4M"]) { folder in
            try Self.writeWAV(folder + "/long.wav", seconds: 30, channels: 2)
            try Self.writeWAV(folder + "/short.wav", seconds: 0.5, channels: 1)
            try """
                version: 1
                name: Long room
                sources:
                  - { id: long, file: long.wav, algorithm: passthrough }
                """.write(toFile: folder + "/long.yaml", atomically: true, encoding: .utf8)
        }
        let client = try RawClient(path: daemon.socket)
        func request(_ verb: String, _ args: String) throws -> [String: Any] {
            try client.request(#"{"v":1,"verb":"\#(verb)","args":{\#(args)}}"#)
        }
        func held() throws -> Int? {
            let status = try client.request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any]
            return (status?["decodedAudio"] as? [String: Any])?["bytes"] as? Int
        }
        let tone = 48_000 * 4
        #expect(try held() == tone, "the tone room holds its second of mono")

        let long = daemon.folder + "/long.wav"
        let over = "decodes to 11 MiB (30 s, 2 channels at 48000 Hz); with the 188 KiB the room holds that comes to 11.2 MiB, over the memory budget of 4 MiB"
        let added = try request("add", #""cwd":"/","source":"{id: long, file: \"\#(long)\", algorithm: passthrough}""#)
        #expect((added["error"] as? String)?.contains(#"add:1: source.file: "\#(long)": \#(over)"#) == true, "\(added)")
        let mic = try request("mic", #""file":"\#(long)""#)
        #expect((mic["error"] as? String)?.contains(#"mic: file: "\#(long)": decodes to 11 MiB"#) == true, "\(mic)")
        let loaded = try request("load", #""path":"\#(daemon.folder)/long.yaml""#)
        #expect((loaded["error"] as? String)?.contains(#"long.yaml:4: sources[0].file: "\#(long)": decodes to 11 MiB (30 s, 2 channels at 48000 Hz), over the memory budget of 4 MiB"#) == true,
                "\(loaded)")

        // The room is as it was, and plays: its tone is in the last half second it wrote.
        let status = try #require(try client.request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any])
        #expect(status["scene"] as? String == "Test room" && (status["sources"] as? [Any])?.count == 1 && status["microphone"] as? String == "default")
        #expect(try held() == tone)
        try Self.expectTonePlays(in: daemon.folder + "/room.wav")

        // Another source of the tone shares its copy; a new file adds its own size.
        #expect(try request("add", #""cwd":"/","source":"{id: again, file: \"\#(daemon.folder)/tone.wav\", position: [2, 0, 0]}""#)["ok"] as? Bool == true)
        #expect(try held() == tone)
        #expect(try request("add", #""cwd":"/","source":"{id: short, file: \"\#(daemon.folder)/short.wav\", position: [0, 0, -2]}""#)["ok"] as? Bool == true)
        #expect(try held() == tone + 24_000 * 4)
    }

    /// Twenty-four sources of one minute of 44.1 kHz audio cost the daemon
    /// about one copy of it at the engine's rate, not twenty-four (nor
    /// forty-eight with OpenAL's): its resident memory against a room with
    /// one of them.
    @Test func everySourceOfAFileSharesOneDecodedCopy() throws {
        let minute = 60 * 48_000 * 4
        func resident(sources count: Int) throws -> (bytes: Int, held: Int) {
            let positions = (0..<count).map { index -> String in
                let angle = Double(index) / Double(count) * 2 * .pi
                return "  - { id: s\(index), file: minute.wav, position: [\(2 * sin(angle)), 0, \(-2 * cos(angle))], loop: true }"
            }
            let scene = LiveRoom.Scene(text: "version: 1\nname: Crowd\nsources:\n" + positions.joined(separator: "\n") + "\n")
            let daemon = try RoomDaemon(scene: scene) { try Self.writeWAV($0 + "/minute.wav", seconds: 60, channels: 1, sampleRate: 44_100) }
            let status = try RawClient(path: daemon.socket).request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any]
            let held = try #require((status?["decodedAudio"] as? [String: Any])?["bytes"] as? Int)
            // Settled: the room has played a while.
            Thread.sleep(forTimeInterval: 0.5)
            return (try #require(daemon.child.residentBytes), held)
        }
        let one = try resident(sources: 1), crowd = try resident(sources: 24)
        print("resident with 1 source of a minute: \(one.bytes / 1_048_576) MiB, with 24: \(crowd.bytes / 1_048_576) MiB; "
              + "a copy is \(minute / 1_048_576) MiB; decoded held: \(one.held), \(crowd.held)")
        #expect(abs(one.held - minute) < minute / 100 && crowd.held == one.held)
        #expect(crowd.bytes - one.bytes < minute, "24 sources of one file cost less than one more copy")
    }

    // MARK: Files

    /// A WAV of a 440 Hz tone at -12 dBFS peak in every channel.
    static func writeWAV(_ path: String, seconds: Double, channels: Int, sampleRate: Int = 48_000) throws {
        let frames = Int(seconds * Double(sampleRate))
        let tone = Signals.sine(frequency: 440, frames: frames, amplitude: 0.25, sampleRate: Double(sampleRate))
        let samples = tone.flatMap { [Float](repeating: $0, count: channels) }
        let writer = try AudioFileWriter(path: path, format: .wavFloat, channelCount: channels, sampleRate: sampleRate)
        try samples.withUnsafeBufferPointer { try writer.write(interleaved: $0) }
        try writer.close()
    }

    /// A FLAC of `seconds` of silence, or of noise, whose STREAMINFO says it
    /// holds `declaringFrames` (0: it does not say), as a file cut short or
    /// crafted would.
    static func writeFLAC(_ path: String, channels: Int, sampleRate: Int, seconds: Double = 0.05, noise: Bool = false,
                          declaringFrames: Int) throws {
        let frames = Int(seconds * Double(sampleRate))
        let audio = noise ? Signals.whiteNoise(frames: frames * channels, rms: 0.1, seed: 3) : [Float](repeating: 0, count: frames * channels)
        let writer = try AudioFileWriter(path: path, format: .flac, channelCount: channels, sampleRate: sampleRate)
        try audio.withUnsafeBufferPointer { try writer.write(interleaved: $0) }
        try writer.close()
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        // "fLaC", a block header, then STREAMINFO, whose total samples are the
        // low 36 bits of the 64 bits from its eleventh byte.
        try #require(bytes.count > 26 && bytes[0..<4] == [0x66, 0x4C, 0x61, 0x43] && bytes[4] & 0x7F == 0)
        let at = 18
        var word = bytes[at..<(at + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        word = word & ~((1 << 36) - 1) | UInt64(declaringFrames)
        for index in 0..<8 { bytes[at + index] = UInt8(truncatingIfNeeded: word >> (56 - 8 * index)) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    /// The last half second `path` holds has the tone room's level: it plays.
    static func expectTonePlays(in path: String) throws {
        let deadline = Date().addingTimeInterval(10)
        while (WAVFile(path)?.bytesSeconds ?? 0) < 1 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let audio = try AudioFileReader.read(path: path)
        let channels = audio.buffer.channelCount
        let last = Array(audio.buffer.samples.suffix(24_000 * channels))
        let level = Measure.rmsDecibels(last)
        print("\(path): the last half second at \(level) dBFS")
        #expect(level > -40, "the room plays on")
    }
}
