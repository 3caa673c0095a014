import AudioMeasurements
import Testing
@testable import Voice

#if canImport(Glibc)
import Glibc
#endif

/// The detector's periodicity, a normalised correlation, measured frame by
/// frame as `process` measures it.
struct PeriodicityTests {
    static func measure(_ signal: [Float]) -> [Float] {
        let detector = VoiceActivityDetector()
        return signal.withUnsafeBufferPointer { samples in
            (0..<(samples.count / 160)).map { frame in
                detector.periodicity(UnsafeBufferPointer(rebasing: samples[(frame * 160)..<((frame + 1) * 160)]))
            }
        }
    }

    /// Noise bursts out of digital silence, behind what a resampler's filter
    /// rings ahead of them some 80 dB under: their first frames measured a
    /// periodicity of up to 1.3e9 while the sliding sum of the lagged
    /// window's energy could round to nothing or less, and such a frame
    /// counts as clearly voiced.
    @Test func aSoundOutOfSilenceIsNotTakenForAPeriod() {
        var measures: [Float] = []
        for seed in UInt64(1)...20 {
            let noise = Signals.whiteNoise(frames: 480, rms: 0.1, seed: seed).enumerated().map { $1 * Float(sin(Double.pi * Double($0) / 480)) }
            let precursor = Signals.whiteNoise(frames: 160, rms: 1e-5, seed: seed + 100)
            measures += Self.measure([Float](repeating: 0, count: 1_440) + precursor + noise + [Float](repeating: 0, count: 1_600))[9..<16]
        }
        print("periodicity of 30 ms noise bursts out of silence, 20 of them, at most \(measures.max()!)")
        #expect(measures.allSatisfy { $0 >= 0 && $0 <= 1 }, "measures over 1: \(measures.filter { $0 > 1 })")
    }

    /// A voice's pitch out of digital silence is still heard as one: a 150 Hz
    /// pulse train (which the measure band-passes), from its third frame on.
    @Test func aPitchOutOfDigitalSilenceIsStillPeriodic() {
        var voice = [Float](repeating: 0, count: 1_600 + 4_800)
        for index in stride(from: 1_600, to: voice.count, by: 16_000 / 150) { voice[index] = 0.5 }
        let measures = Self.measure(voice)
        print("periodicity of a 150 Hz pulse train out of digital silence: \(Array(measures[10...]))")
        #expect(measures[13...].allSatisfy { $0 > 0.9 }, "measures: \(Array(measures[10...]))")
    }
}
