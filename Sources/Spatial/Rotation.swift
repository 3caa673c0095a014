#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import AudioCore

extension Orientation {
    /// The rotation that turns the default frame (facing -Z, +Y up) to this orientation.
    public var rotation: Rotation {
        Rotation.about(y: -radians(yaw)) * Rotation.about(x: radians(pitch)) * Rotation.about(z: -radians(roll))
    }
}

/// A 3x3 rotation matrix, stored by rows.
public struct Rotation: Sendable, Equatable {
    /// The matrix's three rows, top to bottom.
    public var rows: (SIMD3<Double>, SIMD3<Double>, SIMD3<Double>)

    /// No rotation at all.
    public static let identity = Rotation(rows: (SIMD3(1, 0, 0), SIMD3(0, 1, 0), SIMD3(0, 0, 1)))

    /// Whether both rotations have the same matrix, exactly.
    public static func == (a: Rotation, b: Rotation) -> Bool {
        a.rows.0 == b.rows.0 && a.rows.1 == b.rows.1 && a.rows.2 == b.rows.2
    }

    static func about(x angle: Double) -> Rotation {
        let (s, c) = (sin(angle), cos(angle))
        return Rotation(rows: (SIMD3(1, 0, 0), SIMD3(0, c, -s), SIMD3(0, s, c)))
    }

    static func about(y angle: Double) -> Rotation {
        let (s, c) = (sin(angle), cos(angle))
        return Rotation(rows: (SIMD3(c, 0, s), SIMD3(0, 1, 0), SIMD3(-s, 0, c)))
    }

    static func about(z angle: Double) -> Rotation {
        let (s, c) = (sin(angle), cos(angle))
        return Rotation(rows: (SIMD3(c, -s, 0), SIMD3(s, c, 0), SIMD3(0, 0, 1)))
    }

    /// The transposed matrix, which for a rotation is its inverse: it undoes the turn.
    public var transposed: Rotation {
        let (a, b, c) = rows
        return Rotation(rows: (SIMD3(a.x, b.x, c.x), SIMD3(a.y, b.y, c.y), SIMD3(a.z, b.z, c.z)))
    }

    /// Rotates the vector `v` by `m`.
    public static func * (m: Rotation, v: SIMD3<Double>) -> SIMD3<Double> {
        SIMD3((m.rows.0 * v).sum(), (m.rows.1 * v).sum(), (m.rows.2 * v).sum())
    }

    /// The rotation `b` followed by `a`: their matrix product.
    public static func * (a: Rotation, b: Rotation) -> Rotation {
        let bt = b.transposed
        func row(_ r: SIMD3<Double>) -> SIMD3<Double> { SIMD3((r * bt.rows.0).sum(), (r * bt.rows.1).sum(), (r * bt.rows.2).sum()) }
        return Rotation(rows: (row(a.rows.0), row(a.rows.1), row(a.rows.2)))
    }

    /// Hands `body` where this rotation points the default "at" (-Z) and
    /// "up" (+Y) vectors, the six floats OpenAL's AL_ORIENTATION wants. They
    /// live on the stack: the render thread turns listeners and beds.
    func withAtAndUp<T>(_ body: (UnsafePointer<Float>) throws -> T) rethrows -> T {
        let at = self * SIMD3(0, 0, -1)
        let up = self * SIMD3(0, 1, 0)
        let values = SIMD8<Float>(Float(at.x), Float(at.y), Float(at.z), Float(up.x), Float(up.y), Float(up.z), 0, 0)
        return try withUnsafeBytes(of: values) { try body($0.assumingMemoryBound(to: Float.self).baseAddress!) }
    }
}

@inline(__always) func radians(_ degrees: Double) -> Double { degrees * .pi / 180 }
