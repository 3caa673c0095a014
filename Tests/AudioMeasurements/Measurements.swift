#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Physical measurements on rendered audio.
public enum Measure {
    public static func rms(_ samples: ArraySlice<Float>) -> Double {
        guard !samples.isEmpty else { return 0 }
        let sum = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        return (sum / Double(samples.count)).squareRoot()
    }

    public static func rms(_ samples: [Float]) -> Double { rms(samples[...]) }

    public static func decibels(_ linear: Double) -> Double { linear > 0 ? 20 * log10(linear) : -.infinity }

    public static func rmsDecibels(_ samples: [Float]) -> Double { decibels(rms(samples)) }

    /// The amplitude of `frequency` in `samples`: one bin of their
    /// transform, exact where the window holds whole periods of it.
    public static func toneAmplitude(_ samples: ArraySlice<Float>, frequency: Double, sampleRate: Double = 48_000) -> Double {
        var inPhase = 0.0, quadrature = 0.0
        for (offset, sample) in samples.enumerated() {
            let phase = 2 * Double.pi * frequency * Double(offset) / sampleRate
            inPhase += Double(sample) * cos(phase)
            quadrature += Double(sample) * sin(phase)
        }
        return 2 * (inPhase * inPhase + quadrature * quadrature).squareRoot() / Double(max(1, samples.count))
    }

    /// Interaural level difference in dB: positive when the right ear is louder.
    public static func levelDifference(left: [Float], right: [Float]) -> Double {
        rmsDecibels(right) - rmsDecibels(left)
    }

    /// Interaural time difference in seconds, from the peak of the cross
    /// correlation within `maxLag` seconds, refined by a parabola through the
    /// peak. Positive when the sound reaches the right ear first (a source on
    /// the right).
    public static func timeDifference(left: [Float], right: [Float], sampleRate: Double = 48_000,
                                      maxLag: Double = 0.0015) -> Double {
        let maxLagFrames = Int(maxLag * sampleRate)
        let count = min(left.count, right.count)
        func correlation(_ lag: Int) -> Double {
            // left[n] against right[n - lag]: a positive lag means left is late.
            var sum = 0.0
            for n in max(0, lag)..<min(count, count + lag) { sum += Double(left[n]) * Double(right[n - lag]) }
            return sum
        }
        let values = (-maxLagFrames...maxLagFrames).map(correlation)
        let best = values.indices.max { values[$0] < values[$1] }!
        var offset = 0.0
        if best > 0 && best < values.count - 1 {
            let (a, b, c) = (values[best - 1], values[best], values[best + 1])
            let denominator = a - 2 * b + c
            if denominator != 0 { offset = 0.5 * (a - c) / denominator }
        }
        return (Double(best - maxLagFrames) + offset) / sampleRate
    }

    /// The direction a time difference says, read against the time
    /// differences measured at known azimuths (increasing together):
    /// linear between them, the nearest end beyond them.
    public static func azimuth(ofTimeDifference value: Double, measured: [Double], at azimuths: [Double]) -> Double {
        if value <= measured[0] { return azimuths[0] }
        for index in 1..<measured.count where value <= measured[index] {
            let fraction = (value - measured[index - 1]) / (measured[index] - measured[index - 1])
            return azimuths[index - 1] + fraction * (azimuths[index] - azimuths[index - 1])
        }
        return azimuths[azimuths.count - 1]
    }

    /// Reverberation time (RT60) from the Schroeder backward integral of a
    /// decay that starts at `samples[0]`: the T20 slope, -5 to -25 dB, times 3.
    public static func reverberationTime(_ samples: [Float], sampleRate: Double = 48_000) -> Double? {
        var remaining = samples.reduce(0.0) { $0 + Double($1) * Double($1) }
        let total = remaining
        guard total > 0 else { return nil }
        var t5: Double?, t25: Double?
        for (index, sample) in samples.enumerated() {
            let level = 10 * log10(remaining / total)
            if t5 == nil && level <= -5 { t5 = Double(index) / sampleRate }
            if t25 == nil && level <= -25 { t25 = Double(index) / sampleRate; break }
            remaining -= Double(sample) * Double(sample)
        }
        guard let t5, let t25 else { return nil }
        return 3 * (t25 - t5)
    }

    /// Frequency from the count of upward zero crossings.
    public static func frequency(_ samples: [Float], sampleRate: Double = 48_000) -> Double {
        let crossings = zip(samples, samples.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
        return Double(crossings) / (Double(samples.count) / sampleRate)
    }

    /// The largest absolute difference between neighbouring samples.
    public static func largestStep(_ samples: [Float]) -> Float {
        zip(samples, samples.dropFirst()).reduce(0) { max($0, abs($1.1 - $1.0)) }
    }
}

/// A second-order IIR section (RBJ cookbook), direct form I.
public struct Biquad {
    private let b0, b1, b2, a1, a2: Double
    private var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0

    public static func lowPass(cutoff: Double, q: Double = 0.5.squareRoot(), sampleRate: Double = 48_000) -> Biquad {
        let w = 2 * .pi * cutoff / sampleRate
        let alpha = sin(w) / (2 * q)
        let cosw = cos(w)
        let a0 = 1 + alpha
        return Biquad(b0: (1 - cosw) / 2 / a0, b1: (1 - cosw) / a0, b2: (1 - cosw) / 2 / a0,
                      a1: -2 * cosw / a0, a2: (1 - alpha) / a0)
    }

    public static func highPass(cutoff: Double, q: Double = 0.5.squareRoot(), sampleRate: Double = 48_000) -> Biquad {
        let w = 2 * .pi * cutoff / sampleRate
        let alpha = sin(w) / (2 * q)
        let cosw = cos(w)
        let a0 = 1 + alpha
        return Biquad(b0: (1 + cosw) / 2 / a0, b1: -(1 + cosw) / a0, b2: (1 + cosw) / 2 / a0,
                      a1: -2 * cosw / a0, a2: (1 - alpha) / a0)
    }

    private init(b0: Double, b1: Double, b2: Double, a1: Double, a2: Double) {
        (self.b0, self.b1, self.b2, self.a1, self.a2) = (b0, b1, b2, a1, a2)
    }

    public mutating func process(_ x: Double) -> Double {
        let y = b0 * x + b1 * x1 + b2 * x2 - a1 * y1 - a2 * y2
        (x2, x1, y2, y1) = (x1, x, y1, y)
        return y
    }

    /// `samples` through a fourth-order Butterworth high-pass (two sections).
    public static func highPassed(_ samples: [Float], cutoff: Double, sampleRate: Double = 48_000) -> [Float] {
        var first = highPass(cutoff: cutoff, q: 0.5412, sampleRate: sampleRate)
        var second = highPass(cutoff: cutoff, q: 1.3066, sampleRate: sampleRate)
        return samples.map { Float(second.process(first.process(Double($0)))) }
    }

    /// `samples` through a fourth-order Butterworth low-pass (two sections).
    public static func lowPassed(_ samples: [Float], cutoff: Double, sampleRate: Double = 48_000) -> [Float] {
        var first = lowPass(cutoff: cutoff, q: 0.5412, sampleRate: sampleRate)
        var second = lowPass(cutoff: cutoff, q: 1.3066, sampleRate: sampleRate)
        return samples.map { Float(second.process(first.process(Double($0)))) }
    }
}
