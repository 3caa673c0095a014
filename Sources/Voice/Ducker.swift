import AudioCore

/// The gain that ducks the scene under voice, a block at a time; the
/// renderer ramps it linearly across each block.
///
/// Non-advanced ducking holds a fixed depth while a voice session is
/// active. Advanced ducking goes to that depth while anyone talks and eases
/// back to 0 dB once nobody has talked for `holdSeconds`.
///
/// The gain moves linearly in dB: down at `attackDecibelsPerSecond`, so
/// even the deepest level is reached about 50 ms after voice activity is
/// detected (what the scene's reverb already holds rings out at its own
/// decay), and up at `releaseDecibelsPerSecond`. Over a 10 ms block the
/// attack moves 5 dB, under 1 dB in any millisecond of the ramp.
public struct Ducker: Sendable {
    /// How fast the gain falls toward the depth, in dB per second: -24 dB takes about 50 ms.
    public static let attackDecibelsPerSecond = 500.0
    /// How fast the gain rises back toward 0 dB, in dB per second.
    public static let releaseDecibelsPerSecond = 80.0
    /// Counted from the end of voice activity, which itself lags the end of
    /// speech by the detector's hangover.
    public static let holdSeconds = 0.35

    /// The gain the scene is ducked to, in dB (0 or less, such as -12).
    public var depthDecibels: Double
    /// Ducks only while someone talks, plus `holdSeconds`, rather than for the whole session.
    public var advanced: Bool
    /// The gain now, in dB (0 or less).
    public private(set) var gainDecibels = 0.0
    private let sampleRate: Double
    private var holdRemaining = 0

    /// A ducker at 0 dB that ducks to `depthDecibels`, moving at its rates for `sampleRate` in Hz.
    public init(depthDecibels: Double, advanced: Bool, sampleRate: Int) {
        self.depthDecibels = depthDecibels
        self.advanced = advanced
        self.sampleRate = Double(sampleRate)
    }

    /// The gain the ducker is heading for.
    public private(set) var targetDecibels = 0.0

    /// Takes one decision: whether a voice session is active and whether
    /// anyone talks, for the next `frames` samples.
    public mutating func update(sessionActive: Bool, anyoneTalking: Bool, frames: Int) {
        guard sessionActive else {
            holdRemaining = 0
            targetDecibels = 0
            return
        }
        guard advanced else {
            targetDecibels = depthDecibels
            return
        }
        if anyoneTalking {
            holdRemaining = Int(Self.holdSeconds * sampleRate)
            targetDecibels = depthDecibels
        } else if holdRemaining > 0 {
            holdRemaining -= frames
        } else {
            targetDecibels = 0
        }
    }

    /// Moves the gain on by `frames` samples at its rates and returns it,
    /// linear: where the renderer's ramp over those samples ends.
    public mutating func advance(frames: Int) -> Double {
        let seconds = Double(frames) / sampleRate
        if gainDecibels > targetDecibels {
            gainDecibels = Swift.max(targetDecibels, gainDecibels - Self.attackDecibelsPerSecond * seconds)
        } else if gainDecibels < targetDecibels {
            gainDecibels = Swift.min(targetDecibels, gainDecibels + Self.releaseDecibelsPerSecond * seconds)
        }
        return Level.linear(fromDecibels: gainDecibels)
    }
}
