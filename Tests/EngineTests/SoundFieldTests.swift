import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial
import Testing

@Suite struct SoundFieldTests {
    /// Each channel's share of the energy of noise from `azimuth` degrees, panned as a sound field on `route`.
    static func energyShares(azimuth: Double, route: OutputRoute) throws -> [Double] {
        let room = Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: azimuth)), algorithm: .soundField)],
                                route: route)
        let output = try RoomRenderer(room: room).render(seconds: 1)
        let energies = (0..<output.channelCount).map { channel in
            output.channel(channel).dropFirst(Fixture.settleFrames).reduce(0.0) { $0 + Double($1) * Double($1) }
        }
        let total = energies.reduce(0, +)
        return energies.map { $0 / total }
    }

    @Test func onSurround51ASourceAt110DegreesIsMostlyInTheSurroundRight() throws {
        let shares = try Self.energyShares(azimuth: 110, route: .surround51)
        let sideRight = ChannelLayout.surround51.speakers.firstIndex(of: .sideRight)!
        #expect(shares.indices.max { shares[$0] < shares[$1] } == sideRight, "shares \(shares)")
        #expect(shares[sideRight] > 0.5, "surround right holds \(shares[sideRight] * 100)% of the energy")
    }

    @Test func onSurround51ASourceAheadIsMostlyInTheCentreAndFront() throws {
        let shares = try Self.energyShares(azimuth: 0, route: .surround51)
        let speakers = ChannelLayout.surround51.speakers
        let centre = speakers.firstIndex(of: .frontCenter)!
        let front = [centre, speakers.firstIndex(of: .frontLeft)!, speakers.firstIndex(of: .frontRight)!]
        #expect(shares.indices.max { shares[$0] < shares[$1] } == centre, "shares \(shares)")
        #expect(front.map { shares[$0] }.reduce(0, +) > 0.9, "centre and front pair hold \(front.map { shares[$0] }) of the energy")
        #expect(shares[speakers.firstIndex(of: .lowFrequency)!] == 0)
    }

    /// The field is encoded for each block just before OpenAL plays it: a
    /// tone through it has no seam where one block's chunk meets the next,
    /// on any route, as a stale or missing sample there would make one.
    @Test(arguments: [OutputRoute.headphones, .speakers, .surround51])
    func aToneThroughTheFieldHasNoSeamBetweenBlocks(route: OutputRoute) throws {
        // 1,013 Hz: what the stream's buffer held a loop of its chunks ago is at another phase.
        let tone = Signals.sine(frequency: 1_013, frames: 48_000, amplitude: 0.3)
        let room = Fixture.room([Fixture.point(tone, at: .fixed(Fixture.position(azimuth: 40)), loop: true, algorithm: .soundField)],
                                route: route)
        let output = try RoomRenderer(room: room).render(seconds: 1)
        for channel in 0..<output.channelCount {
            let samples = Array(output.channel(channel).dropFirst(Fixture.settleFrames))
            let peak = samples.map(abs).max() ?? 0
            // A sine moves at most 2π·f/48000 of its peak from one sample to the next.
            let limit = peak * Float(2 * Double.pi * 1_013 / 48_000) * 1.3
            let step = Measure.largestStep(samples)
            #expect(peak == 0 || step <= limit, "\(route) channel \(channel): a step of \(step) where the tone of peak \(peak) moves \(limit)")
        }
    }

    @Test func onHeadphonesItRendersBinaurally() throws {
        for azimuth in [90.0, -90] {
            let ears = try Fixture.render(Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: azimuth)),
                                                                      algorithm: .soundField)]))
            let ild = Measure.levelDifference(left: ears.left, right: ears.right)
            let itd = Measure.timeDifference(left: Biquad.lowPassed(ears.left, cutoff: 1_500), right: Biquad.lowPassed(ears.right, cutoff: 1_500))
            // ILD is right over left: a source on the right is louder there and reaches it first.
            #expect(azimuth > 0 ? ild > 6 : ild < -6, "ILD \(ild) dB at \(azimuth) degrees")
            #expect(azimuth > 0 ? itd > 300e-6 : itd < -300e-6, "ITD \(itd * 1e6) µs at \(azimuth) degrees")
        }
    }

    @Test func itFollowsTheDistanceLaw() throws {
        func level(_ distance: Double) throws -> Double {
            let room = Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: 30, distance: distance)),
                                                   algorithm: .soundField)], route: .surround51)
            let output = try RoomRenderer(room: room).render(seconds: 1)
            return Measure.rmsDecibels(Array(output.samples.dropFirst(Fixture.settleFrames * 6)))
        }
        let drop = try level(2) - level(4)
        #expect(abs(drop - 6.02) < 0.05, "doubling the distance lost \(drop) dB")
    }

    @Test func itIsSampleAlignedWithTheOpenALBuses() throws {
        var click = [Float](repeating: 0, count: 48_000)
        click[24_000] = 0.5
        func peak(_ algorithm: SourceAlgorithm) throws -> Int {
            let room = Fixture.room([Fixture.point(click, at: .fixed(Fixture.position(azimuth: -30, distance: 1)), algorithm: algorithm)],
                                    route: .speakers)
            let left = try RoomRenderer(room: room).render(seconds: 1).channel(0)
            return left.indices.max { abs(left[$0]) < abs(left[$1]) }!
        }
        let panned = try peak(.panning), field = try peak(.soundField)
        #expect(panned == field && field > 24_000, "panning peaks at \(panned), soundField at \(field)")
    }

    @Test(arguments: bedCases)
    func everyBedLayoutRendersAsASoundFieldAndTurnsWithTheListener(_ bed: BedCase) throws {
        let audio = bed.encode(Fixture.noise())
        func ears(yaw: Double, position: Position = .zero) throws -> (left: [Float], right: [Float]) {
            try BedLayoutTests.ears(audio, layout: bed.layout, listenerYaw: yaw, listenerPosition: position, algorithm: .soundField)
        }
        // Facing 90 degrees left, a sound from 30 degrees left is 60 degrees to the right.
        let ahead = try ears(yaw: 0), turned = try ears(yaw: -90)
        let before = Measure.levelDifference(left: ahead.left, right: ahead.right)
        let after = Measure.levelDifference(left: turned.left, right: turned.right)
        #expect(before < -3 && after > 3, "\(bed.name): ILD \(before) dB facing ahead, \(after) dB turned left")
        let moved = try ears(yaw: 0, position: Position(30, 2, -45))
        #expect(moved.left == ahead.left && moved.right == ahead.right, "\(bed.name): moving the listener changed the bed")
    }
}
