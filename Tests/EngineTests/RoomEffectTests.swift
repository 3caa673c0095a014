import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial
import Testing

@Suite struct RoomEffectTests {
    static let burstSeconds = 1.5
    static var burstEnd: Int { Int(burstSeconds * Fixture.sampleRate) }

    /// A noise burst a metre ahead, then whatever the room keeps ringing.
    static func render(reverb: RoomReverb?, paths: RoomPaths, seconds: Double, signal: [Float]? = nil) throws -> [Float] {
        let burst = signal ?? Fixture.noise(seconds: burstSeconds)
        let room = Fixture.room([Fixture.point(burst, at: .fixed(Fixture.position(azimuth: 0, distance: 1)), paths: paths)],
                                route: .speakers, reverb: reverb)
        let output = try RoomRenderer(room: room).render(seconds: seconds)
        return zip(output.channel(0), output.channel(1)).map { $0 + $1 }
    }

    @Test(arguments: RoomReverb.Preset.allCases)
    func presetTailDecaysInItsDecayTime(name: RoomReverb.Preset) throws {
        let preset = ReverbPreset(name)
        let mix = try Self.render(reverb: RoomReverb(preset: name), paths: RoomPaths(reverbBlend: 1, obstruction: 0, occlusion: 0),
                                  seconds: Self.burstSeconds + 2 * preset.decayTime + 0.5)
        // The 1 kHz octave, where acoustics quotes RT60: mid-way between the
        // 250 Hz and 5 kHz references around which EFX shapes the decay.
        let band = Biquad.lowPassed(Biquad.highPassed(mix, cutoff: 707), cutoff: 1_414)
        let tail = Array(band[(Self.burstEnd + 480)...])
        let rt60 = try #require(Measure.reverberationTime(tail), "no decay measured")
        #expect(abs(rt60 / preset.decayTime - 1) <= 0.3, "\(preset): RT60 \(rt60) s against \(preset.decayTime) s")
    }

    @Test func noPresetMeansNoTail() throws {
        let mix = try Self.render(reverb: nil, paths: .default, seconds: Self.burstSeconds + 1)
        let during = Measure.rmsDecibels(Array(mix[4_800..<Self.burstEnd]))
        let after = Measure.rmsDecibels(Array(mix[(Self.burstEnd + 2_400)...]))
        #expect(during > -30 && after == -.infinity, "during \(during) dB, after \(after) dB")
    }

    /// Level change in dB of the bands above 5 kHz and below 500 Hz against an unfiltered render.
    static func bandChanges(_ paths: RoomPaths) throws -> (high: Double, low: Double) {
        func bands(_ mix: [Float]) -> (Double, Double) {
            let steady = Array(mix[4_800..<Self.burstEnd])
            return (Measure.rmsDecibels(Biquad.highPassed(steady, cutoff: 5_000)), Measure.rmsDecibels(Biquad.lowPassed(steady, cutoff: 500)))
        }
        let clear = bands(try render(reverb: nil, paths: .default, seconds: burstSeconds))
        let filtered = bands(try render(reverb: nil, paths: paths, seconds: burstSeconds))
        return (filtered.0 - clear.0, filtered.1 - clear.1)
    }

    @Test func occlusionDarkensTheDirectSound() throws {
        let change = try Self.bandChanges(RoomPaths(reverbBlend: 0.2, obstruction: 0, occlusion: -20))
        #expect(change.high - change.low <= -10, "above 5 kHz \(change.high) dB, below 500 Hz \(change.low) dB")
    }

    @Test func obstructionDarkensTheDirectSound() throws {
        let change = try Self.bandChanges(RoomPaths(reverbBlend: 0.2, obstruction: -20, occlusion: 0))
        #expect(change.high - change.low <= -10, "above 5 kHz \(change.high) dB, below 500 Hz \(change.low) dB")
    }

    /// High-frequency level of the reverb tail after the burst.
    static func tailTreble(_ paths: RoomPaths) throws -> Double {
        let mix = try render(reverb: RoomReverb(preset: .largeHall), paths: paths, seconds: burstSeconds + 1)
        return Measure.rmsDecibels(Biquad.highPassed(Array(mix[(burstEnd + 4_800)...]), cutoff: 2_000))
    }

    @Test func occlusionDarkensTheReverbButObstructionDoesNot() throws {
        let clear = try Self.tailTreble(RoomPaths(reverbBlend: 0.5, obstruction: 0, occlusion: 0))
        let obstructed = try Self.tailTreble(RoomPaths(reverbBlend: 0.5, obstruction: -20, occlusion: 0))
        let occluded = try Self.tailTreble(RoomPaths(reverbBlend: 0.5, obstruction: 0, occlusion: -20))
        #expect(abs(obstructed - clear) < 0.5, "obstruction moved the tail by \(obstructed - clear) dB")
        #expect(occluded - clear < -6, "occlusion moved the tail by \(occluded - clear) dB")
    }

    /// A head-locked noise burst, played as `mode` gives it, on speakers.
    static func headLocked(_ mode: SourceMode, paths: RoomPaths, reverb: RoomReverb?, seconds: Double) throws -> [Float] {
        let burst = AudioBuffer(mono: Fixture.noise(seconds: burstSeconds))
        let source = Fixture.headLocked(burst, mode: mode, algorithm: mode == .point ? .passthrough : .auto, paths: paths)
        let output = try RoomRenderer(room: Fixture.room([source], route: .speakers, reverb: reverb)).render(seconds: seconds)
        return zip(output.channel(0), output.channel(1)).map { $0 + $1 }
    }

    @Test func passthroughReachesTheReverbAndBypassDoesNot() throws {
        let paths = RoomPaths(reverbBlend: 0.5, obstruction: 0, occlusion: 0)
        let tail = { (mode: SourceMode) in
            let mix = try Self.headLocked(mode, paths: paths, reverb: RoomReverb(preset: .largeHall), seconds: Self.burstSeconds + 1)
            return Measure.rmsDecibels(Array(mix[(Self.burstEnd + 2_400)...]))
        }
        let passthrough = try tail(.point), bypass = try tail(.bypass)
        #expect(passthrough > -50 && bypass == -.infinity, "tail after passthrough \(passthrough) dB, after bypass \(bypass) dB")
    }

    @Test func occlusionDarkensPassthroughButNotBypass() throws {
        func bands(_ mix: [Float]) -> (high: Double, low: Double) {
            let steady = Array(mix[4_800..<Self.burstEnd])
            return (Measure.rmsDecibels(Biquad.highPassed(steady, cutoff: 5_000)), Measure.rmsDecibels(Biquad.lowPassed(steady, cutoff: 500)))
        }
        let occluded = RoomPaths(reverbBlend: 0.2, obstruction: 0, occlusion: -20)
        let clear = bands(try Self.headLocked(.point, paths: .default, reverb: nil, seconds: Self.burstSeconds))
        let darkened = bands(try Self.headLocked(.point, paths: occluded, reverb: nil, seconds: Self.burstSeconds))
        let change = (high: darkened.high - clear.high, low: darkened.low - clear.low)
        #expect(change.high - change.low <= -10, "above 5 kHz \(change.high) dB, below 500 Hz \(change.low) dB")
        let bypass = try Self.headLocked(.bypass, paths: occluded, reverb: nil, seconds: Self.burstSeconds)
        #expect(bypass == (try Self.headLocked(.bypass, paths: .default, reverb: nil, seconds: Self.burstSeconds)))
    }

    @Test(arguments: [0.5, 2.0])
    func rateScalesPitch(rate: Double) throws {
        let tone = Signals.sine(frequency: 1_000, frames: 96_000, amplitude: 0.5)
        let room = Fixture.room([Fixture.point(tone, at: .fixed(Fixture.position(azimuth: 0, distance: 1)), rate: rate)], route: .speakers)
        let left = try RoomRenderer(room: room).render(seconds: 0.9).channel(0)
        let measured = Measure.frequency(Array(left[4_800...]))
        #expect(abs(measured - 1_000 * rate) < 5, "rate \(rate): \(measured) Hz")
    }
}
