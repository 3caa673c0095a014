import CSndFile

/// A failed libsndfile call, naming the call, the file and libsndfile's reason.
public struct SndFileError: Error, Sendable, Equatable, CustomStringConvertible {
    public let call: String
    public let path: String
    public let reason: String

    public init(call: String, path: String, reason: String) {
        self.call = call
        self.path = path
        self.reason = reason
    }

    /// The error pending on `file` (or on the last failed `sf_open` when nil).
    static func pending(_ call: String, path: String, file: OpaquePointer?) -> SndFileError {
        SndFileError(call: call, path: path, reason: String(cString: sf_strerror(file)))
    }

    public var description: String { "\(path): \(call) failed: \(reason)" }
}

/// An audio file that libsndfile opened but whose contents the engine refuses.
public struct AudioFileProblem: Error, Sendable, Equatable, CustomStringConvertible {
    public let path: String
    public let reason: String

    public var description: String { "\(path): \(reason)" }
}
