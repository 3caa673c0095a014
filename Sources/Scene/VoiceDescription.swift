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
    /// Where the uplink's microphone signal comes from (`voice.mic`).
    public enum Microphone: Sendable, Equatable {
        /// The system's capture device; offline there is none.
        case device
        /// A mono audio file of any rate, its path resolved against the scene file's folder.
        case file(path: String)
        /// No microphone (`mic: none`).
        case none
    }

    /// Where the microphone signal comes from (`voice.mic`); the capture device by default.
    public var microphone = Microphone.device
    /// Whether the uplink cancels echo (`voice.aec`); `auto` by default.
    public var echoCancellation = EchoCancellationMode.auto
    /// Whether the user is muted (`voice.muted`): the uplink carries silence and the muted-talker events still come.
    public var muted = false
    /// Which depth the scene ducks to under voice (`voice.ducking.level`); the `default` level by default.
    public var duckingLevel = DuckingLevel.default
    /// `voice.ducking.advanced`: false keeps the scene ducked while the session is active;
    /// true ducks it while anyone talks and brings it back to 0 dB when nobody does.
    public var advancedDucking = false
    /// The room's depth for each level in dB (`voice.ducking.levels`).
    public var duckingLevels = DuckingLevels()
    /// Remote talkers (`voice.participants`), played as point sources of category `voice`; none by default.
    public var participants: [Participant] = []
    /// The Mumble server whose channel the room joins (`voice.network.mumble`); none by default.
    public var mumble: MumbleSettings?

    /// Makes a session with the scene file's defaults: the capture device, `aec: auto`, unmuted, the `default` level.
    public init() {}

    /// The depth in dB of the chosen ducking level.
    public var duckingDecibels: Double { duckingLevels[duckingLevel] }
}

/// A remote talker, heard as a voice at a place in the room.
public struct Participant: Sendable {
    /// Unique name (`id`), shared with the sources' namespace.
    public var id: String
    /// Path of the talker's audio file (`file`), resolved against the scene file's folder.
    public var audioPath: String
    /// Where the `file` field stands, for problems found in the audio itself.
    public var audioField: FieldLocation
    /// Where the talker stands, in metres (`position`).
    public var position: Position

    /// Makes a participant from its id, its audio file and where it stands.
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
    /// The name the app triggers the prompt by (`id`), unique among prompts.
    public var id: String
    /// Path of the long variant's audio (`normal`), resolved against the scene file's folder.
    public var normalPath: String
    /// Path of the short variant's audio (`short`), resolved against the scene file's folder.
    public var shortPath: String
    /// Where the `normal` field stands, for problems found in its audio.
    public var normalField: FieldLocation
    /// Where the `short` field stands, for problems found in its audio.
    public var shortField: FieldLocation

    /// Makes a prompt from its id and its two variants' files and fields.
    public init(id: String, normalPath: String, shortPath: String, normalField: FieldLocation, shortField: FieldLocation) {
        self.id = id
        self.normalPath = normalPath
        self.shortPath = shortPath
        self.normalField = normalField
        self.shortField = shortField
    }
}
