import AudioCore
import AudioMeasurements
import Testing

@Suite struct SampleRingTests {
    /// A sine pushed through a ring of an awkward size, in pieces that keep
    /// crossing its end, comes out sample for sample, and a full ring takes
    /// only what fits.
    @Test func aSineCrossesTheRingsEndIntact() {
        let sine = Signals.sine(frequency: 997, frames: 48_000, amplitude: 0.5)
        let ring = SampleRing(capacity: 1_001)
        var out: [Float] = []
        var written = 0
        var piece = [Float](repeating: 0, count: 700)
        let sizes = [480, 960, 123, 700, 1, 333]
        var turn = 0
        while out.count < sine.count {
            let size = sizes[turn % sizes.count]
            turn += 1
            if written < sine.count {
                let end = min(sine.count, written + size)
                written += sine[written..<end].withUnsafeBufferPointer { ring.write($0) }
            }
            #expect(ring.count <= ring.capacity)
            let got = piece.withUnsafeMutableBufferPointer { ring.read(into: $0) }
            out += piece[..<got]
        }
        var worst: Float = 0
        for (a, b) in zip(sine, out) { worst = max(worst, abs(a - b)) }
        #expect(out.count == sine.count)
        #expect(worst == 0)

        let full = [Float](repeating: 0.25, count: 1_500)
        let taken = full.withUnsafeBufferPointer { ring.write($0) }
        #expect(taken == 1_001)
        #expect(full.withUnsafeBufferPointer { ring.write($0) } == 0)
        ring.skip(500)
        #expect(ring.count == 501)
    }
}
