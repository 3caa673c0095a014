// The words a scene file uses for its room: the output route it asks for,
// how level falls with distance, and its reverb. The renderer has its own
// types for these; the engine turns one into the other.

/// The output route a scene asks for.
public enum RouteName: String, Sendable, CaseIterable {
    /// Whatever the output device is.
    case auto
    case headphones, headset
    case speakers, builtInSpeakers, externalSpeakers
    case surround51, surround71
    case mono
}

/// How a point source's level falls with distance: OpenAL's clamped models.
public struct DistanceAttenuation: Sendable, Equatable {
    public enum Law: String, Sendable, CaseIterable {
        case inverse, linear, exponential, none
    }

    public var law: Law
    /// Metres within which a source is at its full level.
    public var reference: Double
    /// Metres beyond which the level falls no further.
    public var maximum: Double
    public var rolloff: Double

    public init(law: Law = .inverse, reference: Double = 1, maximum: Double = 50, rolloff: Double = 1) {
        self.law = law
        self.reference = reference
        self.maximum = maximum
        self.rolloff = rolloff
    }
}

/// The room's reverberation: a preset and the level of its return.
public struct RoomReverb: Sendable, Equatable {
    public enum Preset: String, Sendable, CaseIterable {
        case smallRoom, mediumRoom, largeRoom, mediumHall, largeHall, plate, mediumChamber, largeChamber, cathedral
    }

    public var preset: Preset
    /// Level of the reverb return, in dB.
    public var levelDecibels: Double

    public init(preset: Preset, levelDecibels: Double = 0) {
        self.preset = preset
        self.levelDecibels = levelDecibels
    }
}
