import AudioCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The encoding half of ambisonics; the channel counts live in AudioCore.
extension Ambisonics {
    /// Real spherical harmonics, ACN order and SN3D, for a direction given
    /// in OpenAL axes (+X right, +Y up, -Z ahead).
    public static func harmonics(direction: SIMD3<Double>, order: Int) -> [Double] {
        [Double](unsafeUninitializedCapacity: channelCount(order: order)) { values, count in
            harmonics(direction: direction, order: order, into: values)
            count = values.count
        }
    }

    /// The harmonics written into `values`, which holds `channelCount(order:)`
    /// of them: the form the render path uses, which allocates nothing.
    public static func harmonics(direction: SIMD3<Double>, order: Int, into values: UnsafeMutableBufferPointer<Double>) {
        precondition(values.count == channelCount(order: order), "room for every harmonic of the order")
        let unit = direction / (direction * direction).sum().squareRoot()
        // Ambisonic axes: X ahead, Y left, Z up.
        let x = -unit.z, y = -unit.x, z = unit.y
        values[0] = 1
        if order >= 1 {
            values[1] = y
            values[2] = z
            values[3] = x
        }
        if order >= 2 {
            let s3 = 3.0.squareRoot()
            values[4] = s3 * x * y
            values[5] = s3 * y * z
            values[6] = (3 * z * z - 1) / 2
            values[7] = s3 * x * z
            values[8] = s3 / 2 * (x * x - y * y)
        }
        if order >= 3 {
            let a: Double = (5.0 / 8).squareRoot(), b: Double = 15.0.squareRoot(), c: Double = (3.0 / 8).squareRoot()
            let zz: Double = 5 * z * z
            values[9] = a * y * (3 * x * x - y * y)
            values[10] = b * x * y * z
            values[11] = c * y * (zz - 1)
            values[12] = z * (zz - 3) / 2
            values[13] = c * x * (zz - 1)
            values[14] = b / 2 * z * (x * x - y * y)
            values[15] = a * x * (x * x - 3 * y * y)
        }
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
        return fibonacciDirections(count: 2 * channelCount(order: order) + 4)
    }

    /// `count` directions on a Fibonacci lattice: nearly even over the sphere for any count.
    public static func fibonacciDirections(count: Int) -> [SIMD3<Double>] {
        let goldenAngle = Double.pi * (3 - 5.0.squareRoot())
        return (0..<count).map { index in
            let height = 1 - (2 * Double(index) + 1) / Double(count)
            let radius = (1 - height * height).squareRoot()
            let angle = goldenAngle * Double(index)
            return SIMD3(radius * sin(angle), height, -radius * cos(angle))
        }
    }

    /// Per-degree weights that trade a little of the order's sharpness for
    /// the most energy focused on the source's direction (max-rE, 3D):
    /// Legendre polynomials at `cos(137.9° / (order + 1.51))`.
    public static func maxREWeights(order: Int) -> [Double] {
        let x = cos(137.9 / (Double(order) + 1.51) * .pi / 180)
        var weights = [1.0, x]
        for degree in stride(from: 2, through: max(order, 1), by: 1) {
            let n = Double(degree)
            weights.append(((2 * n - 1) * x * weights[degree - 1] - (n - 1) * weights[degree - 2]) / n)
        }
        return Array(weights.prefix(order + 1))
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
