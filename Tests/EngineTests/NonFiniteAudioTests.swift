import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial
import Testing

/// NaN and infinities in a source or the microphone, half a second into a
/// room: the output stays finite and within [-1, 1], and the rest of the
/// room plays on as before.
@Suite struct NonFiniteAudioTests {
    /// Noise with NaN, +Inf and -Inf samples from 0.5 s to 0.6 s.
    static func poisoned() -> [Float] {
        var samples = Fixture.noise(seconds: 1.5, seed: 3)
        for index in 24_000..<28_800 {
            samples[index] = [Float.nan, .infinity, -.infinity, 1e30][index % 4]
        }
        return samples
    }

    @Test(arguments: [SourceAlgorithm.auto, .panning, .soundField, .passthrough])
    func aPoisonedSourceLeavesTheOutputFiniteAndTheRoomPlaying(_ algorithm: SourceAlgorithm) throws {
        let tone = Fixture.point(Signals.sine(frequency: 440, frames: 72_000, amplitude: 0.3), at: .fixed(Fixture.position(azimuth: -90)))
        let poisoned = Fixture.point(Self.poisoned(), at: .fixed(Fixture.position(azimuth: 90)), id: "poisoned", algorithm: algorithm)
        let output = try RoomRenderer(room: Fixture.room([tone, poisoned])).render(seconds: 1.5)
        #expect(output.samples.allSatisfy { $0.isFinite && abs($0) <= 1 })
        let left = output.channel(0)
        let before = Measure.rmsDecibels(Array(left[9_600..<24_000])), after = Measure.rmsDecibels(Array(left[33_600..<72_000]))
        #expect(abs(after - before) < 1, "\(algorithm): the room's left ear went from \(before) to \(after) dBFS")
        // The poisoned source itself plays on after its bad samples.
        let right = output.channel(1)
        let rightBefore = Measure.rmsDecibels(Array(right[9_600..<24_000])), rightAfter = Measure.rmsDecibels(Array(right[33_600..<72_000]))
        #expect(abs(rightAfter - rightBefore) < 1, "\(algorithm): the right ear went from \(rightBefore) to \(rightAfter) dBFS")
    }

    @Test func aPoisonedMicrophoneLeavesTheUplinkFiniteAndTheSceneUnchanged() throws {
        let room = VoiceRoom.room(scene: [VoiceRoom.tone(seconds: 2)])
        let microphone = PushedAudioSource(capacity: 96_000)
        let engine = try VoiceRoom.engine(room, microphone: microphone)
        let talker = Self.poisoned()
        var uplink: [Float] = []
        let (left, _) = try VoiceRoom.run(engine, seconds: 1.5) { engine, block in
            let start = block * 480
            talker[start..<(start + 480)].withUnsafeBufferPointer { _ = microphone.push($0) }
            if block > 0 { uplink += engine.uplinkBlock }
        }
        #expect(uplink.allSatisfy { $0.isFinite && abs($0) <= 1 })
        #expect(left.allSatisfy { $0.isFinite && abs($0) <= 1 })
        // After the bad tenth of a second the uplink carries the talker again.
        let after = Measure.rmsDecibels(Array(uplink[43_000..<67_000]))
        #expect(after > -50, "the uplink after the poisoned samples: \(after) dBFS")
    }
}
