import COpus

/// Mumble's Opus: 48 kHz, one channel.
private let opusRate: Int32 = 48_000

/// Opus encoding of the room's microphone for Mumble: 48 kHz mono, tuned for
/// speech (`OPUS_APPLICATION_VOIP`), one 20 ms frame a packet. Encoding a
/// frame allocates nothing.
public final class OpusVoiceEncoder {
    /// Samples in the frame `encode` takes: 20 ms at 48 kHz.
    public static let frameSamples = 960
    /// The bit rates Opus keeps for one channel; it would quietly clamp others, leaving `bitrate` untrue.
    public static let bitrates = 500...300_000
    /// The bit rate asked of the encoder, in bits a second.
    public private(set) var bitrate: Int
    private let state: OpaquePointer

    /// An encoder at `bitrate` bits a second; throws `OpusError` when libopus makes none or the
    /// rate is outside `bitrates`.
    public init(bitrate: Int) throws(OpusError) {
        var status: Int32 = 0
        guard let state = opus_encoder_create(opusRate, 1, OPUS_APPLICATION_VOIP, &status) else {
            throw OpusError(call: "opus_encoder_create", code: status)
        }
        self.state = state
        self.bitrate = bitrate
        try setBitrate(bitrate)
    }

    deinit { opus_encoder_destroy(state) }

    /// Changes the bit rate from the next frame on; throws `OpusError` for one outside `bitrates`,
    /// keeping the old one.
    public func setBitrate(_ bitrate: Int) throws(OpusError) {
        guard Self.bitrates.contains(bitrate) else {
            throw OpusError(call: "opus_encoder_ctl(OPUS_SET_BITRATE)", code: OPUS_BAD_ARG)
        }
        let status = copus_encoder_set_int(state, OPUS_SET_BITRATE_REQUEST, Int32(bitrate))
        guard status == OPUS_OK else { throw OpusError(call: "opus_encoder_ctl(OPUS_SET_BITRATE)", code: status) }
        self.bitrate = bitrate
    }

    /// Encodes one `frame` of `frameSamples` samples (other Opus frame sizes, 2.5 to 60 ms, work
    /// too) into the start of `packet` and returns the bytes written. Throws `OpusError` for a
    /// frame of another length or a `packet` too small; 1275 bytes hold any frame up to 20 ms.
    public func encode(_ frame: UnsafeBufferPointer<Float>, into packet: UnsafeMutableBufferPointer<UInt8>) throws(OpusError) -> Int {
        guard let samples = frame.baseAddress, let bytes = packet.baseAddress, let capacity = Int32(exactly: packet.count) else {
            throw OpusError(call: "opus_encode_float", code: OPUS_BAD_ARG)
        }
        let written = opus_encode_float(state, samples, Int32(clamping: frame.count), bytes, capacity)
        guard written >= 0 else { throw OpusError(call: "opus_encode_float", code: written) }
        return Int(written)
    }
}

/// Opus decoding of one remote talker, 48 kHz mono, with packet loss
/// concealment. Packets come from the network: anything libopus cannot
/// read, an empty one included, throws `OpusError`. Decoding allocates nothing.
public final class OpusVoiceDecoder {
    /// The most samples one packet decodes to: 120 ms at 48 kHz. An output buffer this long takes any packet.
    public static let maxSamples = 5_760
    private let state: OpaquePointer

    /// A decoder with no history; throws `OpusError` when libopus makes none.
    public init() throws(OpusError) {
        var status: Int32 = 0
        guard let state = opus_decoder_create(opusRate, 1, &status) else {
            throw OpusError(call: "opus_decoder_create", code: status)
        }
        self.state = state
    }

    deinit { opus_decoder_destroy(state) }

    /// The samples `packet` decodes to, 120 to `maxSamples`, read from its table of contents
    /// without decoding, so a caller can bound its buffers first; throws `OpusError` for an empty
    /// packet or a table of contents that is malformed or counts no frames.
    public static func sampleCount(of packet: UnsafeRawBufferPointer) throws(OpusError) -> Int {
        let bytes = try Self.bytes(of: packet, call: "opus_packet_get_nb_samples")
        let count = opus_packet_get_nb_samples(bytes, Int32(packet.count), opusRate)
        // libopus counts a code 3 packet of no frames as 0 samples; decoding it fails.
        guard count > 0 else { throw OpusError(call: "opus_packet_get_nb_samples", code: count < 0 ? count : OPUS_INVALID_PACKET) }
        return Int(count)
    }

    /// Decodes `packet` into the start of `output` and returns the samples written. Throws
    /// `OpusError` for an empty or malformed packet, or one longer than `output` (which takes
    /// any packet at `maxSamples`).
    public func decode(_ packet: UnsafeRawBufferPointer, into output: UnsafeMutableBufferPointer<Float>) throws(OpusError) -> Int {
        let bytes = try Self.bytes(of: packet, call: "opus_decode_float")
        guard let samples = output.baseAddress else { throw OpusError(call: "opus_decode_float", code: OPUS_BUFFER_TOO_SMALL) }
        let decoded = opus_decode_float(state, bytes, Int32(packet.count), samples,
                                        Int32(min(output.count, Self.maxSamples)), 0)
        guard decoded >= 0 else { throw OpusError(call: "opus_decode_float", code: decoded) }
        return Int(decoded)
    }

    /// Fills the start of `output` with `samples` samples (a whole number of 2.5 ms, one 20 ms
    /// frame by default) that carry the talker's voice on over a lost packet, and returns how
    /// many it wrote. Throws `OpusError` when `samples` is no such length or `output` is shorter.
    public func conceal(into output: UnsafeMutableBufferPointer<Float>, samples: Int = OpusVoiceEncoder.frameSamples) throws(OpusError) -> Int {
        guard let destination = output.baseAddress, samples <= output.count else {
            throw OpusError(call: "opus_decode_float", code: OPUS_BUFFER_TOO_SMALL)
        }
        // No data asks libopus to conceal exactly `samples`, which it checks is a whole number of 2.5 ms.
        let concealed = opus_decode_float(state, nil, 0, destination, Int32(clamping: samples), 0)
        guard concealed >= 0 else { throw OpusError(call: "opus_decode_float", code: concealed) }
        return Int(concealed)
    }

    /// `packet`'s bytes for libopus; an empty packet is refused here, since libopus would take
    /// it as a lost one and conceal instead.
    private static func bytes(of packet: UnsafeRawBufferPointer, call: String) throws(OpusError) -> UnsafePointer<UInt8> {
        guard let base = packet.baseAddress, !packet.isEmpty, packet.count <= Int32.max else {
            throw OpusError(call: call, code: OPUS_INVALID_PACKET)
        }
        return base.assumingMemoryBound(to: UInt8.self)
    }
}
