import COpenAL

/// A failed OpenAL or ALC call: which call, and OpenAL's reason.
public struct OpenALError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The call that failed, with the parameter it set where that tells more, such as
    /// `alSourcei(AL_LOOPING)`.
    public let call: String
    /// The error code OpenAL or ALC reported, such as `AL_INVALID_VALUE`.
    public let code: Int32
    /// The engine's own account of the failure, such as a missing HRTF data set; when present the
    /// message gives it instead of `reason`.
    public let detail: String?

    /// An error for `call` with OpenAL's `code`, and a `detail` that says more than the code can.
    public init(call: String, code: Int32, detail: String? = nil) {
        self.call = call
        self.code = code
        self.detail = detail
    }

    /// The code in words, such as "invalid value" or "out of memory", or in hex when it is not one
    /// of those. ALC reuses AL's values for other errors, so an `alc` call's code is read as ALC's.
    public var reason: String {
        if call.hasPrefix("alc") {
            switch code {
            case ALC_INVALID_DEVICE: return "invalid device"
            case ALC_INVALID_CONTEXT: return "invalid context"
            case ALC_INVALID_ENUM: return "invalid enum"
            case ALC_INVALID_VALUE: return "invalid value"
            case ALC_OUT_OF_MEMORY: return "out of memory"
            default: break
            }
        } else {
            switch code {
            case AL_INVALID_NAME: return "invalid name"
            case AL_INVALID_ENUM: return "invalid enum"
            case AL_INVALID_VALUE: return "invalid value"
            case AL_INVALID_OPERATION: return "invalid operation"
            case AL_OUT_OF_MEMORY: return "out of memory"
            default: break
            }
        }
        return "error 0x\(String(code, radix: 16))"
    }

    /// The call and why it failed: the engine's detail when there is one, else the code in words.
    public var description: String {
        if let detail { return "\(call) failed: \(detail)" }
        return "\(call) failed: \(reason)"
    }

    /// Throws the error pending on the current context, if any.
    static func check(_ call: String) throws {
        let code = alGetError()
        if code != AL_NO_ERROR { throw OpenALError(call: call, code: code) }
    }

    /// Throws the error pending on `device`, if any.
    static func check(_ call: String, device: OpaquePointer?) throws {
        let code = alcGetError(device)
        if code != ALC_NO_ERROR { throw OpenALError(call: call, code: code) }
    }
}
