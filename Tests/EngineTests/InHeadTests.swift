import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial
import Testing

@Suite struct InHeadTests {
    /// Per-block levels in dB of each ear, for a tone passing straight
    /// through the listener's head from 1 m left to 1 m right in 2 s.
    static func crossing(_ algorithm: SourceAlgorithm = .auto, inHead: InHeadRendering = .mono) throws -> (left: [Double], right: [Double]) {
        let path = MotionPath(keyframes: [.init(time: 0, position: Position(-1, 0, 0)),
                                          .init(time: 2, position: Position(1, 0, 0))], repeats: false)
        let tone = Signals.sine(frequency: 500, frames: 96_000, amplitude: 0.3)
        let source = Fixture.point(tone, at: .moving(path), algorithm: algorithm, inHead: inHead)
        let output = try RoomRenderer(room: Fixture.room([source])).render(seconds: 2)
        func blocks(_ samples: [Float]) -> [Double] {
            stride(from: 4_800, to: samples.count - 480, by: 480).map { Measure.rmsDecibels(Array(samples[$0..<($0 + 480)])) }
        }
        return (blocks(output.channel(0)), blocks(output.channel(1)))
    }

    @Test(arguments: [SourceAlgorithm.hrtf, .soundField], [InHeadRendering.mono, .bypass])
    func crossingTheHeadHasNoJumpAbove1dBPerBlock(algorithm: SourceAlgorithm, inHead: InHeadRendering) throws {
        let ears = try Self.crossing(algorithm, inHead: inHead)
        for (name, levels) in [("left", ears.left), ("right", ears.right)] {
            let jumps = zip(levels, levels.dropFirst()).map { abs($1 - $0) }
            #expect(jumps.max()! <= 1, "\(algorithm), \(inHead): \(name) ear jumps \(jumps.max()!) dB in one block")
            #expect(levels.allSatisfy { $0 < 0 }, "\(name) ear clips or blows up")
        }
    }

    @Test func aSourceInsideTheHeadStaysOnItsSide() throws {
        for x in [0.05, -0.05] {
            let tone = Signals.sine(frequency: 500, frames: 48_000, amplitude: 0.3)
            let ears = try Fixture.render(Fixture.room([Fixture.point(tone, at: .fixed(Position(x, 0, 0)))]))
            let ild = Measure.levelDifference(left: ears.left, right: ears.right)
            // Nearly centred in the head, but never on the other side.
            #expect(x > 0 ? ild >= 0 : ild <= 0, "ILD \(ild) dB at x = \(x) m")
            #expect(abs(ild) < 6, "ILD \(ild) dB at x = \(x) m: inside the head a source is close to centred")
        }
        let centre = try Fixture.render(Fixture.room([Fixture.point(Signals.sine(frequency: 500, frames: 48_000, amplitude: 0.3),
                                                                   at: .fixed(.zero))]))
        #expect(abs(Measure.levelDifference(left: centre.left, right: centre.right)) < 0.5)
    }

    @Test func bypassInsideTheHeadIsTheFileOnBothEars() throws {
        let tone = Signals.sine(frequency: 500, frames: 48_000, amplitude: 0.3)
        for algorithm in [SourceAlgorithm.hrtf, .soundField] {
            let renderer = try RoomRenderer(room: Fixture.room([Fixture.point(tone, at: .fixed(Position(0.03, 0, 0)), gain: -6,
                                                                              algorithm: algorithm, inHead: .bypass)]))
            let output = try renderer.render(seconds: 1)
            let delay = renderer.latencyFrames, gain = Float(Level.linear(fromDecibels: -6))
            let left = output.channel(0)
            let worst = (delay..<48_000).map { abs(left[$0] - tone[$0 - delay] * gain) }.max()!
            #expect(left == output.channel(1) && worst < 1e-6, "\(algorithm): off the file by \(worst)")
        }
    }
}
