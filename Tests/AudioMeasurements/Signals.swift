#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Test signals, reproducible from a seed.
public enum Signals {
    /// Uniform white noise with the given RMS.
    public static func whiteNoise(frames: Int, rms: Float = 0.1, seed: UInt64 = 1) -> [Float] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        let scale = rms * 3.0.squareRoot().asFloat  // uniform in [-a, a] has RMS a / sqrt(3)
        return (0..<frames).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            let unit = Float(state >> 40) / Float(1 << 24)  // [0, 1)
            return (unit * 2 - 1) * scale
        }
    }

    public static func sine(frequency: Double, frames: Int, amplitude: Float = 0.5, sampleRate: Double = 48_000) -> [Float] {
        (0..<frames).map { amplitude * Float(sin(2 * .pi * frequency * Double($0) / sampleRate)) }
    }
}

extension Double {
    var asFloat: Float { Float(self) }
}
