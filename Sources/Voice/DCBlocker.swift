/// A one-pole high-pass at 5 Hz that takes a microphone's DC offset out of
/// the uplink: a step of offset falls 60 dB in 220 ms, and a talker's
/// lowest voice (70 Hz) loses 0.02 dB and turns 4 degrees.
public struct DCBlocker: Sendable {
    /// The corner, in Hz.
    public static let corner = 5.0
    private let pole: Float
    private var lastInput: Float = 0
    private var lastOutput: Float = 0

    /// A blocker for audio at `sampleRate` Hz.
    public init(sampleRate: Int) {
        pole = Float(1 - 2 * Double.pi * Self.corner / Double(sampleRate))
    }

    /// Filters `frame` in place, carrying on from the last frame.
    public mutating func process(_ frame: UnsafeMutableBufferPointer<Float>) {
        for index in frame.indices {
            let input = frame[index]
            lastOutput = input - lastInput + pole * lastOutput
            lastInput = input
            frame[index] = lastOutput
        }
        // Into silence the output decays toward subnormal numbers, which cost far more to compute with.
        if abs(lastOutput) < 1e-20 { lastOutput = 0 }
    }
}
