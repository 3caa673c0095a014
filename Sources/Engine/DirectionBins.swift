import Spatial

#if canImport(Glibc)
import Glibc
#endif

/// A fixed grid of directions around the listener, onto which the field
/// pans its crowd: each crowd source lands on the four grid points around
/// its direction, and each grid point is encoded into the field once per
/// chunk however many sources share it.
///
/// Rings every 30° of elevation, with a point every 15° of azimuth up to
/// ±30° and every 30° at ±60°, and one at each pole: 98 points. Third-order
/// harmonics change little across 15°, so a source panned between two
/// neighbours gives nearly the field it would alone.
struct DirectionBins {
    static let rings: [(elevation: Double, points: Int)] = [(-90, 1), (-60, 12), (-30, 24), (0, 24), (30, 24), (60, 12), (90, 1)]
    static let count = rings.reduce(0) { $0 + $1.points }

    /// Up to four grid points and their weights, which sum to 1.
    struct Weights {
        var bins = SIMD4<Int32>()
        var weights = SIMD4<Float>()

        subscript(index: Int) -> (bin: Int, weight: Float) { (Int(bins[index]), weights[index]) }

        /// The weight this set gives `bin`, 0 if none.
        func weight(of bin: Int) -> Float {
            weights.replacing(with: 0, where: bins .!= SIMD4(repeating: Int32(bin))).max()
        }
    }

    /// Each ring's first point's index. Made with the first crowd source
    /// (`prepare`), not on the render thread, where making it would allocate.
    private static let ringStarts = rings.indices.map { ring in rings[..<ring].reduce(0) { $0 + $1.points } }

    /// Makes the tables `weights` reads, off the render thread.
    static func prepare() { _ = ringStarts.count + directions.count }

    /// Every point's direction in the listener's frame (OpenAL axes), by index.
    static let directions: [SIMD3<Double>] = rings.flatMap { ring in
        (0..<ring.points).map { point in
            direction(azimuth: Double(point) * 360 / Double(ring.points), elevation: ring.elevation)
        }
    }

    /// A unit direction in OpenAL axes: azimuth clockwise from ahead, elevation up.
    static func direction(azimuth: Double, elevation: Double) -> SIMD3<Double> {
        let a = azimuth * .pi / 180, e = elevation * .pi / 180
        return SIMD3(sin(a) * cos(e), sin(e), -cos(a) * cos(e))
    }

    /// Bilinear weights for `direction` (any length but 0), in the listener's frame.
    /// Worked out in single precision, once per source and block: a 15°
    /// grid needs no more, and a crowd of thousands asks every block.
    static func weights(for direction: SIMD3<Double>) -> Weights {
        let x = Float(direction.x), y = Float(direction.y), z = Float(direction.z)
        let length = (x * x + y * y + z * z).squareRoot()
        // Sources level with the listener, the usual case, need no arcsine.
        let elevation = y == 0 ? 0 : asinf(max(-1, min(1, y / length))) * 180 / .pi
        var azimuth = atan2f(x, -z) * 180 / .pi
        if azimuth < 0 { azimuth += 360 }
        var lower = 0
        while lower < rings.count - 2 && Float(rings[lower + 1].elevation) <= elevation { lower += 1 }
        let up = (elevation - Float(rings[lower].elevation)) / Float(rings[lower + 1].elevation - rings[lower].elevation)
        /// The two neighbouring points of `ring` around the azimuth, and how far it is from the first to the second.
        func around(in ring: Int) -> (first: Int32, second: Int32, across: Float) {
            let points = rings[ring].points, start = ringStarts[ring]
            guard points > 1 else { return (Int32(start), Int32(start), 0) }
            let position = azimuth * Float(points) / 360
            let whole = position.rounded(.down)
            let first = Int(whole) % points
            return (Int32(start + first), Int32(start + (first + 1) % points), position - whole)
        }
        let below = around(in: lower), above = around(in: lower + 1)
        return Weights(bins: SIMD4(below.first, below.second, above.first, above.second),
                       weights: SIMD4((1 - up) * (1 - below.across), (1 - up) * below.across, up * (1 - above.across), up * above.across))
    }
}
