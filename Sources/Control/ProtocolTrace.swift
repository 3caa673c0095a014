import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// A record of every line on the control socket, each way, for debugging a
/// client and for checking the daemon against `protocol.schema.json`:
///
///     3 > {"v":1,"verb":"status","args":{}}
///     3 < {"v":1,"ok":true,"result":{...}}
///
/// The number tells the connections apart, `>` is a request as received
/// and `<` a reply or event as sent. A write that fails (a full disk) ends
/// the trace, said once on standard error; the room plays on.
public final class ProtocolTrace: Sendable {
    public let path: String
    private let descriptor: Mutex<Int32>

    /// Appends to `path`, made 0600 if it is new.
    public init(path: String) throws {
        self.path = path
        let opened = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        guard opened >= 0 else { throw ControlSocketPlace.Refusal(description: "cannot open \(path): \(String(cString: strerror(errno)))") }
        descriptor = Mutex(opened)
    }

    /// Records `line` of connection `client`, received (`>`) or sent (`<`).
    func record(client: Int, received: Bool, _ line: some StringProtocol) {
        var entry = "\(client) \(received ? ">" : "<") \(line)"
        if !entry.hasSuffix("\n") { entry += "\n" }
        descriptor.withLock { descriptor in
            guard descriptor >= 0 else { return }
            let written = entry.utf8CString.withUnsafeBufferPointer { write(descriptor, $0.baseAddress, $0.count - 1) }
            if written != entry.utf8.count {
                Console.error("roomd: stopped the protocol trace \(path): \(written < 0 ? String(cString: strerror(errno)) : "short write")")
                Glibc.close(descriptor)
                descriptor = -1
            }
        }
    }

    /// Closes the file; what was recorded stays.
    public func close() {
        descriptor.withLock { descriptor in
            if descriptor >= 0 { Glibc.close(descriptor) }
            descriptor = -1
        }
    }
}
