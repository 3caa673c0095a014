import AudioCore
import AudioMeasurements
import Testing

@Suite struct LevelTests {
    @Test func decibelsRoundTrip() {
        #expect(abs(Level.linear(fromDecibels: -6) - 0.50119) < 1e-4)
        #expect(abs(Level.decibels(fromLinear: 0.5) - -6.0206) < 1e-4)
        #expect(Level.decibels(fromLinear: 0) == -.infinity)
    }

    @Test func meterMatchesSineTheory() {
        // A full-scale sine has a peak of 0 dBFS and an RMS of -3.01 dBFS.
        let sine = Signals.sine(frequency: 1000, frames: 48_000, amplitude: 1)
        let stereo = AudioBuffer(channelCount: 2, interleaved: sine.flatMap { [$0, $0 * 0.5] })
        var meter = LevelMeter(channelCount: 2)
        stereo.samples.withUnsafeBufferPointer { meter.measure(interleaved: $0) }
        #expect(abs(meter.peakDecibels(channel: 0)) < 0.01)
        #expect(abs(meter.rmsDecibels(channel: 0) - -3.0103) < 0.01)
        #expect(abs(meter.rmsDecibels(channel: 1) - -9.0309) < 0.01)
        #expect(meter.frameCount == 48_000)
    }

    @Test func outputGuardRemovesNonFiniteAndOvers() {
        var block: [Float] = [0.5, .nan, 1.5, -.infinity, -2, 0.25]
        let repaired = block.withUnsafeMutableBufferPointer { OutputGuard.sanitize($0) }
        #expect(repaired == 4)
        #expect(block == [0.5, 0, 1, 0, -1, 0.25])
    }

    @Test func downmixKeepsCommonSignalLevel() {
        let buffer = AudioBuffer(channelCount: 3, interleaved: [0.3, 0.3, 0.3, -0.6, -0.6, -0.6])
        #expect(buffer.downmixedToMono().samples == [0.3, -0.6].map { Float($0) })
    }
}
