/// A position in metres, OpenAL axes: +X right, +Y up, -Z ahead.
public typealias Position = SIMD3<Double>

/// Yaw, pitch and roll in degrees, applied in that order to a frame that
/// faces -Z with +Y up. Yaw +90 turns to face +X (right), pitch +90 looks
/// up, roll +90 lowers the right side.
public struct Orientation: Sendable, Equatable, BitwiseCopyable {
    public var yaw: Double
    public var pitch: Double
    public var roll: Double

    public static let identity = Orientation(yaw: 0, pitch: 0, roll: 0)

    public init(yaw: Double = 0, pitch: Double = 0, roll: Double = 0) {
        self.yaw = yaw
        self.pitch = pitch
        self.roll = roll
    }
}
