// The words a scene file uses for its room: the output route it asks for,
// how level falls with distance, and its reverb. The renderer has its own
// types for these; the engine turns one into the other.

/// The output route a scene asks for.
public enum RouteName: String, Sendable, CaseIterable {
    /// Whatever the output device is.
    case auto
    /// Headphones: two channels, HRTF binaural unless a source asks otherwise.
    case headphones
    /// Headphones with a microphone: two channels, HRTF binaural like `headphones`.
    case headset
    /// Stereo speakers of a kind not known: two channels, panned.
    case speakers
    /// A laptop's or monitor's own stereo speakers: two channels, panned.
    case builtInSpeakers
    /// Stereo speakers standing apart from the listener: two channels, panned.
    case externalSpeakers
    /// Six channels (L R C LFE SL SR), panned over the real layout.
    case surround51
    /// Eight channels (L R C LFE BL BR SL SR), panned over the real layout.
    case surround71
    /// One channel: a downmix with every direction at the same level.
    case mono
}

/// How a point source's level falls with distance: OpenAL's clamped models.
public struct DistanceAttenuation: Sendable, Equatable {
    /// A distance model, as the scene file's `distance.model` names it.
    public enum Law: String, Sendable, CaseIterable {
        /// Gain `reference / (reference + rolloff * (d - reference))`: 6 dB less per doubling of distance at rolloff 1.
        case inverse
        /// Gain `1 - rolloff * (d - reference) / (maximum - reference)`, falling in a straight line with distance.
        case linear
        /// Gain `(d / reference) ^ -rolloff`.
        case exponential
        /// No attenuation: a source keeps its level at any distance.
        case none
    }

    /// The distance model (`distance.model`); `inverse` by default.
    public var law: Law
    /// Metres within which a source is at its full level.
    public var reference: Double
    /// Metres beyond which the level falls no further.
    public var maximum: Double
    /// How steeply the level falls beyond `reference` (`distance.rolloff`), 0 to 100; 1 by default.
    public var rolloff: Double

    /// Makes a distance model; the defaults are the scene file's: inverse, 1 m, 50 m, rolloff 1.
    public init(law: Law = .inverse, reference: Double = 1, maximum: Double = 50, rolloff: Double = 1) {
        self.law = law
        self.reference = reference
        self.maximum = maximum
        self.rolloff = rolloff
    }
}

/// The room's reverberation: a preset and the level of its return.
public struct RoomReverb: Sendable, Equatable {
    /// An OpenAL EFX reverb preset, as the scene file's `reverb.preset` names it.
    public enum Preset: String, Sendable, CaseIterable {
        /// EFX ROOM, a 0.40 s decay.
        case smallRoom
        /// EFX CASTLE_SMALLROOM, a 1.22 s decay.
        case mediumRoom
        /// EFX WOODEN_MEDIUMROOM, a 1.47 s decay.
        case largeRoom
        /// EFX CASTLE_HALL, a 3.14 s decay.
        case mediumHall
        /// EFX CONCERTHALL, a 3.92 s decay.
        case largeHall
        /// EFX GENERIC, a 1.49 s decay; EFX has no plate, so its dense, bright generic tail stands in.
        case plate
        /// EFX STONEROOM, a 2.31 s decay.
        case mediumChamber
        /// EFX CASTLE_LARGEROOM, a 2.53 s decay.
        case largeChamber
        /// EFX CHAPEL, a 4.62 s decay; EFX has no cathedral, so its longest stone space stands in.
        case cathedral
    }

    /// Which EFX preset the reverb uses (`reverb.preset`).
    public var preset: Preset
    /// Level of the reverb return, in dB.
    public var levelDecibels: Double

    /// Makes a reverb of `preset` with its return at `levelDecibels` dB (-60 to 0 in a scene file); 0 dB by default.
    public init(preset: Preset, levelDecibels: Double = 0) {
        self.preset = preset
        self.levelDecibels = levelDecibels
    }
}
