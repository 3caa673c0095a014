import Engine
import Scene
import Testing

/// A broken scene and what its one problem must say.
struct Invalid: CustomTestStringConvertible, Sendable {
    let name: String
    let yaml: String
    let line: Int?
    let field: String
    let message: String

    var testDescription: String { name }
}

let validSource = """
  - id: voice
    file: mono.wav
    position: [1, 0, -2]
"""

let invalidScenes: [Invalid] = [
    Invalid(name: "not YAML", yaml: "name: [unclosed\nsources: {", line: 2, field: "", message: "not valid YAML"),
    Invalid(name: "empty document", yaml: "", line: nil, field: "", message: "the scene is empty"),
    Invalid(name: "a list at the top", yaml: "- 1\n- 2\n", line: 1, field: "", message: "expected a mapping of scene keys"),
    Invalid(name: "misspelt key", yaml: "sources:\n  - id: voice\n    file: mono.wav\n    position: [1, 0, -2]\n    gian: -3\n",
            line: 5, field: "sources[0].gian", message: "unknown key; did you mean \"gain\"?"),
    Invalid(name: "unknown top-level key", yaml: "name: x\nreverb_of_doom: 3\n", line: 2, field: "reverb_of_doom", message: "unknown key; known keys:"),
    Invalid(name: "duplicate key", yaml: "name: a\nname: b\n", line: 1, field: "", message: "key appears more than once"),
    Invalid(name: "duplicate id", yaml: "sources:\n\(validSource)\n\(validSource)\n", line: 5, field: "sources[1].id",
            message: "id already used by sources[0] (line 2)"),
    Invalid(name: "id with capitals", yaml: "sources:\n  - id: Voice\n    file: mono.wav\n    position: [1, 0, -2]\n",
            line: 2, field: "sources[0].id", message: "ids are 1-64 characters of a-z, 0-9, _ and -"),
    Invalid(name: "gain of the wrong type", yaml: "sources:\n\(validSource)\n    gain: loud\n", line: 5, field: "sources[0].gain",
            message: "\"loud\": expected a number (dB)"),
    Invalid(name: "quoted number", yaml: "sources:\n\(validSource)\n    gain: \"-3\"\n", line: 5, field: "sources[0].gain",
            message: "expected a number (dB)"),
    Invalid(name: "NaN", yaml: "sources:\n\(validSource)\n    gain: .nan\n", line: 5, field: "sources[0].gain", message: "must be a finite number"),
    Invalid(name: "infinity", yaml: "listener: { position: [0, .inf, 0] }\n", line: 1, field: "listener.position.y", message: "must be a finite number"),
    Invalid(name: "huge coordinate", yaml: "sources:\n  - id: far\n    file: mono.wav\n    position: [1e9, 0, 0]\n", line: 4,
            field: "sources[0].position.x", message: "must be between -10000 and 10000 m"),
    Invalid(name: "negative distance", yaml: "distance: { model: inverse, reference: -1 }\n", line: 1, field: "distance.reference",
            message: "a distance must be greater than 0 m"),
    Invalid(name: "maximum below reference", yaml: "distance: { reference: 5, maximum: 2 }\n", line: 1, field: "distance.maximum",
            message: "must be at least the reference distance (5 m)"),
    Invalid(name: "unknown distance model", yaml: "distance: { model: cubic }\n", line: 1, field: "distance.model",
            message: "\"cubic\": expected one of inverse, linear, exponential, none"),
    Invalid(name: "unknown route", yaml: "output: { route: car }\n", line: 1, field: "output.route",
            message: "expected one of auto, headphones, headset, speakers, builtInSpeakers, externalSpeakers, surround51, surround71, mono"),
    Invalid(name: "position is not three numbers", yaml: "sources:\n  - id: v\n    file: mono.wav\n    position: [1, 2]\n", line: 4,
            field: "sources[0].position", message: "expected [x, y, z] in metres"),
    Invalid(name: "missing file", yaml: "sources:\n  - id: v\n    file: nowhere.wav\n    position: [1, 0, 0]\n", line: 3,
            field: "sources[0].file", message: "\"nowhere.wav\": audio file not found"),
    Invalid(name: "missing id", yaml: "sources:\n  - file: mono.wav\n    position: [1, 0, 0]\n", line: 2, field: "sources[0].id",
            message: "missing required key \"id\""),
    Invalid(name: "point without a position", yaml: "sources:\n  - id: v\n    file: mono.wav\n", line: 2, field: "sources[0]",
            message: "a point source needs a position or a motion"),
    Invalid(name: "bed with a position", yaml: "sources:\n  - id: b\n    file: foa.wav\n    mode: bed\n    position: [0, 0, 0]\n", line: 5,
            field: "sources[0].position", message: "a bed has no position"),
    Invalid(name: "keyframes out of order",
            yaml: "sources:\n  - id: v\n    file: mono.wav\n    motion:\n      keyframes:\n        - { time: 2, position: [0, 0, -1] }\n        - { time: 1, position: [1, 0, -1] }\n",
            line: 7, field: "sources[0].motion.keyframes[1].time", message: "keyframe times must increase"),
    Invalid(name: "negative start", yaml: "sources:\n\(validSource)\n    start: -1\n", line: 5, field: "sources[0].start",
            message: "must be between 0 and 604800 s"),
    Invalid(name: "loop is not a boolean", yaml: "sources:\n\(validSource)\n    loop: sometimes\n", line: 5, field: "sources[0].loop",
            message: "expected true or false"),
    Invalid(name: "unsupported version", yaml: "version: 2\n", line: 1, field: "version", message: "scene format version 1"),
    Invalid(name: "rate too high", yaml: "sources:\n\(validSource)\n    rate: 3\n", line: 5, field: "sources[0].rate",
            message: "must be between 0.5 and 2"),
    Invalid(name: "obstruction above 0 dB", yaml: "sources:\n\(validSource)\n    obstruction: 6\n", line: 5,
            field: "sources[0].obstruction", message: "must be between -100 and 0 dB"),
    Invalid(name: "occlusion below -100 dB", yaml: "sources:\n\(validSource)\n    occlusion: -120\n", line: 5,
            field: "sources[0].occlusion", message: "must be between -100 and 0 dB"),
    Invalid(name: "unknown reverb preset", yaml: "reverb: { preset: bathroom }\n", line: 1, field: "reverb.preset",
            message: "\"bathroom\": expected one of smallRoom, mediumRoom, largeRoom, mediumHall, largeHall, plate, mediumChamber, largeChamber, cathedral"),
    Invalid(name: "reverb without a preset", yaml: "reverb: { level: -6 }\n", line: 1, field: "reverb.preset",
            message: "missing required key \"preset\""),
    // OpenAL refuses an effect slot's gain over 1: the render failed on it.
    Invalid(name: "reverb louder than 0 dB", yaml: "reverb: { preset: plate, level: 6 }\n", line: 1, field: "reverb.level",
            message: "\"6\": must be between -60 and 0 dB"),
    Invalid(name: "occlusion on a bed", yaml: "sources:\n  - id: b\n    file: foa.wav\n    mode: bed\n    occlusion: -10\n", line: 5,
            field: "sources[0].occlusion", message: "a bed is the room's own ambience"),
    Invalid(name: "unknown algorithm", yaml: "sources:\n\(validSource)\n    algorithm: raytraced\n", line: 5,
            field: "sources[0].algorithm", message: "\"raytraced\": expected one of auto, hrtf, panning, soundField, passthrough"),
    Invalid(name: "passthrough bed", yaml: "sources:\n  - id: b\n    file: foa.wav\n    mode: bed\n    algorithm: passthrough\n", line: 5,
            field: "sources[0].algorithm", message: "use mode: bypass to play the file as it is"),
    Invalid(name: "position on bypass", yaml: "sources:\n  - id: m\n    file: mono.wav\n    mode: bypass\n    position: [1, 0, 0]\n", line: 5,
            field: "sources[0].position", message: "plays head-locked as the file is (bypass), so it has no position"),
    Invalid(name: "unknown inHead", yaml: "sources:\n\(validSource)\n    inHead: stereo\n", line: 5,
            field: "sources[0].inHead", message: "\"stereo\": expected one of mono, bypass"),
    Invalid(name: "inHead on a bed", yaml: "sources:\n  - id: b\n    file: foa.wav\n    mode: bed\n    inHead: bypass\n", line: 5,
            field: "sources[0].inHead", message: "only a point source can be inside the listener's head"),
    Invalid(name: "occlusion on bypass", yaml: "sources:\n  - id: m\n    file: mono.wav\n    mode: bypass\n    occlusion: -12\n", line: 5,
            field: "sources[0].occlusion", message: "bypass plays the file as it is, with no reverb or occlusion"),
    Invalid(name: "rate on passthrough", yaml: "sources:\n  - id: m\n    file: mono.wav\n    algorithm: passthrough\n    rate: 1.5\n", line: 5,
            field: "sources[0].rate", message: "rate needs a spatial algorithm"),
    Invalid(name: "3 channels played as they are", yaml: "sources:\n  - id: m\n    file: three.wav\n    position: [1, 0, 0]\n", line: 3,
            field: "sources[0].file", message: "which needs 1, 2, 4, 6 or 8 channels (mono, stereo, quad, 5.1, 7.1); this file has 3"),
    Invalid(name: "zero-length audio", yaml: "sources:\n  - id: v\n    file: empty.wav\n    position: [1, 0, 0]\n", line: 3,
            field: "sources[0].file", message: "holds no audio frames"),
    Invalid(name: "corrupt audio", yaml: "sources:\n  - id: v\n    file: corrupt.wav\n    position: [1, 0, 0]\n", line: 3,
            field: "sources[0].file", message: "cannot read audio:"),
    Invalid(name: "text with a .wav name", yaml: "sources:\n  - id: v\n    file: notes.wav\n    position: [1, 0, 0]\n", line: 3,
            field: "sources[0].file", message: "cannot read audio:"),
    Invalid(name: "3-channel bed", yaml: "sources:\n  - id: b\n    file: three.wav\n    mode: bed\n", line: 3, field: "sources[0].file",
            message: "a bed needs 4, 9 or 16 channels of AmbiX (ACN order, SN3D), or a speaker layout: 2 (stereo), 4 with layout: quad, 6 (5.1) or 8 (7.1); this file has 3"),
    Invalid(name: "unknown ducking level", yaml: "voice:\n  ducking:\n    level: loud\n", line: 3, field: "voice.ducking.level",
            message: "\"loud\": expected one of default, min, mid, max"),
    Invalid(name: "unknown aec mode", yaml: "voice:\n  aec: maybe\n", line: 2, field: "voice.aec", message: "\"maybe\": expected one of off, on, auto"),
    Invalid(name: "ducking level above 0 dB", yaml: "voice:\n  ducking: { levels: { mid: 6 } }\n", line: 2,
            field: "voice.ducking.levels.mid", message: "must be between -60 and 0 dB"),
    Invalid(name: "stereo microphone", yaml: "voice:\n  mic: foa.wav\n", line: 2, field: "voice.mic",
            message: "a microphone recording has one channel; this file has 4"),
    Invalid(name: "participant named like a source", yaml: "sources:\n\(validSource)\nvoice:\n  participants:\n    - { id: voice, file: mono.wav, position: [0, 0, -1] }\n",
            line: 7, field: "voice.participants[0].id", message: "id already used by a source or participant"),
    Invalid(name: "unknown category", yaml: "sources:\n\(validSource)\n    category: music\n", line: 5, field: "sources[0].category",
            message: "expected one of scene, voice, prompt"),
    Invalid(name: "mumble server with a bad port", yaml: "voice:\n  network:\n    mumble: { server: \"voice.example.org:99999\", channel: T, user: a }\n",
            line: 3, field: "voice.network.mumble.server", message: "\"voice.example.org:99999\": the port must be a number from 1 to 65535"),
    Invalid(name: "mumble IPv6 without brackets", yaml: "voice:\n  network:\n    mumble: { server: \"::1:64738\", channel: T, user: a }\n",
            line: 3, field: "voice.network.mumble.server", message: "write an IPv6 address in brackets"),
    Invalid(name: "mumble without a channel", yaml: "voice:\n  network:\n    mumble: { server: localhost, user: a }\n",
            line: 3, field: "voice.network.mumble.channel", message: "missing required key \"channel\""),
    Invalid(name: "mumble with an empty user", yaml: "voice:\n  network:\n    mumble: { server: localhost, channel: T, user: \" \" }\n",
            line: 3, field: "voice.network.mumble.user", message: "must not be empty"),
    Invalid(name: "mumble bitrate too high", yaml: "voice:\n  network:\n    mumble: { server: localhost, channel: T, user: a, bitrate: 256 }\n",
            line: 3, field: "voice.network.mumble.bitrate", message: "must be between 8 and 128 kbit/s"),
    Invalid(name: "mumble bitrate not whole", yaml: "voice:\n  network:\n    mumble: { server: localhost, channel: T, user: a, bitrate: 40.5 }\n",
            line: 3, field: "voice.network.mumble.bitrate", message: "must be a whole number of kbit/s"),
    Invalid(name: "mumble fingerprint too short", yaml: "voice:\n  network:\n    mumble: { server: localhost, channel: T, user: a, fingerprint: abc }\n",
            line: 3, field: "voice.network.mumble.fingerprint", message: "expected the certificate's SHA-256: 64 hex digits"),
    Invalid(name: "mumble transmission unknown", yaml: "voice:\n  network:\n    mumble: { server: localhost, channel: T, user: a, transmission: always }\n",
            line: 3, field: "voice.network.mumble.transmission", message: "expected one of voiceActivity, pushToTalk"),
    Invalid(name: "mumble key misspelt", yaml: "voice:\n  network:\n    mumble: { server: localhost, channel: T, user: a, pasword: x }\n",
            line: 3, field: "voice.network.mumble.pasword", message: "did you mean \"password\"?"),
    Invalid(name: "network other than mumble", yaml: "voice:\n  network:\n    teamspeak: {}\n",
            line: 3, field: "voice.network.teamspeak", message: "unknown key"),
    Invalid(name: "prompt without its short variant", yaml: "prompts:\n  - { id: hi, normal: mono.wav }\n", line: 2, field: "prompts[0].short",
            message: "missing required key \"short\""),
]

@Suite struct InvalidSceneTests {
    @Test(arguments: invalidScenes)
    func eachInvalidSceneNamesItsProblem(_ scene: Invalid) throws {
        let folder = try SceneFolder()
        let problems = folder.problems(scene.yaml)
        try #require(problems.count == 1, "\(problems)")
        let problem = problems[0]
        #expect(problem.file.hasSuffix("room.yaml"))
        #expect(problem.line == scene.line, "\(problem)")
        #expect(problem.field == scene.field, "\(problem)")
        #expect(problem.description.contains(scene.message), "\(problem)")
    }

    @Test func everyProblemIsReportedAtOnce() throws {
        let folder = try SceneFolder()
        let problems = folder.problems("""
        distance: { reference: 0 }
        sources:
          - id: a
            file: missing.wav
            position: [0, 0, .nan]
            gian: 2
          - id: b
            file: three.wav
            mode: bed
          - id: a
            file: mono.wav
            position: [1, 2]
        """)
        #expect(problems.map(\.field) == ["distance.reference", "sources[0].file", "sources[0].position.z", "sources[0].gian",
                                          "sources[1].file", "sources[2].id", "sources[2].position"],
                "\(problems)")
    }

    @Test func deepNestingIsRefusedBeforeParsing() throws {
        let folder = try SceneFolder()
        let problems = folder.problems("name: " + String(repeating: "[", count: 10_000))
        #expect(problems.count == 1 && problems[0].description.contains("nested deeper than"))
    }
}

@Suite struct ValidSceneTests {
    @Test func aFullSceneLoadsWithItsValues() throws {
        let folder = try SceneFolder()
        let room = try folder.load("""
        version: 1
        name: Hall
        duration: 12
        output: { route: speakers }
        listener: { position: [1, 2, 3], yaw: 90, pitch: 10, roll: -5 }
        distance: { model: exponential, reference: 2, maximum: 30, rolloff: 0.5 }
        sources:
          - id: talker
            file: mono.wav
            position: [2, 0, -1]
            gain: -3
            loop: true
            start: 0.5
          - id: walker
            file: slow.wav
            motion: { keyframes: [{ time: 0, position: [-1, 0, 0] }, { time: 2, position: [1, 0, 0] }], repeat: true }
          - id: air
            file: foa.wav
            mode: bed
            yaw: 45
            gain: -12
        """)
        let scene = room.scene
        #expect(scene.name == "Hall" && scene.duration == 12 && scene.route == .speakers)
        #expect(scene.listenerPosition == [1, 2, 3] && scene.listenerOrientation.yaw == 90 && scene.listenerOrientation.roll == -5)
        #expect(scene.distance.law == .exponential && scene.distance.reference == 2 && scene.distance.rolloff == 0.5)
        #expect(room.sources.map(\.description.id) == ["talker", "walker", "air"])
        #expect(room.sources[0].description.gainDecibels == -3 && room.sources[0].description.start == 0.5)
        #expect(room.sources[1].description.placement.position(at: 3) == [0, 0, 0])
        // The 22.05 kHz file was converted to the engine's rate, keeping its duration.
        #expect(room.sources[1].wasResampled && room.sources[1].fileSampleRate == 22_050)
        #expect(abs(room.sources[1].audio.frameCount - 4_800 * 48_000 / 22_050) <= 1)
        #expect(room.sources[2].audio.channelCount == 4 && room.sources[2].description.orientation.yaw == 45)
    }

    @Test func algorithmsInHeadAndPassthroughPathsLoad() throws {
        let room = try SceneFolder().load("""
        reverb: { preset: plate }
        sources:
          - { id: field, file: mono.wav, position: [0, 0, -1], algorithm: soundField, inHead: bypass }
          - { id: music, file: mono.wav, algorithm: passthrough, reverbBlend: 0.4, occlusion: -6 }
          - { id: ui, file: mono.wav, mode: bypass }
          - { id: air, file: foa.wav, mode: bed, algorithm: soundField }
        """)
        let sources = room.sources
        #expect(sources.map(\.rendering) == [.point(.soundField), .passthrough, .passthrough, .bed(.soundField)])
        #expect(sources[0].description.inHead == .bypass && sources[1].description.inHead == .mono)
        #expect(sources[1].description.paths == RoomPaths(reverbBlend: 0.4, obstruction: 0, occlusion: -6))
    }

    /// A room saved after playing for hours writes its joined sources' start
    /// and keyframes on its timeline: those load again.
    @Test func timesHoursIntoTheRoomLoad() throws {
        let room = try SceneFolder().load("""
        sources:
          - { id: late, file: mono.wav, position: [1, 0, 0], start: 9000.5 }
          - id: walker
            file: mono.wav
            motion: { keyframes: [{ time: 8000, position: [0, 0, -1] }, { time: 8000.5, position: [1, 0, -1] }] }
        """)
        #expect(room.sources[0].description.start == 9000.5)
        guard case .moving(let path) = room.sources[1].description.placement else { Issue.record("no keyframes"); return }
        #expect(path.keyframes.map(\.time) == [8000, 8000.5])
    }

    @Test func aVoiceSectionAndPromptsLoad() throws {
        let room = try SceneFolder().load("""
        sources:
          - { id: music, file: mono.wav, mode: bypass }
          - { id: host, file: mono.wav, position: [0, 0, -1], category: voice }
        voice:
          mic: mono.wav
          aec: on
          muted: true
          ducking: { level: max, advanced: true, levels: { max: -30 } }
          participants:
            - { id: ann, file: slow.wav, position: [2, 0, -1] }
        prompts:
          - { id: welcome, normal: mono.wav, short: slow.wav }
        """)
        let voice = try #require(room.scene.voice)
        #expect(voice.echoCancellation == .on && voice.muted && voice.advancedDucking && voice.duckingDecibels == -30)
        #expect(room.microphone?.count == 4_800)
        #expect(room.sources.map(\.description.id) == ["music", "host", "ann"])
        #expect(room.sources.map(\.description.category) == [.scene, .voice, .voice])
        #expect(room.prompts.count == 1 && abs(room.prompts[0].short.count - 4_800 * 48_000 / 22_050) <= 1)
    }

    @Test func aMumbleSectionLoadsAndSavesAsItWasGiven() throws {
        let folder = try SceneFolder()
        let room = try folder.load("""
        sources: []
        voice:
          network:
            mumble:
              server: "[::1]:6000"
              channel: Tavern Hall
              user: alice
              password: "p: w"
              context: "game\\0tavern"
              fingerprint: "AB:CD:\(String(repeating: "ef", count: 30))"
              transmission: pushToTalk
              bitrate: 24
        """)
        let mumble = try #require(room.scene.voice?.mumble)
        #expect(mumble.host == "::1" && mumble.port == 6000 && mumble.server == "[::1]:6000")
        #expect(mumble.channel == "Tavern Hall" && mumble.user == "alice" && mumble.password == "p: w")
        #expect(mumble.context == "game\u{0}tavern" && mumble.transmission == .pushToTalk && mumble.bitrateKbps == 24)
        #expect(mumble.fingerprint == "abcd" + String(repeating: "ef", count: 30))
        let saved = SceneWriter.yaml(room.scene, savedAt: "/tmp/saved.yaml")
        let again = try folder.load(saved)
        #expect(again.scene.voice?.mumble == mumble, "\(saved)")
        let defaults = try folder.load("voice:\n  network:\n    mumble: { server: voice.example.org, channel: T, user: a }\n")
        #expect(defaults.scene.voice?.mumble == MumbleSettings(host: "voice.example.org", channel: "T", user: "a"))
    }

    /// A scene's control characters reach the terminal escaped, in the value and in the reason
    /// alike: they could clear the screen or rename the window. A NUL names no file.
    @Test func controlCharactersInAProblemAreEscaped() throws {
        let folder = try SceneFolder()
        let problems = folder.problems("sources:\n  - { id: \"a\\e[2Jb\", file: \"x\\e]0;title\\a.wav\", position: [0, 0, -1] }\n"
                                       + "  - { id: c, file: \"mono.wav\\0x\", position: [0, 0, -1] }\n")
        let said = problems.map(\.description).joined(separator: "\n")
        #expect(!said.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" }, "\(said.debugDescription)")
        #expect(said.contains("\\u{1b}]0;title\\u{7}.wav") && said.contains("audio file not found"), "\(said)")
        #expect(said.contains("holds a NUL character"), "\(said)")
    }

    /// A bed plays at its rate as a point source does; a saved room keeps it.
    @Test func aBedSavesItsRate() throws {
        let folder = try SceneFolder()
        let room = try folder.load("sources:\n  - { id: b, file: foa.wav, mode: bed, rate: 1.5 }\n  - { id: p, file: mono.wav, position: [0, 0, -1], rate: 0.75 }\n")
        let saved = SceneWriter.yaml(room.scene, savedAt: folder.path + "/saved.yaml")
        let again = try folder.load(saved, name: "saved.yaml")
        #expect(again.scene.sources.map(\.rate) == [1.5, 0.75], "\(saved)")
    }

    @Test func jsonIsAcceptedBecauseItIsYAML() throws {
        let folder = try SceneFolder()
        let room = try folder.load(#"{"name": "J", "sources": [{"id": "v", "file": "mono.wav", "position": [0, 0, -1]}]}"#,
                                   name: "room.json")
        #expect(room.scene.name == "J" && room.sources.count == 1)
    }
}
