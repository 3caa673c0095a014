#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Conversions between decibels and linear amplitude.
///
/// People type gains in dB; everything inside the engine multiplies by linear factors.
public enum Level {
    /// Linear amplitude factor for a gain in dB (`-6` -> about `0.501`).
    public static func linear(fromDecibels decibels: Double) -> Double {
        pow(10, decibels / 20)
    }

    /// Gain in dB of a linear amplitude factor; `-infinity` for silence.
    public static func decibels(fromLinear linear: Double) -> Double {
        linear > 0 ? 20 * log10(linear) : -.infinity
    }
}
