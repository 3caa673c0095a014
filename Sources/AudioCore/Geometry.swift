/// A position in metres, OpenAL axes: +X right, +Y up, -Z ahead.
public typealias Position = SIMD3<Double>

/// Yaw, pitch and roll in degrees, applied in that order to a frame that
/// faces -Z with +Y up. Yaw +90 turns to face +X (right), pitch +90 looks
/// up, roll +90 lowers the right side.
public struct Orientation: Sendable, Equatable, BitwiseCopyable {
    /// Turn about the vertical axis, in degrees; +90 faces right (+X).
    public var yaw: Double
    /// Tilt up or down, in degrees; +90 looks straight up.
    public var pitch: Double
    /// Lean about the facing direction, in degrees; +90 lowers the right side.
    public var roll: Double

    /// Facing ahead (-Z) with +Y up: yaw, pitch and roll all 0.
    public static let identity = Orientation(yaw: 0, pitch: 0, roll: 0)

    /// An orientation from angles in degrees, each 0 by default.
    public init(yaw: Double = 0, pitch: Double = 0, roll: Double = 0) {
        self.yaw = yaw
        self.pitch = pitch
        self.roll = roll
    }
}
