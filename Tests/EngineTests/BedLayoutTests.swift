import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A bed's content for a test, and the name the scene gives its layout.
struct BedCase: CustomTestStringConvertible, Sendable {
    let name: String
    let layout: BedLayoutName?
    let channels: Int
    /// What the bed holds: a sound from 30 degrees left, as the layout carries it.
    let encode: @Sendable ([Float]) -> AudioBuffer

    var testDescription: String { name }

    static func ambisonic(order: Int) -> BedCase {
        BedCase(name: "order \(order)", layout: nil, channels: Ambisonics.channelCount(order: order)) {
            BedLayoutTests.planeWave($0, azimuth: -30, order: order)
        }
    }

    /// The sound in the front-left channel only.
    static func speakers(_ layout: ChannelLayout, named name: BedLayoutName?) -> BedCase {
        BedCase(name: layout.rawValue, layout: name, channels: layout.channelCount) { signal in
            AudioBuffer(channelCount: layout.channelCount,
                        interleaved: signal.flatMap { sample in (0..<layout.channelCount).map { $0 == 0 ? sample : 0 } })
        }
    }
}

let bedCases: [BedCase] = [
    .ambisonic(order: 1), .ambisonic(order: 2), .ambisonic(order: 3),
    .speakers(.stereo, named: nil), .speakers(.quad, named: .quad), .speakers(.surround51, named: nil), .speakers(.surround71, named: nil),
]

@Suite struct BedLayoutTests {
    /// A plane wave from `azimuth` degrees (+90 right), encoded as AmbiX of `order`.
    static func planeWave(_ signal: [Float], azimuth: Double, order: Int) -> AudioBuffer {
        let gains = Ambisonics.harmonics(direction: Fixture.position(azimuth: azimuth, distance: 1), order: order).map { Float($0) }
        return AudioBuffer(channelCount: gains.count, interleaved: signal.flatMap { sample in gains.map { $0 * sample } })
    }

    static func ears(_ audio: AudioBuffer, layout: BedLayoutName?, listenerYaw: Double = 0,
                     listenerPosition: Position = .zero, algorithm: SourceAlgorithm = .auto) throws -> (left: [Float], right: [Float]) {
        let bed = RoomSource(SourceDescription(id: "bed", audioPath: "generated",
                                               audioField: FieldLocation(file: "test.yaml", line: nil, field: "bed"),
                                               mode: .bed, bedLayout: layout, algorithm: algorithm),
                             audio: audio)
        return try Fixture.render(Fixture.room([bed], listenerPosition: listenerPosition,
                                               listenerOrientation: Orientation(yaw: listenerYaw)))
    }

    @Test(arguments: bedCases)
    func everyLayoutRendersAndTurnsWithTheListener(_ bed: BedCase) throws {
        let audio = bed.encode(Fixture.noise())
        #expect(audio.channelCount == bed.channels)
        let ahead = try Self.ears(audio, layout: bed.layout)
        let ildAhead = Measure.levelDifference(left: ahead.left, right: ahead.right)
        // Facing 90 degrees left, a sound from 30 degrees left is 60 degrees to the right.
        let turned = try Self.ears(audio, layout: bed.layout, listenerYaw: -90)
        let ildTurned = Measure.levelDifference(left: turned.left, right: turned.right)
        #expect(Measure.rmsDecibels(ahead.left + ahead.right) > -40, "\(bed.name) is near silent")
        #expect(ildAhead < -3 && ildTurned > 3, "\(bed.name): ILD \(ildAhead) dB ahead, \(ildTurned) dB turned")
    }

    @Test(arguments: bedCases)
    func movingTheListenerChangesNoLayout(_ bed: BedCase) throws {
        let audio = bed.encode(Fixture.noise(seconds: 0.5))
        let here = try Self.ears(audio, layout: bed.layout)
        let there = try Self.ears(audio, layout: bed.layout, listenerPosition: Position(12, -3, 40))
        #expect(here.left == there.left && here.right == there.right)
    }

    /// Azimuth in degrees whose Woodworth interaural delay, `radius / c * (θ + sin θ)`, is `delay`.
    static func woodworthAzimuth(delay: Double, secondsPerRadian radiusOverC: Double) -> Double {
        var low = 0.0, high = Double.pi / 2
        for _ in 0..<60 {
            let middle = (low + high) / 2
            if radiusOverC * (middle + sin(middle)) < delay { low = middle } else { high = middle }
        }
        return (low + high) / 2 * 180 / .pi
    }

    static func delay(_ ears: (left: [Float], right: [Float])) -> Double {
        Measure.timeDifference(left: Biquad.lowPassed(ears.left, cutoff: 1_500), right: Biquad.lowPassed(ears.right, cutoff: 1_500))
    }

    @Test func thirdOrderLocalisesMoreSharplyThanFirst() throws {
        // The head radius of OpenAL Soft's HRTF set, from a point source at 90 degrees.
        let side = try HRTFTests.interauralDelay(azimuth: 90)
        let radiusOverC = side / (Double.pi / 2 + 1)
        let noise = Fixture.noise()
        let azimuths = try [1, 3].map { order in
            Self.woodworthAzimuth(delay: Self.delay(try Self.ears(Self.planeWave(noise, azimuth: 60, order: order), layout: nil)),
                                  secondsPerRadian: radiusOverC)
        }
        #expect(abs(azimuths[1] - 60) <= 15, "3rd order at \(azimuths[1]) degrees")
        #expect(abs(azimuths[1] - 60) < abs(azimuths[0] - 60), "3rd order \(azimuths[1]), 1st order \(azimuths[0]) degrees")
    }
}
