import COpenAL

/// A failed OpenAL or ALC call: which call, and OpenAL's reason.
public struct OpenALError: Error, Sendable, Equatable, CustomStringConvertible {
    public let call: String
    public let code: Int32
    public let detail: String?

    public init(call: String, code: Int32, detail: String? = nil) {
        self.call = call
        self.code = code
        self.detail = detail
    }

    public var reason: String {
        switch code {
        case AL_INVALID_NAME: "invalid name"
        case AL_INVALID_ENUM: "invalid enum"
        case AL_INVALID_VALUE: "invalid value"
        case AL_INVALID_OPERATION: "invalid operation"
        case AL_OUT_OF_MEMORY: "out of memory"
        case ALC_INVALID_DEVICE: "invalid device"
        case ALC_INVALID_CONTEXT: "invalid context"
        default: "error 0x\(String(code, radix: 16))"
        }
    }

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
