import AudioCore
import Devices
import Scene
import Spatial

/// A scene with its audio decoded and converted to the engine's format.
public struct Room: Sendable {
    /// The engine's sample rate: every source is converted to it on load.
    public static let sampleRate = 48_000

    /// The frame nearest `seconds` into the room's timeline. Callers bound `seconds` first (an hour of
    /// rendering, a week of timeline): past about 1.9e14 s there are more frames than an `Int` holds.
    public static func frame(atSeconds seconds: Double) -> Int { Int((seconds * Double(sampleRate)).rounded()) }

    /// The validated scene the room was loaded from.
    public var scene: SceneDescription
    /// The scene's sources, then the voice session's participants.
    public var sources: [RoomSource]
    /// The voice prompts the room can play.
    public var prompts: [RoomPrompt]
    /// The voice section's microphone file, mono at the engine's rate.
    public var microphone: [Float]?
    /// Talkers of the voice session that now play from a place for joined
    /// sources: out of `sources`, their audio stays here for their voice activity.
    public var rejoinedTalkers: [RoomSource] = []

    /// A room from a scene and its decoded audio, for rooms built in code.
    public init(scene: SceneDescription, sources: [RoomSource], prompts: [RoomPrompt] = [], microphone: [Float]? = nil) {
        self.scene = scene
        self.sources = sources
        self.prompts = prompts
        self.microphone = microphone
    }

    /// The files the room reads, each once however many sources play it:
    /// its scene, its sources' and prompts' audio, its microphone recording.
    /// No output may be one of them.
    public var inputFiles: [String] {
        var files = [scene.file] + sources.map(\.description.audioPath) + rejoinedTalkers.map(\.description.audioPath)
        files += scene.prompts.flatMap { [$0.normalPath, $0.shortPath] }
        if case .file(let path)? = scene.voice?.microphone { files.append(path) }
        var seen: Set<String> = []
        return files.filter { !$0.isEmpty && seen.insert($0).inserted }
    }

    /// The route the scene asks for, in the renderer's terms.
    public var requestedRoute: OutputRoute { OutputRoute(scene.route) }

    /// How level falls with distance in this room, in the renderer's terms.
    public var distanceModel: DistanceModel { DistanceModel(scene.distance) }

    /// Reads, validates and loads the scene at `path`. Audio headers are
    /// checked during validation, so every problem is reported in one pass.
    public static func load(path: String, budget: MemoryBudget = .standard) throws -> Room {
        try load(SceneLoader.load(path: path, inspectAudio: inspectAudio), budget: budget)
    }

    /// What validation learns of an audio file, in the words the engine refuses it with.
    public static let inspectAudio: AudioInspector = { path in
        do {
            let header = try AudioFileReader.header(path: path)
            return AudioFileInfo(channels: header.channels, sampleRate: header.sampleRate, frames: header.frames)
        } catch {
            throw AudioFileRejection(reason: refusal(error))
        }
    }

    /// Why the audio layer refused a file, in the words scene errors give.
    static func refusal(_ error: Error) -> String {
        switch error {
        case let problem as AudioFileProblem: problem.reason
        case let error as SndFileError: "cannot read audio: \(error.reason)"
        default: "cannot load: \(error)"
        }
    }

    /// Loads every audio file the scene names, each decoded once and
    /// shared by every source that plays it the same way. Problems with the
    /// audio are reported at the scene's `file` field, all of them at once;
    /// audio over `budget` is refused before any is decoded.
    public static func load(_ scene: SceneDescription, budget: MemoryBudget = .standard) throws -> Room {
        let descriptions = scene.sources + (scene.voice?.participants.map(\.source) ?? [])
        var named = descriptions.map { ($0.audioPath, $0.audioField) }
        named += scene.prompts.flatMap { [($0.normalPath, $0.normalField), ($0.shortPath, $0.shortField)] }
        if case .file(let path)? = scene.voice?.microphone {
            named.append((path, FieldLocation(file: scene.file, line: nil, field: "voice.mic")))
        }
        var demands: [MemoryBudget.Demand] = []
        for (path, field) in named where !demands.contains(where: { $0.path == path }) {
            if let demand = MemoryBudget.Demand(path: path, field: field) { demands.append(demand) }
        }
        let allowance = try budget.admit(demands)

        var issues: [SceneIssue] = []
        var decoded: [String: Result<DecodedAudio, Error>] = [:]
        func read(_ path: String) -> Result<DecodedAudio, Error> {
            let result = decoded[path] ?? Result {
                try AudioFileReader.read(path: path, byteLimit: allowance[path] ?? budget.bytes, engineRate: Room.sampleRate)
            }
            decoded[path] = result
            return result
        }
        /// Runs `load`, turning what the audio refuses into an issue at `field`.
        func attempt<Value>(_ field: FieldLocation, _ path: String, _ load: () throws -> Value) -> Value? {
            do {
                return try load()
            } catch let issue as SceneIssue {
                issues.append(issue)
            } catch {
                issues.append(field.issue(value: path, refusal(error)))
            }
            return nil
        }
        /// A file at the engine's rate, mono or as it is: one copy of each, however many play it.
        var converted: [String: AudioBuffer] = [:]
        func audio(_ path: String, mono: Bool) throws -> AudioBuffer {
            let key = "\(mono ? "mono" : "as is") \(path)"
            if let audio = converted[key] { return audio }
            let audio = try RoomSource.engineAudio(read(path).get(), mono: mono)
            converted[key] = audio
            return audio
        }
        /// A file as mono at the engine's rate.
        func mono(_ path: String) throws -> [Float] {
            try audio(path, mono: true).samples
        }

        let sources = descriptions.compactMap { source in
            attempt(source.audioField, source.audioPath) {
                let file = try read(source.audioPath).get()
                return try RoomSource(source, fileChannels: file.buffer.channelCount, fileSampleRate: file.sampleRate) { mono in
                    try audio(source.audioPath, mono: mono)
                }
            }
        }
        let prompts = scene.prompts.compactMap { prompt -> RoomPrompt? in
            let normal = attempt(prompt.normalField, prompt.normalPath) { try mono(prompt.normalPath) }
            let short = attempt(prompt.shortField, prompt.shortPath) { try mono(prompt.shortPath) }
            guard let normal, let short else { return nil }
            return RoomPrompt(id: prompt.id, normal: normal, short: short)
        }
        var microphone: [Float]?
        if case .file(let path)? = scene.voice?.microphone {
            let field = FieldLocation(file: scene.file, line: nil, field: "voice.mic")
            microphone = attempt(field, path) { try mono(path) }
        }
        guard issues.isEmpty else { throw SceneValidationError(issues: issues) }
        return Room(scene: scene, sources: sources, prompts: prompts, microphone: microphone)
    }

    /// The room with only the sources of `categories`, for a mix of its own.
    func only(_ categories: Set<SourceCategory>) -> Room {
        var room = self
        room.sources = sources.filter { categories.contains($0.description.category) }
        return room
    }
}

/// A prompt's two variants, mono at the engine's rate.
public struct RoomPrompt: Sendable {
    /// The id the app triggers it by.
    public var id: String
    /// The full wording and the short one.
    public var normal: [Float]
    /// The short wording, for the short prompt style.
    public var short: [Float]

    /// Prompt `id` with its two variants.
    public init(id: String, normal: [Float], short: [Float]) {
        self.id = id
        self.normal = normal
        self.short = short
    }
}

/// One source's description and its audio at the engine's rate.
public struct RoomSource: Sendable {
    /// The source as the scene describes it.
    public var description: SourceDescription
    /// Mono for point sources; the file's channels for beds and passthrough.
    public var audio: AudioBuffer
    /// How the engine renders it.
    public var rendering: SourceRendering
    /// What a bed's channels are; nil for point sources.
    public var bedLayout: BedLayout?
    /// The file's own channel count and rate, for the summary.
    public var fileChannels: Int
    /// The file's own rate, before conversion to the engine's.
    public var fileSampleRate: Int

    /// Corrupt samples in `audio` (NaN, infinite, absurdly loud) are
    /// silenced: one reaching OpenAL would poison its filters and, through
    /// its limiter, every source on the same bus from then on.
    public init(_ description: SourceDescription, audio: AudioBuffer, fileChannels: Int? = nil,
                fileSampleRate: Int = Room.sampleRate) {
        var audio = audio
        audio.silenceCorruptSamples()
        self.init(description, silenced: audio, fileChannels: fileChannels ?? audio.channelCount, fileSampleRate: fileSampleRate)
    }

    /// A source of `audio` whose corrupt samples are already silenced: the
    /// sources of one file take its storage as it is, with no pass over it each.
    private init(_ description: SourceDescription, silenced audio: AudioBuffer, fileChannels: Int, fileSampleRate: Int) {
        self.description = description
        self.audio = audio
        self.fileChannels = fileChannels
        self.fileSampleRate = fileSampleRate
        rendering = description.rendering(channels: fileChannels)
        if description.mode == .bed, case .success(let layout) = BedLayout.resolve(description.bedLayout, channels: audio.channelCount) {
            bedLayout = layout
        }
    }

    init(_ description: SourceDescription, decoded: DecodedAudio) throws {
        try self.init(description, fileChannels: decoded.buffer.channelCount, fileSampleRate: decoded.sampleRate) { mono in
            try RoomSource.engineAudio(decoded, mono: mono)
        }
    }

    /// `decoded` at the engine's rate, downmixed to mono or as it is, with
    /// any sample its conversion carried past the corrupt limit silenced.
    static func engineAudio(_ decoded: DecodedAudio, mono: Bool) throws -> AudioBuffer {
        var audio = try decoded.converted(to: Room.sampleRate, mono: mono)
        audio.silenceCorruptSamples()
        return audio
    }

    /// A source of a file of `fileChannels` at `fileSampleRate`, whose audio
    /// at the engine's rate `audio` gives (as `engineAudio` makes it),
    /// downmixed to mono or as it is.
    init(_ description: SourceDescription, fileChannels channels: Int, fileSampleRate: Int,
         audio: (_ mono: Bool) throws -> AudioBuffer) throws {
        if let problem = description.channelProblem(channels) {
            throw description.audioField.issue(value: description.audioPath, problem)
        }
        let mono = if case .point = description.rendering(channels: channels) { true } else { false }
        let converted: AudioBuffer
        do {
            converted = try audio(mono)
        } catch let problem as SpeexResamplerError {
            throw description.audioField.issue(value: description.audioPath, "cannot resample: \(problem)")
        }
        self.init(description, silenced: converted, fileChannels: channels, fileSampleRate: fileSampleRate)
    }

    /// Whether the file's rate was converted.
    public var wasResampled: Bool { fileSampleRate != Room.sampleRate }
}
