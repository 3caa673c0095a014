/// Where the rendered audio goes, which decides how it is spatialised.
public enum OutputRoute: String, Sendable, CaseIterable, CustomStringConvertible {
    /// Chosen from what is known about the output device.
    case auto
    case headphones
    case speakers

    public var description: String { rawValue }

    /// The route `auto` stands for when nothing is known about the device:
    /// binaural rendering is right on headphones and merely wide on speakers,
    /// while panning collapses on headphones, so headphones are the safer guess.
    public func resolved() -> OutputRoute {
        self == .auto ? .headphones : self
    }

    /// Channels the route's device receives.
    public var channelCount: Int { 2 }

    /// The rendering algorithm a source gets on this route when it asks for none.
    public var automaticAlgorithm: RenderAlgorithm {
        switch resolved() {
        case .headphones: .hrtf
        case .speakers, .auto: .panning
        }
    }
}

/// How OpenAL Soft turns a positioned source into output channels.
public enum RenderAlgorithm: String, Sendable, CustomStringConvertible {
    /// Binaural filtering through head-related transfer functions.
    case hrtf
    /// Amplitude panning between the output channels.
    case panning

    public var description: String { rawValue }
}
