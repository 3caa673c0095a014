#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A high shelf: unity below its corner, `gainHF` above it.
///
/// At a 5 kHz corner with a slope of 1 it is the biquad OpenAL Soft runs
/// for its low-pass filter (`AL_LOWPASS_GAINHF`), gain floor included, so
/// the paths the engine renders itself darken exactly as OpenAL's do.
public struct HighShelfFilter: Sendable {
    /// OpenAL's reference frequency for `AL_LOWPASS_GAINHF`.
    public static let openALCorner = 5_000.0

    private let b0, b1, b2, a1, a2: Float
    private var z1: Float = 0, z2: Float = 0

    /// A shelf of linear gain `gainHF` (floored at 0.001, -60 dB, as OpenAL does) above
    /// `corner` Hz (5 kHz by default), for audio at `sampleRate` Hz.
    public init(gainHF: Double, sampleRate: Double, corner: Double = openALCorner) {
        // OpenAL limits the shelf to -60 dB.
        let gain = max(gainHF, 0.001)
        let w0 = 2 * Double.pi * corner / sampleRate
        // calc_rcpQ_from_slope(gain, 1) is sqrt(2) whatever the gain.
        let alpha = sin(w0) / 2 * 2.0.squareRoot()
        let cosine = cos(w0)
        let root = 2 * gain.squareRoot() * alpha
        let a0 = (gain + 1) - (gain - 1) * cosine + root
        b0 = Float(gain * ((gain + 1) + (gain - 1) * cosine + root) / a0)
        b1 = Float(-2 * gain * ((gain - 1) + (gain + 1) * cosine) / a0)
        b2 = Float(gain * ((gain + 1) + (gain - 1) * cosine - root) / a0)
        a1 = Float(2 * ((gain - 1) - (gain + 1) * cosine) / a0)
        a2 = Float(((gain + 1) - (gain - 1) * cosine - root) / a0)
    }

    /// Filters one sample (transposed direct form II, as OpenAL does).
    public mutating func process(_ input: Float) -> Float {
        let output = input * b0 + z1
        z1 = input * b1 - output * a1 + z2
        z2 = input * b2 - output * a2
        return output
    }

    /// Filters `samples` in place.
    public mutating func process(_ samples: UnsafeMutableBufferPointer<Float>) {
        for index in samples.indices { samples[index] = process(samples[index]) }
    }
}
