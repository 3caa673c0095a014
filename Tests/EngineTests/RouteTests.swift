import AudioCore
import AudioMeasurements
import Engine
import Spatial
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct RouteTests {
    @Test func everyRouteHasItsAutomaticAlgorithm() {
        let table = OutputRoute.allCases.map { ($0, $0.layout, $0.automaticAlgorithm) }
        #expect(table.map(\.2) == [.hrtf, .hrtf, .hrtf, .panning, .panning, .panning, .panning, .panning, .panning], "\(table)")
        #expect(table.map(\.1) == [.stereo, .stereo, .stereo, .stereo, .stereo, .stereo, .surround51, .surround71, .mono])
    }

    @Test(arguments: OutputRoute.allCases)
    func everyRouteRendersItsChannels(route: OutputRoute) throws {
        let room = Fixture.room([Fixture.point(Fixture.noise(seconds: 0.5), at: .fixed(Fixture.position(azimuth: 20)))], route: route)
        let renderer = try RoomRenderer(room: room)
        let output = try renderer.render(seconds: 0.5)
        #expect(renderer.algorithm == route.automaticAlgorithm)
        #expect(output.channelCount == route.layout.channelCount && output.frameCount == 24_000)
        let audible = (0..<output.channelCount).filter { Measure.rmsDecibels(output.channel($0)) > -60 }
        #expect(!audible.isEmpty)
    }

    /// Each channel's share of the total energy.
    static func energyShares(route: OutputRoute, azimuth: Double) throws -> [Speaker: Double] {
        let room = Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: azimuth)))], route: route)
        let output = try RoomRenderer(room: room).render(seconds: 1)
        let energies = (0..<output.channelCount).map { pow(Measure.rms(Array(output.channel($0).dropFirst(Fixture.settleFrames))), 2) }
        let total = energies.reduce(0, +)
        return Dictionary(uniqueKeysWithValues: zip(route.layout.speakers, energies.map { $0 / total }))
    }

    @Test func surround51PutsASourceAt110DegreesInTheSurroundRight() throws {
        let shares = try Self.energyShares(route: .surround51, azimuth: 110)
        #expect(shares.max { $0.value < $1.value }?.key == .sideRight, "\(shares)")
        #expect(shares[.sideRight]! > 0.5, "\(shares)")
    }

    @Test func surround51PutsASourceAheadInTheCentreAndFront() throws {
        let shares = try Self.energyShares(route: .surround51, azimuth: 0)
        // OpenAL Soft 1.19's built-in 5.1 decoder leaves the centre to dialogue:
        // a source ahead reaches it through the front pair.
        let front = shares[.frontCenter]! + shares[.frontLeft]! + shares[.frontRight]!
        #expect(front > 0.8, "\(shares)")
        #expect(abs(shares[.frontLeft]! - shares[.frontRight]!) < 0.01)
    }

    @Test func surround71PutsASourceBehindInTheBackChannels() throws {
        let shares = try Self.energyShares(route: .surround71, azimuth: -150)
        #expect(shares.max { $0.value < $1.value }?.key == .backLeft, "\(shares)")
    }

    @Test func monoIsADownmixThatIgnoresDirection() throws {
        let levels = try [0.0, 90.0, -135.0].map { azimuth in
            let room = Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: azimuth)))], route: .mono)
            return Measure.rmsDecibels(Array(try RoomRenderer(room: room).render(seconds: 1).samples.dropFirst(Fixture.settleFrames)))
        }
        #expect(levels.max()! - levels.min()! < 0.5, "\(levels)")
    }
}
