import AudioMeasurements
import Engine
import Testing

/// Binaural rendering on headphones: level and time differences between the ears.
@Suite struct HRTFTests {
    @Test(arguments: [90.0, -90.0])
    func sideSourceIsAtLeast10dBLouderAtTheNearEar(azimuth: Double) throws {
        let ears = try Fixture.render(Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: azimuth)))]))
        let ild = Measure.levelDifference(left: ears.left, right: ears.right)
        if azimuth > 0 { #expect(ild >= 10, "ILD \(ild) dB at +90") } else { #expect(ild <= -10, "ILD \(ild) dB at -90") }
    }

    @Test func frontSourceIsBalanced() throws {
        let ears = try Fixture.render(Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: 0)))]))
        let ild = Measure.levelDifference(left: ears.left, right: ears.right)
        #expect(abs(ild) <= 0.5, "ILD \(ild) dB straight ahead")
    }

    static func interauralDelay(azimuth: Double) throws -> Double {
        let ears = try Fixture.render(Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: azimuth)))]))
        return Measure.timeDifference(left: Biquad.lowPassed(ears.left, cutoff: 1_500),
                                      right: Biquad.lowPassed(ears.right, cutoff: 1_500))
    }

    @Test func sideSourcesArriveAtTheNearEar550to850MicrosecondsEarlier() throws {
        let right = try Self.interauralDelay(azimuth: 90) * 1e6
        let left = try Self.interauralDelay(azimuth: -90) * 1e6
        #expect((550...850).contains(right), "ITD \(right) µs at +90")
        #expect((-850 ... -550).contains(left), "ITD \(left) µs at -90")
    }

    @Test func delayGrowsWithAzimuth() throws {
        let delays = try [30.0, 60.0, 90.0].map { try Self.interauralDelay(azimuth: $0) }
        #expect(delays[0] > 0 && delays[0] < delays[1] && delays[1] < delays[2], "ITDs \(delays.map { $0 * 1e6 }) µs")
    }
}
