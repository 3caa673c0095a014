import AudioMeasurements
import Testing
import Voice

@Suite struct GainControlTests {
    /// Runs `signal` through the gain in 10 ms frames at 16 kHz, calling frames speech as `speech` says.
    static func run(_ signal: [Float], speech: (Int) -> Bool) -> (output: [Float], gains: [Double]) {
        var control = GainControl(frameSize: 160, sampleRate: 16_000)
        var output = signal, gains: [Double] = []
        output.withUnsafeMutableBufferPointer { samples in
            for frame in 0..<(samples.count / 160) {
                control.process(UnsafeMutableBufferPointer(rebasing: samples[(frame * 160)..<((frame + 1) * 160)]), speech: speech(frame))
                gains.append(control.gainDecibels)
            }
        }
        return (output, gains)
    }

    @Test func aQuietTalkerIsBroughtToTheTargetWindowSlowly() {
        // -37 dBFS: brought up to the window's lower edge, 6 dB under the target.
        let quiet = Signals.sine(frequency: 220, frames: 16_000 * 4, amplitude: 0.02, sampleRate: 16_000)
        let (output, gains) = Self.run(quiet, speech: { _ in true })
        let last = Measure.rmsDecibels(Array(output.suffix(16_000)))
        #expect(abs(last - -26) < 0.5, "settled at \(last) dBFS")
        let steps = zip(gains, gains.dropFirst()).map { abs($1 - $0) }
        #expect(steps.max()! <= 0.121, "the gain moved \(steps.max()!) dB in one frame")
    }

    @Test func pausesAndEchoAreNotPumpedUp() {
        // Two seconds of a talker at -7 dBFS, then two of faint non-speech
        // (residual echo, room noise): the gain stays where the talker put it.
        let talker = Signals.sine(frequency: 220, frames: 32_000, amplitude: 0.63, sampleRate: 16_000)
        let faint = Signals.sine(frequency: 220, frames: 32_000, amplitude: 0.002, sampleRate: 16_000)
        let gains = Self.run(talker + faint, speech: { $0 < 200 }).gains
        #expect(abs(gains[199] - -7) < 0.2 && abs(gains[399] - gains[199]) < 0.01, "gain \(gains[199]) dB, then \(gains[399]) dB")
    }

    @Test func aTalkerNearTheTargetIsLeftAlone() {
        let talker = Signals.sine(frequency: 220, frames: 32_000, amplitude: 0.1, sampleRate: 16_000)
        let gains = Self.run(talker, speech: { _ in true }).gains
        #expect(gains.allSatisfy { $0 == 0 }, "the gain moved to \(gains.min()!)...\(gains.max()!) dB")
    }

    @Test func peaksStayBelowTheCeiling() {
        let loud = Signals.sine(frequency: 220, frames: 16_000, amplitude: 0.99, sampleRate: 16_000)
        let output = Self.run(loud, speech: { _ in true }).output
        // The first frame ramps down to the ceiling; after it, nothing passes it.
        let worst = output.dropFirst(160).map { abs($0) }.max()!
        #expect(worst <= 0.9001, "peak \(worst)")
    }
}
