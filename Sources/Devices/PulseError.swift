import CPulse

/// A failed libpulse call, naming the call and libpulse's reason
/// (`pa_context_connect: Connection refused`).
public struct PulseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The libpulse function that failed (`pa_context_connect`).
    public let call: String
    /// A `pa_error_code_t` value.
    public let code: Int32
    /// libpulse's text for `code`, from `pa_strerror` ("Connection refused").
    public let reason: String

    /// The failure of `call` with `code`, a `pa_error_code_t` value; looks up its `reason`.
    public init(call: String, code: Int32) {
        self.call = call
        self.code = code
        reason = String(cString: pa_strerror(code))
    }

    init(call: String, code: pa_error_code_t) {
        self.init(call: call, code: Int32(code.rawValue))
    }

    /// The error pending on `context`; "Connection terminated" when libpulse
    /// recorded none (a context that was disconnected rather than failed).
    static func pending(_ call: String, context: OpaquePointer) -> PulseError {
        let code = pa_context_errno(context)
        return code != 0 ? PulseError(call: call, code: code) : PulseError(call: call, code: PA_ERR_CONNECTIONTERMINATED)
    }

    /// The call that failed and PulseAudio's reason.
    public var description: String { "\(call): \(reason)" }
}
