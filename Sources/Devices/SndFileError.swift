import CSndFile

#if canImport(Glibc)
import Glibc
#endif

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

    /// A pipe or a socket at `path`: opening one waits for whoever is at the
    /// other end, which would hang the control side that asked.
    static func refuseWaitingFile(_ path: String) throws {
        var status = stat()
        guard stat(path, &status) == 0 else { return }
        let type = status.st_mode & S_IFMT
        if type == S_IFIFO || type == S_IFSOCK {
            throw AudioFileProblem(path: path, reason: "is a pipe or a socket, not an audio file")
        }
    }
}
