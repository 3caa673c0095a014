import AudioCore
import Devices
import Scene

/// A scene with its audio decoded and converted to the engine's format.
public struct Room: Sendable {
    /// The engine's sample rate: every source is converted to it on load.
    public static let sampleRate = 48_000

    public var scene: SceneDescription
    public var sources: [RoomSource]

    public init(scene: SceneDescription, sources: [RoomSource]) {
        self.scene = scene
        self.sources = sources
    }

    /// Reads, validates and loads the scene at `path`. Audio headers are
    /// checked during validation, so every problem is reported in one pass.
    public static func load(path: String) throws -> Room {
        try load(SceneLoader.load(path: path, inspectAudio: inspectAudio))
    }

    /// What validation learns of an audio file, in the words the engine refuses it with.
    public static let inspectAudio: AudioInspector = { path in
        do {
            let header = try AudioFileReader.header(path: path)
            return AudioFileInfo(channels: header.channels, sampleRate: header.sampleRate, frames: header.frames)
        } catch let problem as AudioFileProblem {
            throw AudioFileRejection(reason: problem.reason)
        } catch let error as SndFileError {
            throw AudioFileRejection(reason: "cannot read audio: \(error.reason)")
        }
    }

    /// Loads every audio file the scene names. Problems with the audio are
    /// reported at the scene's `file` field, all of them at once.
    public static func load(_ scene: SceneDescription) throws -> Room {
        var issues: [SceneIssue] = []
        var decoded: [String: Result<DecodedAudio, Error>] = [:]
        var sources: [RoomSource] = []
        for source in scene.sources {
            let result = decoded[source.audioPath] ?? Result { try AudioFileReader.read(path: source.audioPath) }
            decoded[source.audioPath] = result
            do {
                sources.append(try RoomSource(source, decoded: result.get()))
            } catch let problem as AudioFileProblem {
                issues.append(source.audioField.issue(value: source.audioPath, problem.reason))
            } catch let error as SndFileError {
                issues.append(source.audioField.issue(value: source.audioPath, "cannot read audio: \(error.reason)"))
            } catch let issue as SceneIssue {
                issues.append(issue)
            }
        }
        guard issues.isEmpty else { throw SceneValidationError(issues: issues) }
        return Room(scene: scene, sources: sources)
    }
}

/// One source's description and its audio at the engine's rate.
public struct RoomSource: Sendable {
    public var description: SourceDescription
    /// Mono for point sources; the file's channels for beds and passthrough.
    public var audio: AudioBuffer
    /// How the engine renders it.
    public var rendering: SourceRendering
    /// What a bed's channels are; nil for point sources.
    public var bedLayout: BedLayout?
    /// The file's own channel count and rate, for the summary.
    public var fileChannels: Int
    public var fileSampleRate: Int

    public init(_ description: SourceDescription, audio: AudioBuffer, fileChannels: Int? = nil,
                fileSampleRate: Int = Room.sampleRate) {
        self.description = description
        self.audio = audio
        self.fileChannels = fileChannels ?? audio.channelCount
        self.fileSampleRate = fileSampleRate
        rendering = description.rendering(channels: self.fileChannels)
        if description.mode == .bed, case .success(let layout) = BedLayout.resolve(description.bedLayout, channels: audio.channelCount) {
            bedLayout = layout
        }
    }

    init(_ description: SourceDescription, decoded: DecodedAudio) throws {
        let channels = decoded.buffer.channelCount
        var audio = decoded.buffer
        if let problem = description.channelProblem(channels) {
            throw description.audioField.issue(value: description.audioPath, problem)
        }
        if case .point = description.rendering(channels: channels) { audio = audio.downmixedToMono() }
        do {
            audio = try SampleRateConverter.convert(audio, from: decoded.sampleRate, to: Room.sampleRate)
        } catch {
            throw description.audioField.issue(value: description.audioPath, "cannot resample: \(error)")
        }
        self.init(description, audio: audio, fileChannels: channels, fileSampleRate: decoded.sampleRate)
    }

    public var wasResampled: Bool { fileSampleRate != Room.sampleRate }
}
