/// Uniform noise in [0, 1) from xorshift64*: cheap and allocation-free, for
/// comfort noise and dither on the render thread.
public struct UniformNoise: Sendable {
    private var state: UInt64

    /// A sequence from `seed`, which must not be 0 (xorshift stays at 0).
    public init(seed: UInt64 = 0x9E37_79B9_7F4A_7C15) {
        precondition(seed != 0, "xorshift never leaves a zero state")
        state = seed
    }

    /// The next value, in [0, 1).
    public mutating func next() -> Float {
        state ^= state >> 12
        state ^= state << 25
        state ^= state >> 27
        return Float((state &* 0x2545_F491_4F6C_DD1D) >> 40) / Float(1 << 24)
    }
}
