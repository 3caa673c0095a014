import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial
import Testing

@Suite struct AlgorithmTests {
    static func ears(_ algorithm: SourceAlgorithm, azimuth: Double) throws -> (left: [Float], right: [Float]) {
        try Fixture.render(Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: azimuth)),
                                                       algorithm: algorithm)]))
    }

    @Test func hrtfAndPanningContrastAt90Degrees() throws {
        let binaural = try Self.ears(.hrtf, azimuth: 90)
        let panned = try Self.ears(.panning, azimuth: 90)
        let hrtfDelay = Measure.timeDifference(left: Biquad.lowPassed(binaural.left, cutoff: 1_500),
                                               right: Biquad.lowPassed(binaural.right, cutoff: 1_500))
        let panDelay = Measure.timeDifference(left: panned.left, right: panned.right)
        #expect(hrtfDelay > 500e-6, "HRTF ITD \(hrtfDelay * 1e6) µs")
        #expect(abs(panDelay) < 50e-6, "panning ITD \(panDelay * 1e6) µs")
        #expect(Measure.levelDifference(left: panned.left, right: panned.right) > 6)
    }

    @Test func aRoomMixingAlgorithmsIsTheSampleAlignedSumOfItsParts() throws {
        let binaural = Fixture.point(Fixture.noise(seed: 3), at: .fixed(Fixture.position(azimuth: -60)), id: "binaural", gain: -12, algorithm: .hrtf)
        let panned = Fixture.point(Fixture.noise(seed: 4), at: .fixed(Fixture.position(azimuth: 45)), id: "panned", gain: -12, algorithm: .panning)
        let music = Fixture.headLocked(AudioBuffer(channelCount: 2, interleaved: Signals.whiteNoise(frames: 96_000, rms: 0.05, seed: 5)), gain: -6)
        let render = { (sources: [RoomSource]) in try RoomRenderer(room: Fixture.room(sources)).render(seconds: 1).samples }
        let together = try render([binaural, panned, music])
        let parts = try [render([binaural]), render([panned]), render([music])]
        let worst = together.indices.map { abs(together[$0] - parts[0][$0] - parts[1][$0] - parts[2][$0]) }.max()!
        #expect(worst < 1e-6, "largest difference from the sum of the parts: \(worst)")
        #expect(Measure.rms(parts[0]) > 0.005 && Measure.rms(parts[1]) > 0.005 && Measure.rms(parts[2]) > 0.005)
    }

    @Test func passthroughMonoReachesBothEarsEqually() throws {
        let renderer = try RoomRenderer(room: Fixture.room([Fixture.headLocked(AudioBuffer(mono: Fixture.noise()), algorithm: .passthrough)]))
        let output = try renderer.render(seconds: 1)
        #expect(output.channel(0) == output.channel(1))
        #expect(Measure.rms(output.channel(0)) > 0.09)
    }

    @Test(arguments: [SourceMode.spatializeIfMono, .bypass, .point])
    func passthroughStereoIsBitExactApartFromTheGain(mode: SourceMode) throws {
        let stereo = AudioBuffer(channelCount: 2, interleaved: Signals.whiteNoise(frames: 96_000, rms: 0.2, seed: 9))
        let source = Fixture.headLocked(stereo, mode: mode, algorithm: mode == .point ? .passthrough : .auto, gain: -6)
        let renderer = try RoomRenderer(room: Fixture.room([source]))
        #expect(renderer.choices[0].algorithm == nil)
        let output = try renderer.render(seconds: 1).samples
        let gain = Float(Level.linear(fromDecibels: -6))
        let delay = renderer.latencyFrames * 2
        #expect(output[0..<delay].allSatisfy { $0 == 0 })
        #expect((delay..<output.count).allSatisfy { output[$0] == stereo.samples[$0 - delay] * gain })
    }

    @Test func passthroughIsAlignedWithTheOpenALBuses() throws {
        // The same click, once through panning straight ahead and once
        // head-locked: both peak on the same frame.
        var click = [Float](repeating: 0, count: 48_000)
        click[24_000] = 0.5
        let panned = try RoomRenderer(room: Fixture.room([Fixture.point(click, at: .fixed(Fixture.position(azimuth: 0, distance: 1)))],
                                                         route: .speakers)).render(seconds: 1).channel(0)
        let direct = try RoomRenderer(room: Fixture.room([Fixture.headLocked(AudioBuffer(mono: click))], route: .speakers))
            .render(seconds: 1).channel(0)
        let peak = { (signal: [Float]) in signal.indices.max { abs(signal[$0]) < abs(signal[$1]) }! }
        #expect(peak(panned) == peak(direct) && peak(direct) > 24_000, "panned \(peak(panned)), passthrough \(peak(direct))")
    }

    @Test func spatializeIfMonoMakesMonoAPointAndStereoPassthrough() throws {
        let mono = RoomSource(SourceDescription(id: "m", audioPath: "generated", audioField: Fixture.field("m"),
                                                mode: .spatializeIfMono, placement: .fixed(Fixture.position(azimuth: 90))),
                              audio: AudioBuffer(mono: Fixture.noise(seconds: 0.2)))
        let stereo = Fixture.headLocked(AudioBuffer(channelCount: 2, interleaved: Fixture.noise(seconds: 0.4)), id: "s")
        let renderer = try RoomRenderer(room: Fixture.room([mono, stereo]))
        #expect(renderer.choices.map(\.description) == ["auto on headphones -> hrtf", "spatializeIfMono with 2 channels -> passthrough"])
    }

    @Test func passthroughFoldsOntoLayoutsThatLackItsChannels() throws {
        // 5.1 with only the centre speaking, on stereo: both sides at -3 dB.
        let centre = Fixture.noise()
        let surround = AudioBuffer(channelCount: 6, interleaved: centre.flatMap { [0, 0, $0, 0, 0, 0] })
        let stereo = try RoomRenderer(room: Fixture.room([Fixture.headLocked(surround)], route: .speakers)).render(seconds: 1)
        let expected = Measure.rmsDecibels(centre) - 3.01
        #expect(abs(Measure.rmsDecibels(stereo.channel(0)) - expected) < 0.05 && stereo.channel(0) == stereo.channel(1))
        // Stereo on 5.1: the front pair, nothing elsewhere.
        let pair = AudioBuffer(channelCount: 2, interleaved: Signals.whiteNoise(frames: 96_000, rms: 0.1))
        let onSurround = try RoomRenderer(room: Fixture.room([Fixture.headLocked(pair)], route: .surround51)).render(seconds: 1)
        #expect((2..<6).allSatisfy { onSurround.channel($0).allSatisfy { $0 == 0 } })
        #expect(Measure.rms(onSurround.channel(0)) > 0.09 && Measure.rms(onSurround.channel(1)) > 0.09)
    }

    @Test func anHrtfSourceOnSurroundPlaysOnTheFrontPair() throws {
        let room = Fixture.room([Fixture.point(Fixture.noise(), at: .fixed(Fixture.position(azimuth: 90)), algorithm: .hrtf)],
                                route: .surround51)
        let renderer = try RoomRenderer(room: room)
        let output = try renderer.render(seconds: 1)
        #expect(renderer.hrtfName != nil)
        let left = output.channel(0), right = output.channel(1)
        #expect(Measure.levelDifference(left: left, right: right) > 6)
        #expect((2..<6).allSatisfy { Measure.rms(output.channel($0)) == 0 })
    }
}
