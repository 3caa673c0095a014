import COpus

/// A failed libopus call, naming the call and libopus's reason.
public struct OpusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The libopus function that failed (`opus_decode_float`, `opus_encoder_create`).
    public let call: String
    /// libopus's error code, one of the negative `OPUS_*` values that `opus_strerror` names.
    public let code: Int32

    /// The failure of `call` with libopus's `code`.
    public init(call: String, code: Int32) {
        self.call = call
        self.code = code
    }

    /// libopus's message for `code` ("corrupted stream", "buffer too small").
    public var reason: String { String(cString: opus_strerror(code)) }

    /// The call that failed and libopus's reason.
    public var description: String { "\(call) failed: \(reason)" }
}
