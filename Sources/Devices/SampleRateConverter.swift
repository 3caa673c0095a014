import AudioCore
import CSpeexDSP

/// A failed SpeexDSP resampler call.
public struct SpeexResamplerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The SpeexDSP function that failed (`speex_resampler_init`).
    public let call: String
    /// SpeexDSP's error code, a `RESAMPLER_ERR_*` value that `speex_resampler_strerror` names.
    public let code: Int32

    /// The call that failed and SpeexDSP's reason.
    public var description: String {
        "\(call) failed: \(String(cString: speex_resampler_strerror(code)))"
    }
}

/// Whole-buffer sample rate conversion with SpeexDSP's resampler.
public enum SampleRateConverter {
    /// Quality 10 is the best SpeexDSP offers; files are converted once at load.
    public static let quality: Int32 = 10

    /// `input` converted from `inputRate` to `outputRate` Hz, every channel, lined up with it and
    /// as long in seconds; returned as it is when the rates match. Throws `SpeexResamplerError`.
    public static func convert(_ input: AudioBuffer, from inputRate: Int, to outputRate: Int) throws -> AudioBuffer {
        if inputRate == outputRate { return input }
        let channels = input.channelCount
        var status: Int32 = 0
        guard let state = speex_resampler_init(spx_uint32_t(channels), spx_uint32_t(inputRate),
                                               spx_uint32_t(outputRate), quality, &status) else {
            throw SpeexResamplerError(call: "speex_resampler_init", code: status)
        }
        defer { speex_resampler_destroy(state) }
        // Drop the filter's leading delay so the output lines up with the input.
        speex_resampler_skip_zeros(state)

        // Flush the filter's delay with silence so the end of the input comes out.
        let latency = Int(speex_resampler_get_input_latency(state))
        var padded = input
        padded.append(AudioBuffer(channelCount: channels, frameCount: latency))
        let expectedFrames = Int((Double(input.frameCount) * Double(outputRate) / Double(inputRate)).rounded())
        var output = [Float](repeating: 0, count: (expectedFrames + latency + 16) * channels)

        var inputFrames = spx_uint32_t(padded.frameCount)
        var outputFrames = spx_uint32_t(output.count / channels)
        let error = padded.samples.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { destination in
                speex_resampler_process_interleaved_float(state, source.baseAddress, &inputFrames,
                                                          destination.baseAddress, &outputFrames)
            }
        }
        guard error == Int32(RESAMPLER_ERR_SUCCESS) else {
            throw SpeexResamplerError(call: "speex_resampler_process_interleaved_float", code: error)
        }
        let frames = min(Int(outputFrames), expectedFrames)
        return AudioBuffer(channelCount: channels, interleaved: Array(output[0..<(frames * channels)]))
    }
}
