import AudioCore

/// What a source is to the voice bus: only the scene is ducked under voice.
public enum SourceCategory: String, Sendable, CaseIterable, BitwiseCopyable {
    /// The room's own sound, "other audio": ducked while people talk.
    case scene
    /// Someone talking.
    case voice
    /// The app's spoken prompts.
    case prompt
}

/// The room's voice session: its microphone, the uplink's settings,
/// ducking, and the remote talkers placed in the room.
public struct VoiceDescription: Sendable {
    public enum Microphone: Sendable, Equatable {
        /// The system's capture device; offline there is none.
        case device
        case file(path: String)
        case none
    }

    public var microphone = Microphone.device
    public var echoCancellation = EchoCancellationMode.auto
    public var muted = false
    public var duckingLevel = DuckingLevel.default
    public var advancedDucking = false
    public var duckingLevels = DuckingLevels()
    public var participants: [Participant] = []

    public init() {}

    public var duckingDecibels: Double { duckingLevels[duckingLevel] }
}

/// A remote talker, heard as a voice at a place in the room.
public struct Participant: Sendable {
    public var id: String
    public var audioPath: String
    public var audioField: FieldLocation
    public var position: Position

    public init(id: String, audioPath: String, audioField: FieldLocation, position: Position) {
        self.id = id
        self.audioPath = audioPath
        self.audioField = audioField
        self.position = position
    }

    /// The participant as a source of the room: a point in the voice category.
    public var source: SourceDescription {
        SourceDescription(id: id, audioPath: audioPath, audioField: audioField, mode: .point, placement: .fixed(position),
                          paths: RoomPaths(reverbBlend: 0.1, obstruction: 0, occlusion: 0), category: .voice)
    }
}

/// A spoken prompt in two lengths; which plays depends on the prompt style.
public struct PromptDescription: Sendable {
    public var id: String
    public var normalPath: String
    public var shortPath: String
    public var normalField: FieldLocation
    public var shortField: FieldLocation

    public init(id: String, normalPath: String, shortPath: String, normalField: FieldLocation, shortField: FieldLocation) {
        self.id = id
        self.normalPath = normalPath
        self.shortPath = shortPath
        self.normalField = normalField
        self.shortField = shortField
    }
}
