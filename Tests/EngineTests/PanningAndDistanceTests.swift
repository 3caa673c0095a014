import AudioMeasurements
import Engine
import Spatial
import Testing

@Suite struct PanningAndDistanceTests {
    @Test(arguments: [30.0, -30.0])
    func speakersPanByLevelNotTime(azimuth: Double) throws {
        let ears = try Fixture.render(Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: azimuth)))],
                                                   route: .speakers))
        let ild = Measure.levelDifference(left: ears.left, right: ears.right)
        let itd = Measure.timeDifference(left: ears.left, right: ears.right)
        #expect(abs(itd) < 50e-6, "ITD \(itd * 1e6) µs on speakers")
        #expect(azimuth > 0 ? ild > 3 : ild < -3, "ILD \(ild) dB at \(azimuth)")
    }

    static func level(distance: Double, model: DistanceAttenuation, gain: Double = 0) throws -> Double {
        let ears = try Fixture.render(Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: 0, distance: distance)),
                                                                  gain: gain)],
                                                   route: .speakers, distance: model))
        return Measure.rmsDecibels(ears.left + ears.right)
    }

    @Test(arguments: [(1.5, 3.0), (2.0, 4.0), (5.0, 10.0)])
    func doublingTheDistanceLoses6dBUnderTheInverseLaw(near: Double, far: Double) throws {
        let model = DistanceAttenuation(law: .inverse, reference: 1, maximum: 100, rolloff: 1)
        let drop = try Self.level(distance: near, model: model) - Self.level(distance: far, model: model)
        #expect(abs(drop - 6) <= 1, "doubling \(near) m lost \(drop) dB")
    }

    @Test func levelFallsMonotonicallyWithDistanceUnderEveryLaw() throws {
        for law in [DistanceAttenuation.Law.inverse, .linear, .exponential] {
            let model = DistanceAttenuation(law: law, reference: 1, maximum: 40, rolloff: 1)
            let levels = try [1.0, 2.0, 4.0, 8.0, 16.0].map { try Self.level(distance: $0, model: model) }
            #expect(zip(levels, levels.dropFirst()).allSatisfy { $0 > $1 }, "\(law): \(levels)")
        }
        // From 2 m out: nearer, a source widens toward the head (its 0.1 m
        // radius spans 11.5 degrees at 1 m), which moves panned levels a little.
        let flat = DistanceAttenuation(law: .none)
        let near = try Self.level(distance: 2, model: flat), far = try Self.level(distance: 16, model: flat)
        #expect(abs(near - far) < 0.1, "no distance law still attenuated: \(near) vs \(far)")
    }

    @Test func sourceGainOfMinus6dBIsMinus6dBOfOutput() throws {
        let model = DistanceAttenuation()
        let change = try Self.level(distance: 2, model: model, gain: -6) - Self.level(distance: 2, model: model)
        #expect(abs(change - -6) <= 0.1, "gain -6 dB changed output by \(change) dB")
    }
}
