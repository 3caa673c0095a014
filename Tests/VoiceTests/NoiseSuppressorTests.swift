import AudioMeasurements
import Testing
import Voice

@Suite struct NoiseSuppressorTests {
    @Test func steadyNoiseIsPushedDownAndATalkerIsNot() throws {
        let suppressor = try NoiseSuppressor(frameSize: 160, sampleRate: 16_000)
        // Four seconds of noise at -40 dBFS, with a tone burst in the last second.
        var signal = Signals.whiteNoise(frames: 64_000, rms: 0.01, seed: 4)
        let tone = Signals.sine(frequency: 440, frames: 16_000, amplitude: 0.3, sampleRate: 16_000)
        for index in tone.indices { signal[48_000 + index] += tone[index] }
        var output = signal
        output.withUnsafeMutableBufferPointer { samples in
            for frame in 0..<400 { suppressor.process(UnsafeMutableBufferPointer(rebasing: samples[(frame * 160)..<((frame + 1) * 160)])) }
        }
        // About as deep as WebRTC's suppressor set high takes white noise (17.9 dB, once settled); SpeexDSP's
        // default of -15 dB took 13.4 here.
        let noiseBefore = Measure.rmsDecibels(Array(signal[32_000..<48_000]))
        let noiseAfter = Measure.rmsDecibels(Array(output[32_000..<48_000]))
        #expect(noiseBefore - noiseAfter >= 16.5, "noise lowered by \(noiseBefore - noiseAfter) dB")
        let toneChange = Measure.rmsDecibels(Array(output[52_000..<64_000])) - Measure.rmsDecibels(Array(signal[52_000..<64_000]))
        #expect(abs(toneChange) < 1, "tone changed by \(toneChange) dB")
    }
}
