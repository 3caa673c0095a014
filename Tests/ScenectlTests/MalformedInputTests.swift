import AudioCore
import Devices
import Foundation
import Testing

/// A scene file or audio file that is wrong, and what `scenectl render` must say about it.
struct Malformed: CustomTestStringConvertible, Sendable {
    let name: String
    /// The scene file's bytes.
    let scene: Data
    /// What standard error must contain.
    let message: String

    init(_ name: String, _ scene: String, _ message: String) {
        self.init(name, Data(scene.utf8), message)
    }

    init(_ name: String, _ scene: Data, _ message: String) {
        self.name = name
        self.scene = scene
        self.message = message
    }

    var testDescription: String { name }

    /// A point source that plays `file`.
    static func playing(_ file: String) -> String { "sources:\n  - id: v\n    file: \(file)\n    position: [1, 0, 0]\n" }
}

private let source = "sources:\n  - id: voice\n    file: tone.wav\n    position: [1, 0, -2]\n"

/// Alias upon alias, nine times nine times over: a billion "x" if anything expanded them.
private let billionLaughs: String = {
    var text = "a: &a [x, x, x, x, x, x, x, x, x]\n", previous = "a"
    for name in ["b", "c", "d", "e", "f", "g", "h", "i"] {
        text += "\(name): &\(name) [" + [String](repeating: "*\(previous)", count: 9).joined(separator: ", ") + "]\n"
        previous = name
    }
    return text + "sources: [" + [String](repeating: "*i", count: 9).joined(separator: ", ") + "]\n"
}()

let malformedScenes: [Malformed] = [
    Malformed("unclosed bracket", "name: [unclosed\nsources: {", "room.yaml:2: not valid YAML"),
    Malformed("tab indentation", "name: x\nsources:\n\t- id: a\n", "room.yaml:3: not valid YAML"),
    Malformed("empty file", "", "room.yaml: the scene is empty"),
    Malformed("only a comment", "# nothing here\n", "room.yaml: the scene is empty"),
    Malformed("a list at the top", "- 1\n- 2\n", "room.yaml:1: \"a list\": expected a mapping of scene keys"),
    Malformed("a number at the top", "42\n", "expected a mapping of scene keys"),
    Malformed("gain as a word", source + "    gain: loud\n", "room.yaml:5: sources[0].gain: \"loud\": expected a number (dB)"),
    Malformed("position as a word", "sources:\n  - id: v\n    file: tone.wav\n    position: left\n",
              "room.yaml:4: sources[0].position: \"left\": expected [x, y, z] in metres"),
    Malformed("sources as a number", "sources: 5\n", "room.yaml:1: sources: expected a list of sources"),
    Malformed("loop as a word", source + "    loop: sometimes\n", "room.yaml:5: sources[0].loop: \"sometimes\": expected true or false"),
    Malformed("NaN gain", source + "    gain: .nan\n", "room.yaml:5: sources[0].gain: \".nan\": must be a finite number"),
    Malformed("infinite listener", "listener: { position: [0, .inf, 0] }\n", "room.yaml:1: listener.position.y: \".inf\": must be a finite number"),
    Malformed("overflowing exponent", source + "    gain: 1e99999\n", "room.yaml:5: sources[0].gain: \"1e99999\": must be a finite number"),
    Malformed("huge coordinate", "sources:\n  - id: v\n    file: tone.wav\n    position: [1e308, 0, 0]\n",
              "room.yaml:4: sources[0].position.x: \"1e308\": must be between -10000 and 10000 m"),
    Malformed("huge integer gain", source + "    gain: 99999999999999999999999999999\n", "sources[0].gain: \"99999999999999999999999999999\": must be between -120 and 24 dB"),
    Malformed("huge duration", "duration: 1e12\n" + source, "room.yaml:1: duration: \"1e12\": must be"),
    Malformed("brackets 100 deep", "name: " + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "\n",
              "room.yaml:1: nested deeper than 32 levels"),
    Malformed("dashes 200000 deep", "sources:\n  " + String(repeating: "- ", count: 200_000) + "x\n", "room.yaml:2: not valid YAML"),
    Malformed("indentation 600 deep", "sources:\n" + (0..<600).map { String(repeating: "  ", count: $0 + 1) + "a\($0):\n" }.joined(),
              "room.yaml:2: sources: expected a list of sources"),
    Malformed("10 MB file", "name: x\n# " + String(repeating: "a", count: 10 << 20) + "\n",
              "room.yaml: scene file is larger than 8 MiB"),
    Malformed("bad UTF-8", Data("name: caf".utf8) + Data([0xE9, 0xFF, 0x0A]), "room.yaml: scene file is not valid UTF-8 text"),
    Malformed("a NUL byte", "name: a\u{0}b\n", "room.yaml: not readable as YAML"),
    Malformed("billion laughs", billionLaughs, "room.yaml:1: a: unknown key"),
    Malformed("duplicate ids", source + "  - id: voice\n    file: tone.wav\n    position: [1, 0, -2]\n",
              "room.yaml:5: sources[1].id: \"voice\": id already used by sources[0] (line 2)"),
    Malformed("duplicate key", "name: a\nname: b\n", "room.yaml:1: \"name\": key appears more than once"),
    Malformed("misspelt key", source + "    gian: -3\n", "room.yaml:5: sources[0].gian: unknown key; did you mean \"gain\"?"),
    Malformed("unknown version", "version: 2\n", "room.yaml:1: version: \"2\": this engine reads scene format version 1"),
    Malformed("keyframes out of order",
              "sources:\n  - id: v\n    file: tone.wav\n    motion:\n      keyframes:\n        - { time: 2, position: [0, 0, -1] }\n"
                + "        - { time: 1, position: [1, 0, -1] }\n",
              "room.yaml:7: sources[0].motion.keyframes[1].time"),
    Malformed("unknown route", "output: { route: car }\n", "room.yaml:1: output.route: \"car\": expected one of"),
    Malformed("missing audio file", Malformed.playing("nowhere.wav"), "room.yaml:3: sources[0].file: \"nowhere.wav\": audio file not found"),
    Malformed("audio file that is a folder", Malformed.playing("folder.wav"), "room.yaml:3: sources[0].file: \"folder.wav\": is a folder"),
    Malformed("truncated WAV header", Malformed.playing("truncated.wav"), "room.yaml:3: sources[0].file: \"truncated.wav\": cannot read audio:"),
    Malformed("corrupt WAV header", Malformed.playing("corrupt.wav"), "room.yaml:3: sources[0].file: \"corrupt.wav\": cannot read audio:"),
    Malformed("no channels", Malformed.playing("nochannels.wav"), "room.yaml:3: sources[0].file: \"nochannels.wav\": cannot read audio: Channel count is zero"),
    Malformed("three channels", Malformed.playing("three.wav"), "this file has 3"),
    Malformed("no frames", Malformed.playing("empty.wav"), "room.yaml:3: sources[0].file: \"empty.wav\": holds no audio frames"),
    Malformed("1 Hz", Malformed.playing("rate1.wav"), "\"rate1.wav\": declares a sample rate of 1 Hz, outside 1000-768000 Hz"),
    Malformed("2 GHz", Malformed.playing("rate2g.wav"), "\"rate2g.wav\": declares a sample rate of 2000000000 Hz"),
    Malformed("text named .wav", Malformed.playing("notes.wav"), "\"notes.wav\": cannot read audio: Format not recognised"),
    Malformed("zeros named .wav", Malformed.playing("zeros.wav"), "\"zeros.wav\": cannot read audio: Format not recognised"),
    Malformed("prompt that is not audio", "prompts:\n  - { id: hi, normal: notes.wav, short: tone.wav }\n",
              "room.yaml:2: prompts[0].normal: \"notes.wav\": cannot read audio"),
    Malformed("microphone with no frames", "voice:\n  mic: empty.wav\n", "room.yaml:2: voice.mic: \"empty.wav\": holds no audio frames"),
]

/// A folder holding the broken scene and every audio file the corpus names.
final class MalformedFolder {
    let path = NSTemporaryDirectory() + "malformed-" + UUID().uuidString

    init() throws {
        try FileManager.default.createDirectory(atPath: path + "/folder.wav", withIntermediateDirectories: true)
        let tone = (0..<4_800).map { Float(sin(Double($0) * 0.05)) * 0.25 }
        try write("tone.wav", Self.wav(samples: tone))
        try write("truncated.wav", Self.wav(samples: tone).prefix(20))
        try write("corrupt.wav", Data("RIFF\u{10}\0\0\0WAVEfmt \u{2}\0\0\0garbage".utf8))
        try write("nochannels.wav", Self.wav(channels: 0, samples: tone))
        try write("three.wav", Self.wav(channels: 3, samples: tone + tone + tone))
        try write("empty.wav", Self.wav(samples: []))
        try write("rate1.wav", Self.wav(rate: 1, samples: tone))
        try write("rate2g.wav", Self.wav(rate: 2_000_000_000, samples: tone))
        try write("notes.wav", Data(String(repeating: "hello, I am not audio at all\n", count: 10).utf8))
        try write("zeros.wav", Data(count: 1_000))
        try write("overlong.wav", Self.wav(samples: tone, declaredBytes: 2_000_000_000))
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func write(_ name: String, _ data: Data) throws {
        try data.write(to: URL(fileURLWithPath: "\(path)/\(name)"))
    }

    /// A 32-bit float WAV written by hand, so its header can lie.
    static func wav(rate: UInt32 = 48_000, channels: UInt16 = 1, samples: [Float], declaredBytes: UInt32? = nil) -> Data {
        var data = Data()
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let bytes = UInt32(samples.count * 4), declared = declaredBytes ?? bytes
        data.append(contentsOf: Array("RIFF".utf8)); put(UInt32(36) &+ declared); data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); put(UInt32(16)); put(UInt16(3)); put(channels); put(rate)
        put(rate &* UInt32(channels) &* 4); put(channels &* 4); put(UInt16(32))
        data.append(contentsOf: Array("data".utf8)); put(declared)
        for sample in samples { put(sample.bitPattern) }
        return data
    }
}

@Suite struct MalformedInputTests {
    @Test(arguments: malformedScenes)
    func eachMalformedSceneIsAUsageErrorNamingItsProblemWithinASecond(_ malformed: Malformed) throws {
        let folder = try MalformedFolder()
        try folder.write("room.yaml", malformed.scene)
        let clock = ContinuousClock()
        let started = clock.now
        let result = try Scenectl.run(["render", folder.path + "/room.yaml", "--out", folder.path + "/out.wav"])
        let elapsed = clock.now - started
        #expect(result.status == 2, "\(malformed.name): exit \(result.status)\n\(result.stderr)")
        #expect(result.stderr.contains(malformed.message), "\(malformed.name): \(result.stderr.prefix(600))")
        #expect(result.stderr.contains("nothing rendered"))
        #expect(elapsed < .seconds(1), "\(malformed.name) took \(elapsed)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/out.wav"))
    }

    @Test func theCorpusIsLargeEnough() {
        #expect(malformedScenes.count >= 40)
    }

    @Test func aSceneThatIsAFolderIsAUsageError() throws {
        let folder = try MalformedFolder()
        let result = try Scenectl.run(["render", folder.path + "/folder.wav", "--out", folder.path + "/out.wav"])
        #expect(result.status == 2)
        #expect(result.stderr.contains("is a folder, not a scene file"), "\(result.stderr)")
    }

    /// A header declaring 2 GB over a tenth of a second of samples: libsndfile
    /// reads what is there, and the room plays that, without reserving the 2 GB.
    @Test func aHeaderDeclaringMoreThanTheFileHoldsPlaysWhatItHolds() throws {
        let folder = try MalformedFolder()
        try folder.write("room.yaml", Data(("duration: 1\n" + Malformed.playing("overlong.wav")).utf8))
        let result = try Scenectl.run(["render", folder.path + "/room.yaml", "--out", folder.path + "/out.wav", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let sources = try result.summary()["sources"] as! [[String: Any]]
        let seconds = try #require(sources.first?["seconds"] as? Double)
        #expect(abs(seconds - 0.1) < 0.001, "\(seconds) s")
    }
}
