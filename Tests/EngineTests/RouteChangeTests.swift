import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial
import Testing

@Suite struct RouteChangeTests {
    static let switchFrame = 48_000

    /// A tone at 45 degrees and looping noise behind: continuous sounds, one
    /// on each rendering path.
    static var room: Room {
        Fixture.room([
            Fixture.point(Signals.sine(frequency: 500, frames: 24_000, amplitude: 0.3), at: .fixed(Fixture.position(azimuth: 45)),
                          id: "tone", loop: true),
            Fixture.point(Fixture.noise(seconds: 0.7, seed: 11), at: .fixed(Fixture.position(azimuth: 160)), id: "noise", gain: -12, loop: true),
        ])
    }

    @Test func aRendererStartedLatePicksUpWhereTheRoomIs() throws {
        let whole = try RoomRenderer(room: Self.room, route: .speakers).render(seconds: 2).samples
        let late = try RoomRenderer(room: Self.room, route: .speakers, startingAt: Self.switchFrame).render(seconds: 1).samples
        // OpenAL fades a voice in over the first block it plays in and then
        // delays it by its latency; from there the two agree sample for sample.
        let settle = 2 * (RoomRenderer.blockFrames + 120)
        let worst = (settle..<late.count).map { abs(late[$0] - whole[2 * Self.switchFrame + $0]) }.max()!
        #expect(worst < 1e-6, "largest difference \(worst)")
    }

    @Test func aRouteChangeCrossfadesWithoutAClick() throws {
        let player = try RoomPlayer(room: Self.room, route: .headphones)
        var output = [Float](repeating: 0, count: 2 * 96_000)
        try output.withUnsafeMutableBufferPointer { samples in
            for block in 0..<200 {
                if block * 480 == Self.switchFrame { try player.changeRoute(to: .speakers) }
                try player.render(into: UnsafeMutableBufferPointer(rebasing: samples[(block * 960)..<((block + 1) * 960)]), frameCount: 480)
            }
        }
        let before = try RoomRenderer(room: Self.room, route: .headphones).render(seconds: 2)
        let after = try RoomRenderer(room: Self.room, route: .speakers).render(seconds: 2)
        for channel in 0..<2 {
            let signal = stride(from: channel, to: output.count, by: 2).map { output[$0] }
            let around = Array(signal[(Self.switchFrame - 480)..<(Self.switchFrame + 3_360)])
            let elsewhere = Array(signal[24_000..<(Self.switchFrame - 480)]) + Array(signal[(Self.switchFrame + 3_360)..<90_000])
            #expect(Measure.largestStep(around) <= Measure.largestStep(elsewhere),
                    "channel \(channel): step \(Measure.largestStep(around)) at the switch, \(Measure.largestStep(elsewhere)) elsewhere")

            // 10-15 ms into the fade the output is neither route: the change takes time.
            let mid = (Self.switchFrame + 480)..<(Self.switchFrame + 720)
            let old = before.channel(channel), new = after.channel(channel)
            let apart = Measure.rms(mid.map { old[$0] - new[$0] })
            #expect(Measure.rms(mid.map { signal[$0] - old[$0] }) > 0.2 * apart)
            #expect(Measure.rms(mid.map { signal[$0] - new[$0] }) > 0.2 * apart)

            // Once it has faded, it is the new route with every source in it.
            let settled = (Self.switchFrame + 4_800)..<96_000
            #expect(Measure.rms(settled.map { signal[$0] - new[$0] }) < 1e-4 * Measure.rms(settled.map { new[$0] }) + 1e-7)
        }
    }

    @Test func aRouteWithOtherChannelsIsRefusedAndPlaybackGoesOn() throws {
        let player = try RoomPlayer(room: Self.room, route: .headphones)
        #expect(throws: RouteChangeError.self) { try player.changeRoute(to: .surround51) }
        let block = try player.renderer.render(seconds: 0.1)
        #expect(player.renderer.route == .headphones && block.channelCount == 2 && Measure.rms(block.samples) > 0.01)
    }
}
