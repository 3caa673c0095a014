import AudioCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Higher-order ambisonics in AmbiX form: ACN channel order, SN3D normalisation.
public enum Ambisonics {
    public static let maximumOrder = 3

    /// Channels of a full-sphere field of `order`.
    public static func channelCount(order: Int) -> Int { (order + 1) * (order + 1) }

    /// The order whose field has `channels` channels, if one does.
    public static func order(channels: Int) -> Int? {
        (1...maximumOrder).first { channelCount(order: $0) == channels }
    }

    /// Real spherical harmonics, ACN order and SN3D, for a direction given
    /// in OpenAL axes (+X right, +Y up, -Z ahead).
    public static func harmonics(direction: SIMD3<Double>, order: Int) -> [Double] {
        let unit = direction / (direction * direction).sum().squareRoot()
        // Ambisonic axes: X ahead, Y left, Z up.
        let x = -unit.z, y = -unit.x, z = unit.y
        var values = [1.0]
        if order >= 1 { values += [y, z, x] }
        if order >= 2 {
            let s3 = 3.0.squareRoot()
            values += [s3 * x * y, s3 * y * z, (3 * z * z - 1) / 2, s3 * x * z, s3 / 2 * (x * x - y * y)]
        }
        if order >= 3 {
            let a: Double = (5.0 / 8).squareRoot(), b: Double = 15.0.squareRoot(), c: Double = (3.0 / 8).squareRoot()
            let zz: Double = 5 * z * z
            let q: Double = a * y * (3 * x * x - y * y)
            let o: Double = b * x * y * z
            let m: Double = c * y * (zz - 1)
            let k: Double = z * (zz - 3) / 2
            let l: Double = c * x * (zz - 1)
            let n: Double = b / 2 * z * (x * x - y * y)
            let p: Double = a * x * (x * x - 3 * y * y)
            values += [q, o, m, k, l, n, p]
        }
        return values
    }

    /// Directions spread evenly enough over the sphere for a sampling
    /// decoder to resolve `order`, which needs a spherical t-design with
    /// t >= 2 * order.
    ///
    /// Up to second order, the icosahedron's 12 vertices (a 5-design) are
    /// exact. For third order, a Fibonacci lattice of 36 points comes close.
    public static func virtualSpeakerDirections(order: Int) -> [SIMD3<Double>] {
        if order <= 2 {
            // Cyclic permutations of (0, ±1, ±φ).
            let phi = (1 + 5.0.squareRoot()) / 2
            let corners = [(1.0, phi), (1, -phi), (-1, phi), (-1, -phi)]
            return corners.flatMap { a, b in [SIMD3(0, a, b), SIMD3(a, b, 0), SIMD3(b, 0, a)] }
                .map { $0 / (1 + phi * phi).squareRoot() }
        }
        let count = 2 * channelCount(order: order) + 4
        let goldenAngle = Double.pi * (3 - 5.0.squareRoot())
        return (0..<count).map { index in
            let height = 1 - (2 * Double(index) + 1) / Double(count)
            let radius = (1 - height * height).squareRoot()
            let angle = goldenAngle * Double(index)
            return SIMD3(radius * sin(angle), height, -radius * cos(angle))
        }
    }

    /// Speaker feeds for `directions` from an AmbiX field: a sampling
    /// decoder, `(1 / L) * sum over n of (2n + 1) * Y_n(speaker) * field_n`,
    /// which keeps the order's full resolution and the field's pressure.
    public static func decode(_ field: AudioBuffer, order: Int, to directions: [SIMD3<Double>]) -> [[Float]] {
        precondition(field.channelCount == channelCount(order: order), "field does not match the order")
        var weights: [Double] = []
        for degree in 0...order {
            weights += [Double](repeating: Double(2 * degree + 1), count: 2 * degree + 1)
        }
        let scale = 1 / Double(directions.count)
        let rows: [[Float]] = directions.map { direction in
            let values = harmonics(direction: direction, order: order)
            return values.indices.map { Float(values[$0] * weights[$0] * scale) }
        }
        let channels = field.channelCount
        return field.samples.withUnsafeBufferPointer { samples in
            rows.map { row in
                var feed = [Float](repeating: 0, count: field.frameCount)
                for frame in 0..<field.frameCount {
                    var sum: Float = 0
                    for channel in 0..<channels { sum += row[channel] * samples[frame * channels + channel] }
                    feed[frame] = sum
                }
                return feed
            }
        }
    }
}
