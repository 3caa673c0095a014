import CSpeexDSP

/// Block-by-block sample rate conversion of one channel with SpeexDSP's
/// resampler, for audio that arrives as it plays. Converting a block
/// allocates nothing.
public final class StreamingResampler {
    /// The rate of the audio in, in Hz.
    public let inputRate: Int
    /// The rate of the audio out, in Hz.
    public let outputRate: Int
    private let state: OpaquePointer

    /// A converter from `inputRate` to `outputRate`, at SpeexDSP's `quality`
    /// (0 to 10; 7 by default, as the uplink's front end runs it).
    public init(from inputRate: Int, to outputRate: Int, quality: Int32 = 7) throws {
        var status: Int32 = 0
        guard let state = speex_resampler_init(1, spx_uint32_t(inputRate), spx_uint32_t(outputRate), quality, &status) else {
            throw SpeexResamplerError(call: "speex_resampler_init", code: status)
        }
        self.state = state
        self.inputRate = inputRate
        self.outputRate = outputRate
    }

    deinit { speex_resampler_destroy(state) }

    /// How late the output runs behind the input, in output frames.
    public var latencyFrames: Int { Int(speex_resampler_get_output_latency(state)) }
    /// The same, in input frames.
    public var inputLatencyFrames: Int { Int(speex_resampler_get_input_latency(state)) }

    /// Converts all of `input` into the start of `output` and returns the
    /// frames written. Blocks that hold a whole number of periods of both
    /// rates (10 ms at 48 and 16 kHz) always give the same count out.
    public func process(_ input: UnsafeBufferPointer<Float>, into output: UnsafeMutableBufferPointer<Float>) -> Int {
        var inputFrames = spx_uint32_t(input.count)
        var outputFrames = spx_uint32_t(output.count)
        speex_resampler_process_float(state, 0, input.baseAddress, &inputFrames, output.baseAddress, &outputFrames)
        return Int(outputFrames)
    }
}
