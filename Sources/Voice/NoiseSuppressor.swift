import AudioCore
import CSpeexDSP

/// A failed SpeexDSP preprocessor call.
public struct SpeexPreprocessError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The SpeexDSP function that failed.
    public let call: String
    /// What went wrong, such as the frame size and rate SpeexDSP made no state for.
    public let detail: String

    /// The call that failed and why.
    public var description: String { "\(call) failed: \(detail)" }
}

/// Stationary-noise suppression by SpeexDSP's preprocessor, with its own
/// VAD, AGC and dereverberation left off: the chain has better ones.
public final class NoiseSuppressor {
    /// Samples in each frame that `process` takes.
    public let frameSize: Int
    /// SpeexDSP's deepest suppression of noise, in dB (negative): what it takes
    /// off a steady noise falls a few decibels short of it.
    public let suppressionDecibels: Int
    private let state: OpaquePointer
    @exclusivity(unchecked) private var fixed: [Int16]
    @exclusivity(unchecked) private var dither = UniformNoise(seed: 0x2F6B_3C1D_58A4_97E3)

    /// A suppressor for frames of `frameSize` samples at `sampleRate` Hz that pushes noise down by
    /// at most `suppressionDecibels`. The default, -21 dB, takes 17 to 18 dB off steady white noise
    /// once settled, as WebRTC's suppressor set high does (17.9 dB, measured on the same noise), the
    /// one the chain is judged against; SpeexDSP's own default of -15 took 13 to 14. Throws
    /// `SpeexPreprocessError` when SpeexDSP makes no state for them.
    public init(frameSize: Int, sampleRate: Int, suppressionDecibels: Int = -21) throws {
        guard let state = speex_preprocess_state_init(Int32(frameSize), Int32(sampleRate)) else {
            throw SpeexPreprocessError(call: "speex_preprocess_state_init",
                                       detail: "no state for \(frameSize) samples at \(sampleRate) Hz")
        }
        self.state = state
        self.frameSize = frameSize
        self.suppressionDecibels = suppressionDecibels
        fixed = [Int16](repeating: 0, count: frameSize)
        var on: Int32 = 1, off: Int32 = 0, level = Int32(suppressionDecibels)
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_DENOISE, &on)
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_NOISE_SUPPRESS, &level)
        speex_preprocess_ctl(state, SPEEX_PREPROCESS_SET_AGC, &off)
    }

    deinit { speex_preprocess_state_destroy(state) }

    /// Denoises one frame in place. The preprocessor works on 16-bit
    /// samples: the frame is rounded to them and back with a step of
    /// triangular dither (-98 dBFS RMS), so that what fell below half a
    /// step comes back as that noise, never as digital silence.
    public func process(_ frame: UnsafeMutableBufferPointer<Float>) {
        precondition(frame.count == frameSize, "one frame at a time")
        fixed.withUnsafeMutableBufferPointer { fixed in
            for index in 0..<frameSize {
                fixed[index] = Int16(max(-32_768, min(32_767, (frame[index] * 32_768).rounded())))
            }
            speex_preprocess_run(state, fixed.baseAddress)
            for index in 0..<frameSize {
                let triangular = dither.next() - dither.next()
                frame[index] = (Float(fixed[index]) + triangular) / 32_768
            }
        }
    }
}
