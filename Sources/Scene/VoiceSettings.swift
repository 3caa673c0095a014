// What a scene file says of its voice session: how deep the scene ducks,
// and whether the uplink cancels echo. The voice chain takes depths in dB
// and a switch; the engine turns these into them.

/// How deep the scene ("other audio") goes under voice.
public enum DuckingLevel: String, Sendable, CaseIterable {
    /// The room's usual depth: -12 dB unless `voice.ducking.levels` sets another.
    case `default`
    /// Light ducking: -6 dB unless set.
    case min
    /// Medium ducking: -18 dB unless set.
    case mid
    /// Deep ducking: -24 dB unless set.
    case max
}

/// The depth of each ducking level in dB; a room may set its own.
public struct DuckingLevels: Sendable, Equatable {
    /// Depth of the `default` level in dB; -12 unless set.
    public var `default` = -12.0
    /// Depth of the `min` level in dB; -6 unless set.
    public var min = -6.0
    /// Depth of the `mid` level in dB; -18 unless set.
    public var mid = -18.0
    /// Depth of the `max` level in dB; -24 unless set.
    public var max = -24.0

    /// Makes the standard depths: -12, -6, -18 and -24 dB.
    public init() {}

    /// The depth of `level` in dB, to read or set; a scene file allows -60 to 0.
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
    /// The uplink never cancels echo (`aec: off`).
    case off
    /// The uplink always cancels echo (`aec: on`).
    case on
    /// On when a capture device hears a playback device; off otherwise.
    case auto
}
