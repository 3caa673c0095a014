import Engine
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The program's standard output and error, written so that neither a
/// closed pipe (`roomd | head -1`) nor a full disk stops it: SIGPIPE is
/// ignored, a write that fails is dropped, and the first failure of each
/// stream is said once on the other.
public enum Console {
    private static let failed = Atomic<UInt8>(0)

    /// Ignores SIGPIPE, so a closed pipe fails a write instead of ending the process. Call first.
    public static func start() { signal(SIGPIPE, SIG_IGN) }

    /// Writes `text` and a newline to standard output.
    public static func out(_ text: String) { write(text + "\n", to: STDOUT_FILENO) }

    /// Writes `text` and a newline to standard error.
    public static func error(_ text: String) { write(text + "\n", to: STDERR_FILENO) }

    private static func write(_ text: String, to descriptor: Int32) {
        if let code = OutputFile.write(text.utf8, to: descriptor) { reportFailure(of: descriptor, errno: code) }
    }

    private static func reportFailure(of descriptor: Int32, errno code: Int32) {
        let bit: UInt8 = descriptor == STDOUT_FILENO ? 1 : 2
        guard failed.bitwiseOr(bit, ordering: .relaxed).oldValue & bit == 0 else { return }
        let other = descriptor == STDOUT_FILENO ? STDERR_FILENO : STDOUT_FILENO
        let name = URL(fileURLWithPath: CommandLine.arguments.first ?? "roomd").lastPathComponent
        let stream = descriptor == STDOUT_FILENO ? "standard output" : "standard error"
        _ = OutputFile.write("\(name): \(stream) failed (\(String(cString: strerror(code)))); going on without it\n".utf8, to: other)
    }
}
