import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A crowd renders its loudest sources alone and the rest through the
/// third-order field: what that costs in direction and in level.
@Suite struct LevelOfDetailTests {
    /// Every source in the field, none alone.
    static let allInTheField = LevelOfDetail(crowdThreshold: 0, perSourceVoices: 0)

    /// `count` sources circling the listener 2 to 9 m away, each its own noise.
    static func crowd(_ count: Int) -> Room {
        let sources = (0..<count).map { index -> RoomSource in
            let radius = 2 + Double(index % 8), period = 4 + Double(index % 5), start = Double(index) / Double(count) * 360
            let keyframes = (0...12).map { step in
                MotionPath.Keyframe(time: period * Double(step) / 12,
                                    position: Fixture.position(azimuth: start + 30 * Double(step), distance: radius))
            }
            return Fixture.point(Fixture.noise(seconds: 1, seed: UInt64(index + 1)), at: .moving(MotionPath(keyframes: keyframes, repeats: true)),
                                 id: "s\(index)", loop: true)
        }
        return Fixture.room(sources)
    }

    @Test func aCrowdIsAsLoudAsEverySourceRenderedAlone() throws {
        let room = Self.crowd(96)
        let crowd = try RoomRenderer(room: room)
        #expect(crowd.choices.allSatisfy { $0.description.hasPrefix("crowd of 96") })
        try Self.expectAsLoudAsEverySourceAlone(crowd, room: room, seconds: 3)
    }

    /// Each ear's level of `crowd`, rendering `room`, within 1 dB of the room with every source alone.
    static func expectAsLoudAsEverySourceAlone(_ crowd: RoomRenderer, room: Room, seconds: Double) throws {
        let rendered = try crowd.render(seconds: seconds)
        let reference = try RoomRenderer(room: room, levelOfDetail: .full).render(seconds: seconds)
        for ear in 0..<2 {
            let level = Measure.rmsDecibels(Array(rendered.channel(ear).dropFirst(Fixture.settleFrames)))
            let full = Measure.rmsDecibels(Array(reference.channel(ear).dropFirst(Fixture.settleFrames)))
            print("crowd of \(room.sources.count), ear \(ear): \(level) dBFS against \(full) dBFS with every source alone")
            #expect(abs(level - full) <= 1, "ear \(ear): \(level) dBFS in the crowd, \(full) dBFS alone")
        }
    }

    /// The interaural time difference of a source in the field, read back
    /// as the direction that gives it when the source is rendered alone.
    @Test func aSourceInTheFieldKeepsItsDirectionWithinTenDegrees() throws {
        let azimuths = stride(from: 0.0, through: 90, by: 15).map { $0 }
        // Below 1 kHz, where the ear reads the time difference from the phase.
        let cutoff = 1_000.0
        func itd(_ azimuth: Double, _ detail: LevelOfDetail) throws -> Double {
            let room = Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: azimuth)))])
            let output = try RoomRenderer(room: room, levelOfDetail: detail).render(seconds: 1)
            let left = Biquad.lowPassed(Array(output.channel(0).dropFirst(Fixture.settleFrames)), cutoff: cutoff)
            let right = Biquad.lowPassed(Array(output.channel(1).dropFirst(Fixture.settleFrames)), cutoff: cutoff)
            return Measure.timeDifference(left: left, right: right)
        }
        let alone = try azimuths.map { try itd($0, .full) }
        print("ITD alone, µs: \(alone.map { Int($0 * 1e6) })")
        #expect(zip(alone, alone.dropFirst()).allSatisfy { $0 < $1 }, "ITD grows towards the side: \(alone)")
        for azimuth in azimuths.dropFirst() {
            let fieldITD = try itd(azimuth, Self.allInTheField)
            let heard = Measure.azimuth(ofTimeDifference: fieldITD, measured: alone, at: azimuths)
            print("field at \(azimuth) degrees: ITD \(Int(fieldITD * 1e6)) µs, heard at \(heard), error \(abs(heard - azimuth))")
            #expect(abs(heard - azimuth) <= 10, "a source at \(azimuth) degrees is heard at \(heard) in the field")
        }
    }

    @Test func aSourceInTheFieldFollowsTheDistanceLaw() throws {
        func level(_ distance: Double) throws -> Double {
            let room = Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: 40, distance: distance)))])
            let output = try RoomRenderer(room: room, levelOfDetail: Self.allInTheField).render(seconds: 1)
            return Measure.rmsDecibels(Array(output.channel(0).dropFirst(Fixture.settleFrames)) + Array(output.channel(1).dropFirst(Fixture.settleFrames)))
        }
        let loss = try level(2) - level(4)
        #expect(abs(loss - 6.02) <= 0.1, "doubling the distance loses \(loss) dB")
    }
}
