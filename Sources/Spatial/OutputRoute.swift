import AudioCore

/// Where the rendered audio goes, which decides its channels and how it is spatialised.
public enum OutputRoute: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Chosen from what is known about the output device.
    case auto
    /// Stereo headphones, rendered binaurally through HRTF by default.
    case headphones
    /// Headphones with a microphone.
    case headset
    /// Stereo speakers, of a kind not known.
    case speakers
    /// A laptop's or monitor's own stereo speakers.
    case builtInSpeakers
    /// Stereo speakers standing apart from the listener.
    case externalSpeakers
    /// A 5.1 loudspeaker system: six channels, panned by default.
    case surround51
    /// A 7.1 loudspeaker system: eight channels, panned by default.
    case surround71
    /// A single channel, onto which panning downmixes every source at its full level.
    case mono

    /// The route's name, as scene files and `route` take it.
    public var description: String { rawValue }

    /// The route `auto` stands for when nothing is known about the device:
    /// binaural output stays intelligible on speakers while panning
    /// collapses on headphones, so headphones are the safer guess.
    public func resolved() -> OutputRoute {
        self == .auto ? .headphones : self
    }

    /// The channels the route renders: stereo for `auto`, headphones, headsets and stereo speakers,
    /// and otherwise the layout it names.
    public var layout: ChannelLayout {
        switch resolved() {
        case .headphones, .headset, .speakers, .builtInSpeakers, .externalSpeakers, .auto: .stereo
        case .surround51: .surround51
        case .surround71: .surround71
        case .mono: .mono
        }
    }

    /// The rendering algorithm a source gets on this route when it asks for
    /// none: the one table the renderer and the route monitor share.
    public var automaticAlgorithm: RenderAlgorithm {
        switch resolved() {
        case .headphones, .headset, .auto: .hrtf
        // On a single channel, panning gives every source its full level: a downmix.
        case .speakers, .builtInSpeakers, .externalSpeakers, .surround51, .surround71, .mono: .panning
        }
    }
}

/// How a positioned source becomes output channels.
public enum RenderAlgorithm: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Binaural filtering through head-related transfer functions, by OpenAL Soft.
    case hrtf
    /// Amplitude panning over the route's real loudspeaker layout, by OpenAL Soft.
    case panning
    /// Third-order ambisonic panning by the engine, decoded for the route:
    /// onto its real loudspeakers, or onto virtual ones heard through HRTF
    /// on headphones.
    case soundField

    /// The algorithm's name, as scene files take it.
    public var description: String { rawValue }
}
