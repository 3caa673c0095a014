import AudioCore
import Devices
import Voice

/// The uplink chain at the engine's rate: the microphone and the echo
/// reference go down to the chain's 16 kHz, and the processed uplink comes
/// back up to 48 kHz, one 10 ms block at a time, through a look-ahead
/// limiter that keeps it under full scale without clipping.
///
/// Both downward paths use the same resampler, so the echo path the
/// canceller learns is the room's alone.
public final class MicrophoneUplink {
    /// The engine's block: 10 ms at 48 kHz.
    public static let blockFrames = RoomRenderer.blockFrames

    /// The voice chain at its own rate: echo cancellation, noise suppression, gain, detection.
    public let chain: UplinkChain
    private let micDown: StreamingResampler
    private let referenceDown: StreamingResampler
    private let uplinkUp: StreamingResampler
    /// At 48 kHz, after the resampler, whose ringing can itself overshoot.
    private let limiter = PeakLimiter(sampleRate: Room.sampleRate)
    @exclusivity(unchecked) private var mic = [Float](repeating: 0, count: UplinkChain.frameSize)
    @exclusivity(unchecked) private var reference = [Float](repeating: 0, count: UplinkChain.frameSize)
    /// The block being cleaned of samples that are not finite, before they reach a resampler's memory.
    @exclusivity(unchecked) private var cleaned = [Float](repeating: 0, count: blockFrames)

    /// An uplink whose chain cancels echo or not.
    public init(echoCancellation: Bool) throws {
        chain = try UplinkChain(echoCancellation: echoCancellation)
        micDown = try StreamingResampler(from: Room.sampleRate, to: UplinkChain.sampleRate)
        referenceDown = try StreamingResampler(from: Room.sampleRate, to: UplinkChain.sampleRate)
        uplinkUp = try StreamingResampler(from: UplinkChain.sampleRate, to: Room.sampleRate)
    }

    /// Whether the uplink sends silence; detection runs either way.
    public var muted: Bool {
        get { chain.muted }
        set { chain.muted = newValue }
    }

    /// Frames at 48 kHz by which the chain's frames lag the microphone.
    public var chainLatencyFrames: Int { micDown.inputLatencyFrames }
    /// Frames at 48 kHz by which the uplink lags the microphone.
    public var latencyFrames: Int { chainLatencyFrames + uplinkUp.latencyFrames + limiter.latencyFrames }

    /// Processes one block: `mic` and `reference` (what the output played
    /// over the same 10 ms, mono) in, the uplink out.
    public func process(mic input: UnsafeBufferPointer<Float>, reference played: UnsafeBufferPointer<Float>,
                        uplink: UnsafeMutableBufferPointer<Float>) -> UplinkChain.Frame {
        precondition(input.count == Self.blockFrames && played.count == Self.blockFrames && uplink.count == Self.blockFrames,
                     "one 10 ms block at 48 kHz")
        return mic.withUnsafeMutableBufferPointer { mic in
            reference.withUnsafeMutableBufferPointer { reference in
                // A 10 ms block is a whole number of periods of both rates: 480 in, 160 out, every time.
                downsample(input, with: micDown, into: mic)
                downsample(played, with: referenceDown, into: reference)
                let frame = chain.process(mic, reference: UnsafeBufferPointer(reference))
                _ = uplinkUp.process(UnsafeBufferPointer(mic), into: uplink)
                limiter.process(uplink)
                // Muted, nothing goes up: not even the resampler's tail of what was said before.
                if chain.muted { uplink.update(repeating: 0) }
                OutputGuard.sanitize(uplink)
                return frame
            }
        }
    }

    /// Samples that are not finite count as silence, and louder ones than
    /// a converter's full scale are clipped to it, as a capture device would.
    private func downsample(_ input: UnsafeBufferPointer<Float>, with resampler: StreamingResampler,
                            into output: UnsafeMutableBufferPointer<Float>) {
        cleaned.withUnsafeMutableBufferPointer { cleaned in
            for index in 0..<Self.blockFrames { cleaned[index] = input[index].isFinite ? max(-1, min(1, input[index])) : 0 }
            _ = resampler.process(UnsafeBufferPointer(cleaned), into: output)
        }
    }
}
