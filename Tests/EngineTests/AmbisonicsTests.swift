import AudioCore
import Spatial
import Testing

@Suite struct AmbisonicsTests {
    /// A sampling decoder is exact when the speakers integrate every
    /// product of harmonics up to the order, i.e. (1/L) Σ Y_i Y_j = δ_ij / (2n+1) in SN3D.
    @Test(arguments: [2, 3])
    func virtualSpeakersSampleTheSphereEvenly(order: Int) {
        let directions = Ambisonics.virtualSpeakerDirections(order: order)
        let rows = directions.map { Ambisonics.harmonics(direction: $0, order: order) }
        let count = Ambisonics.channelCount(order: order)
        var worst = 0.0
        for i in 0..<count {
            for j in 0..<count {
                let mean = rows.reduce(0) { $0 + $1[i] * $1[j] } / Double(directions.count)
                let degree = Int(Double(i).squareRoot())
                worst = max(worst, abs(mean - (i == j ? 1 / Double(2 * degree + 1) : 0)))
            }
        }
        #expect(worst < (order <= 2 ? 1e-12 : 0.02), "order \(order) with \(directions.count) speakers: worst error \(worst)")
    }

    @Test func harmonicsPointWhereAmbiXSays() {
        // Ahead is +X (ACN 3), left is +Y (ACN 1), up is +Z (ACN 2).
        let ahead = Ambisonics.harmonics(direction: [0, 0, -1], order: 1)
        let left = Ambisonics.harmonics(direction: [-1, 0, 0], order: 1)
        let up = Ambisonics.harmonics(direction: [0, 1, 0], order: 1)
        #expect(ahead == [1, 0, 0, 1] && left == [1, 1, 0, 0] && up == [1, 0, 1, 0])
    }
}
