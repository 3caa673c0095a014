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
        var bins: (Int, Int, Int, Int) = (0, 0, 0, 0)
        var weights: (Float, Float, Float, Float) = (0, 0, 0, 0)

        subscript(index: Int) -> (bin: Int, weight: Float) {
            switch index {
            case 0: (bins.0, weights.0)
            case 1: (bins.1, weights.1)
            case 2: (bins.2, weights.2)
            default: (bins.3, weights.3)
            }
        }

        mutating func set(_ index: Int, bin: Int, weight: Float) {
            switch index {
            case 0: (bins.0, weights.0) = (bin, weight)
            case 1: (bins.1, weights.1) = (bin, weight)
            case 2: (bins.2, weights.2) = (bin, weight)
            default: (bins.3, weights.3) = (bin, weight)
            }
        }

        /// The weight this set gives `bin`, 0 if none.
        func weight(of bin: Int) -> Float {
            for index in 0..<4 where self[index].bin == bin { return self[index].weight }
            return 0
        }
    }

    /// Ring `ring`'s first point's index; worked out each time rather than
    /// kept in a lazily made table, whose making would allocate on the
    /// render thread, the first to ask.
    private static func ringStart(_ ring: Int) -> Int { rings[..<ring].reduce(0) { $0 + $1.points } }

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
    static func weights(for direction: SIMD3<Double>) -> Weights {
        let length = (direction * direction).sum().squareRoot()
        let elevation = asin(max(-1, min(1, direction.y / length))) * 180 / .pi
        var azimuth = atan2(direction.x, -direction.z) * 180 / .pi
        if azimuth < 0 { azimuth += 360 }
        var lower = 0
        while lower < rings.count - 2 && rings[lower + 1].elevation <= elevation { lower += 1 }
        let up = Float((elevation - rings[lower].elevation) / (rings[lower + 1].elevation - rings[lower].elevation))
        var result = Weights()
        func pan(into slot: Int, ring: Int, share: Float) {
            let points = rings[ring].points, start = ringStart(ring)
            guard points > 1 else {
                result.set(slot, bin: start, weight: share)
                result.set(slot + 1, bin: start, weight: 0)
                return
            }
            let position = azimuth / (360 / Double(points))
            let first = Int(position) % points
            let across = Float(position - position.rounded(.down))
            result.set(slot, bin: start + first, weight: share * (1 - across))
            result.set(slot + 1, bin: start + (first + 1) % points, weight: share * across)
        }
        pan(into: 0, ring: lower, share: 1 - up)
        pan(into: 2, ring: lower + 1, share: up)
        return result
    }
}
