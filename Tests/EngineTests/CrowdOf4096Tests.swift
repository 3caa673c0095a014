import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The crowd's quality held at 4,096 sources, each on its own path: as loud
/// as every source rendered alone, a source in the field heard where it is,
/// and a source crossing between the field and its own voice without a click.
@Suite struct CrowdOf4096Tests {
    static let count = 4_096
    /// One second of noise that every crowd source plays, each from its own sample offset.
    static let noise = Fixture.noise(seconds: 1, seed: 11)

    /// Crowd source `index`, circling 2 to 9 m away at -30 dB (the crowd stays
    /// clear of the limiter), playing `signal` from a start of its own.
    static func member(_ index: Int, of count: Int, signal: [Float] = noise, gain: Double = -30) -> RoomSource {
        let radius = 2 + Double(index % 8), period = 4 + Double(index % 5), start = Double(index) / Double(count) * 360
        let keyframes = (0...12).map { step in
            MotionPath.Keyframe(time: period * Double(step) / 12, position: Fixture.position(azimuth: start + 30 * Double(step), distance: radius))
        }
        return Fixture.point(signal, at: .moving(MotionPath(keyframes: keyframes, repeats: true)), id: "s\(index)", gain: gain,
                             loop: true, start: Double(index % 4_096) / Fixture.sampleRate)
    }

    static func crowd(_ count: Int) -> [RoomSource] { (0..<count).map { member($0, of: count) } }

    @Test func aCrowdOf4096IsAsLoudAsEverySourceRenderedAlone() throws {
        let room = Fixture.room(Self.crowd(Self.count))
        try LevelOfDetailTests.expectAsLoudAsEverySourceAlone(RoomRenderer(room: room), room: room, seconds: 0.5)
    }

    /// A quiet source among 4,095 others, too far to be among the loudest
    /// heard alone: what the crowd renders of it is the difference between
    /// the crowd with it and without it, and its interaural time difference
    /// below 1 kHz is read back as the direction that gives it alone.
    @Test func aSourceInACrowdOf4096KeepsItsDirectionWithinTenDegrees() throws {
        let azimuths = stride(from: 0.0, through: 90, by: 15).map { $0 }
        let probeNoise = Fixture.noise(seconds: 1, seed: 5)
        func itd(_ left: [Float], _ right: [Float]) -> Double {
            Measure.timeDifference(left: Biquad.lowPassed(Array(left.dropFirst(Fixture.settleFrames)), cutoff: 1_000),
                                   right: Biquad.lowPassed(Array(right.dropFirst(Fixture.settleFrames)), cutoff: 1_000))
        }
        func probe(at azimuth: Double) -> RoomSource {
            Fixture.point(probeNoise, at: .fixed(Fixture.position(azimuth: azimuth, distance: 8)), id: "probe", gain: -30, loop: true)
        }
        let alone = try azimuths.map { azimuth in
            let output = try RoomRenderer(room: Fixture.room([probe(at: azimuth)]), levelOfDetail: .full).render(seconds: 0.6)
            return itd(output.channel(0), output.channel(1))
        }
        let others = Self.crowd(Self.count - 1)
        let without = try RoomRenderer(room: Fixture.room(others)).render(seconds: 0.6)
        for azimuth in [30.0, 60, 90] {
            let with = try RoomRenderer(room: Fixture.room(others + [probe(at: azimuth)])).render(seconds: 0.6)
            let left = zip(with.channel(0), without.channel(0)).map { $0 - $1 }
            let right = zip(with.channel(1), without.channel(1)).map { $0 - $1 }
            let heard = Measure.azimuth(ofTimeDifference: itd(left, right), measured: alone, at: azimuths)
            print("probe among 4095 at \(azimuth) degrees: \(Measure.rmsDecibels(left)) dBFS, heard at \(heard), error \(abs(heard - azimuth))")
            #expect(Measure.rmsDecibels(left) > -90, "the probe is rendered: \(Measure.rmsDecibels(left)) dBFS")
            #expect(abs(heard - azimuth) <= 10, "a source at \(azimuth) degrees among 4095 is heard at \(heard)")
        }
    }

    /// A 500 Hz tone comes from 30 m to 3.5 m in 1 s, then on to 1.5 m,
    /// through 4,095 silent crowd sources 3 to 9 m away: it starts in the
    /// field, and once nearer than the 32nd of them (at 1.5 s) it crossfades
    /// to its own OpenAL voice. Above 3 kHz, where the tone is not, nothing
    /// may step out of it by more than -60 dBFS.
    @Test func aSourceCrossesFromTheFieldToItsOwnVoiceWithoutAStep() throws {
        let tone = (0..<48_000).map { Float(0.25 * sin(2 * Double.pi * 500 * Double($0) / Fixture.sampleRate)) }
        let path = MotionPath(keyframes: [MotionPath.Keyframe(time: 0, position: Fixture.position(azimuth: 40, distance: 30)),
                                          MotionPath.Keyframe(time: 1, position: Fixture.position(azimuth: 40, distance: 3.5)),
                                          MotionPath.Keyframe(time: 3, position: Fixture.position(azimuth: 40, distance: 1.5))],
                              repeats: false)
        let approaching = Fixture.point(tone, at: .moving(path), id: "tone", loop: true)
        let silence = [Float](repeating: 0, count: 4_800)
        let silent = (0..<(Self.count - 1)).map { index in
            Fixture.point(silence, at: .fixed(Fixture.position(azimuth: Double(index) * 0.7, distance: 3 + Double(index % 7))),
                          id: "s\(index)", loop: true)
        }
        let output = try RoomRenderer(room: Fixture.room(silent + [approaching])).render(seconds: 3)
        let inTheField = try RoomRenderer(room: Fixture.room([approaching]), levelOfDetail: LevelOfDetailTests.allInTheField).render(seconds: 3)
        let alone = try RoomRenderer(room: Fixture.room([approaching]), levelOfDetail: .full).render(seconds: 3)
        /// How far `a` is from `b` over frames `range`, in dB against `b`.
        func distance(_ a: [Float], _ b: [Float], _ range: Range<Int>) -> Double {
            Measure.rmsDecibels(range.map { a[$0] - b[$0] }) - Measure.rmsDecibels(range.map { b[$0] })
        }
        let early = Fixture.settleFrames..<24_000, late = 120_000..<144_000
        for ear in 0..<2 {
            let rendered = output.channel(ear)
            print("ear \(ear): early \(distance(rendered, inTheField.channel(ear), early)) dB from the field, "
                  + "late \(distance(rendered, alone.channel(ear), late)) dB from its own voice")
            #expect(distance(rendered, inTheField.channel(ear), early) < -40, "it starts in the field")
            #expect(distance(rendered, alone.channel(ear), late) < -40, "it ends on its own voice")
            let above = Biquad.highPassed(rendered, cutoff: 3_000).dropFirst(Fixture.settleFrames)
            let peak = Measure.decibels(Double(above.map(abs).max() ?? 0))
            print("ear \(ear): largest excursion above 3 kHz \(peak) dBFS")
            #expect(peak < -60, "ear \(ear): \(peak) dBFS above 3 kHz")
        }
    }
}
