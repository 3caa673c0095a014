// What a scene file says of its voice session: how deep the scene ducks,
// and whether the uplink cancels echo. The voice chain takes depths in dB
// and a switch; the engine turns these into them.

/// How deep the scene ("other audio") goes under voice.
public enum DuckingLevel: String, Sendable, CaseIterable {
    case `default`, min, mid, max
}

/// The depth of each ducking level in dB; a room may set its own.
public struct DuckingLevels: Sendable, Equatable {
    public var `default` = -12.0
    public var min = -6.0
    public var mid = -18.0
    public var max = -24.0

    public init() {}

    public subscript(level: DuckingLevel) -> Double {
        get {
            switch level {
            case .default: self.default
            case .min: min
            case .mid: mid
            case .max: max
            }
        }
        set {
            switch level {
            case .default: self.default = newValue
            case .min: min = newValue
            case .mid: mid = newValue
            case .max: max = newValue
            }
        }
    }
}

/// Whether the uplink cancels echo.
public enum EchoCancellationMode: String, Sendable, CaseIterable {
    case off, on
    /// On when a capture device hears a playback device; off otherwise.
    case auto
}
