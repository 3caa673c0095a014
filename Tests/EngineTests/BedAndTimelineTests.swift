import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial
import Testing

@Suite struct AmbienceBedTests {
    static func ears(listenerYaw: Double = 0, listenerPosition: Position = .zero, bedYaw: Double = 0) throws -> (left: [Float], right: [Float]) {
        let bed = Fixture.bed(ambiX: Fixture.frontPlaneWave(Fixture.noise()), orientation: Orientation(yaw: bedYaw))
        return try Fixture.render(Fixture.room([bed], listenerPosition: listenerPosition,
                                               listenerOrientation: Orientation(yaw: listenerYaw)))
    }

    @Test func frontEncodedSoundIsAheadWhenTheListenerFacesForward() throws {
        let ears = try Self.ears()
        #expect(abs(Measure.levelDifference(left: ears.left, right: ears.right)) < 1)
    }

    @Test func turningTheListenerMovesTheBedToTheOtherSide() throws {
        // Facing right (+X), what is ahead in the world is on the listener's left.
        let facingRight = try Self.ears(listenerYaw: 90)
        let facingLeft = try Self.ears(listenerYaw: -90)
        let ildRight = Measure.levelDifference(left: facingRight.left, right: facingRight.right)
        let ildLeft = Measure.levelDifference(left: facingLeft.left, right: facingLeft.right)
        #expect(ildRight < -6, "facing right: ILD \(ildRight) dB")
        #expect(ildLeft > 6, "facing left: ILD \(ildLeft) dB")
    }

    @Test func theBedsOwnYawTurnsItInTheWorld() throws {
        let ears = try Self.ears(bedYaw: 90)
        let ild = Measure.levelDifference(left: ears.left, right: ears.right)
        #expect(ild > 6, "bed turned right: ILD \(ild) dB")
    }

    @Test func movingTheListenerLeavesTheBedUnchanged() throws {
        let here = try Self.ears()
        let there = try Self.ears(listenerPosition: Position(30, 2, -45))
        #expect(here.left == there.left && here.right == there.right)
    }
}

@Suite struct TimelineTests {
    @Test func emptyRoomIsDigitalSilence() throws {
        for route in [OutputRoute.headphones, .speakers] {
            let output = try RoomRenderer(room: Fixture.room([], route: route)).render(seconds: 2)
            #expect(output.frameCount == 96_000)
            #expect(output.samples.allSatisfy { $0 == 0 })
        }
    }

    @Test func loopingIsSeamless() throws {
        // 0.3 s of 1 kHz is exactly 300 periods, so a seamless loop continues
        // the sine unbroken; a gap, a repeated sample or a restart delay at
        // the seam would step further than the sine ever does.
        let tone = Signals.sine(frequency: 1_000, frames: 14_400, amplitude: 0.5)
        let room = Fixture.room([Fixture.point(tone, at: .fixed(Fixture.position(azimuth: 0, distance: 1)), loop: true)],
                                route: .speakers)
        let output = try RoomRenderer(room: room).render(seconds: 2)
        let left = Array(output.channel(0).dropFirst(Fixture.settleFrames))
        let gain = Measure.rms(left) / Measure.rms(tone)
        let allowedStep = Measure.largestStep(tone) * Float(gain) * 1.02
        #expect(Measure.largestStep(left) <= allowedStep, "step \(Measure.largestStep(left)) > \(allowedStep)")
        // Still playing after six passes through the buffer.
        #expect(Measure.rms(Array(left.suffix(4_800))) > 0.5 * Measure.rms(left))
    }

    @Test func sourcesStartOnTheirFrame() throws {
        let tone = Signals.sine(frequency: 500, frames: 48_000, amplitude: 0.5)
        let room = Fixture.room([Fixture.point(tone, at: .fixed(Fixture.position(azimuth: 0, distance: 1)), start: 0.503)],
                                route: .speakers)
        let left = try RoomRenderer(room: room).render(seconds: 1).channel(0)
        let first = left.firstIndex { abs($0) > 1e-6 }!
        // 0.503 s is inside a 10 ms block; OpenAL's limiter looks 1 ms ahead.
        #expect((24_144...24_144 + 96).contains(first), "first sound at frame \(first)")
    }

    @Test func aMovingSourceCrossesFromLeftToRight() throws {
        let path = MotionPath(keyframes: [.init(time: 0, position: Position(-3, 0, -1)),
                                          .init(time: 2, position: Position(3, 0, -1))], repeats: false)
        let room = Fixture.room([Fixture.point(Fixture.noise(seconds: 2), at: .moving(path))])
        let output = try RoomRenderer(room: room).render(seconds: 2)
        let (left, right) = (output.channel(0), output.channel(1))
        let early = Measure.levelDifference(left: Array(left[4_800..<19_200]), right: Array(right[4_800..<19_200]))
        let late = Measure.levelDifference(left: Array(left[76_800..<91_200]), right: Array(right[76_800..<91_200]))
        #expect(early < -6 && late > 6, "ILD early \(early) dB, late \(late) dB")
    }

    @Test func outputStaysWithinFullScale() throws {
        // Ten loud sources at once would sum far past 0 dBFS.
        let loud = (0..<10).map { index in
            Fixture.point(Signals.whiteNoise(frames: 48_000, rms: 0.5, seed: UInt64(index + 1)),
                          at: .fixed(Fixture.position(azimuth: Double(index * 36), distance: 1)), id: "loud\(index)", gain: 12)
        }
        let output = try RoomRenderer(room: Fixture.room(loud)).render(seconds: 1)
        #expect(output.samples.allSatisfy { $0.isFinite && abs($0) <= 1 })
        #expect(Measure.rms(output.samples) > 0.1)
    }
}
