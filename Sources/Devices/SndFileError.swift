import CSndFile

/// A failed libsndfile call, naming the call, the file and libsndfile's reason.
public struct SndFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The libsndfile function that failed (`sf_open`, `sf_writef_float`).
    public let call: String
    /// The file it was working on.
    public let path: String
    /// libsndfile's message from `sf_strerror`, or the engine's own when it refused first.
    public let reason: String

    /// The failure of `call` on `path`, for `reason`.
    public init(call: String, path: String, reason: String) {
        self.call = call
        self.path = path
        self.reason = reason
    }

    /// The error pending on `file` (or on the last failed `sf_open` when nil).
    static func pending(_ call: String, path: String, file: OpaquePointer?) -> SndFileError {
        SndFileError(call: call, path: path, reason: String(cString: sf_strerror(file)))
    }

    /// The file, the call that failed and libsndfile's reason.
    public var description: String { "\(path): \(call) failed: \(reason)" }
}

/// An audio file that libsndfile opened but whose contents the engine refuses.
public struct AudioFileProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file refused.
    public let path: String
    /// Why, worded to follow the path ("holds no audio frames").
    public let reason: String

    /// The file and what is wrong with it.
    public var description: String { "\(path): \(reason)" }
}
