import AudioMeasurements
import Foundation
import Testing
import Voice

@Suite struct PeakLimiterTests {
    /// Limits `input` in blocks of 480 samples at 48 kHz; returns the output lined up with the input.
    static func limit(_ input: [Float], _ limiter: PeakLimiter) -> [Float] {
        var output = input + [Float](repeating: 0, count: 480 * 2)
        output.withUnsafeMutableBufferPointer { samples in
            for start in stride(from: 0, to: samples.count - 479, by: 480) {
                limiter.process(UnsafeMutableBufferPointer(rebasing: samples[start..<(start + 480)]))
            }
        }
        return Array(output[limiter.latencyFrames..<(limiter.latencyFrames + input.count)])
    }

    /// Speech pushed 12 dB over full scale comes out under the ceiling,
    /// scaled by a gain that moves smoothly, never clipped; what was
    /// under the ceiling throughout comes out as it went in.
    @Test func peaksOverFullScaleLeaveUnderTheCeilingWithoutClipping() throws {
        let speech = try VoiceSignals.speech("announcer")
        // 48 kHz by repeating each sample three times: steps as sharp as a signal gets.
        let loud = speech.flatMap { sample in [Float](repeating: sample * 8, count: 3) }
        let quiet = [Float](repeating: 0, count: 48_000) + Signals.sine(frequency: 440, frames: 48_000, amplitude: 0.5)
        let input = loud + quiet
        let limiter = PeakLimiter(sampleRate: 48_000)
        let output = Self.limit(input, limiter)

        let inputPeak = input.map(abs).max()!, outputPeak = output.map(abs).max()!
        print("peak in \(inputPeak), out \(outputPeak), ceiling \(limiter.ceiling)")
        #expect(inputPeak > 3)
        #expect(outputPeak <= limiter.ceiling * 1.000_01)
        // The gain each sample got moves by at most a look-ahead's share
        // of full scale from one sample to the next: a ramp, not a clip.
        let loudIndices = (0..<loud.count).filter { abs(input[$0]) > 0.05 }
        let gains = Dictionary(uniqueKeysWithValues: loudIndices.map { ($0, output[$0] / input[$0]) })
        let steps = loudIndices.compactMap { index in gains[index + 1].map { abs($0 - gains[index]!) } }
        let steepest = steps.max()!
        print("steepest gain step \(steepest) from one sample to the next, lowest gain \(gains.values.min()!)")
        #expect(gains.values.allSatisfy { $0 > 0 && $0 <= 1.000_01 })
        #expect(gains.values.min()! < 0.25)
        #expect(steepest <= 1.01 / Float(limiter.latencyFrames + 1))
        let flatTops = output.filter { abs($0) > limiter.ceiling * 0.999 }.count
        let overCeiling = input.filter { abs($0) > limiter.ceiling }.count
        print("\(overCeiling) samples in over the ceiling, \(flatTops) out within 0.01 dB of it")
        // A clipper would put every one of them there; only peaks (three samples each here) touch it.
        #expect(flatTops * 10 < overCeiling)
        // After the release, the tone under the ceiling passes untouched.
        let tail = (loud.count + 72_000)..<input.count
        let difference = tail.map { abs(output[$0] - input[$0]) }.max()!
        #expect(difference < 1e-4, "the quiet tone changed by up to \(difference)")
    }
}
