import Crypto
import Foundation

/// Which server certificates the room trusts. Mumble servers mostly sign
/// their own certificates, so, as Mumble's own client does, the first
/// certificate a server shows is remembered and a later different one is
/// refused; a scene may pin a fingerprint instead.
///
/// Remembered fingerprints live in one file, a line `HOST:PORT SHA256` per
/// server, under `$XDG_DATA_HOME/roomd` (`~/.local/share/roomd` when
/// unset), made readable by its owner only.
public struct ServerTrust: Sendable {
    /// The file of remembered fingerprints.
    public let storePath: String

    /// Trust kept in the user's data folder, as the XDG base-directory rules place it.
    public static func userStore(environment: [String: String] = ProcessInfo.processInfo.environment) -> ServerTrust {
        let data = environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((environment["HOME"] ?? NSHomeDirectory()) as NSString).appendingPathComponent(".local/share")
        return ServerTrust(storePath: (data as NSString).appendingPathComponent("roomd/known_servers"))
    }

    /// Trust kept in the file at `storePath`.
    public init(storePath: String) { self.storePath = storePath }

    /// The SHA-256 of a certificate's DER bytes, as 64 lowercase hex digits.
    public static func fingerprint(ofDER der: [UInt8]) -> String {
        SHA256.hash(data: der).map { String(format: "%02x", $0) }.joined()
    }

    /// Whether the certificate of `fingerprint` may speak for `server`: a
    /// pinned fingerprint must match; otherwise the remembered one must,
    /// and a server seen for the first time is remembered.
    public func check(_ fingerprint: String, server: String, pinned: String?) -> Result<Void, TrustRefusal> {
        if let pinned {
            return pinned == fingerprint ? .success(())
                : .failure(TrustRefusal("\(server): its certificate's SHA-256 is \(fingerprint), not the pinned \(pinned)"))
        }
        do {
            let known = try remembered()
            if let previous = known[server] {
                return previous == fingerprint ? .success(()) : .failure(TrustRefusal(
                    "\(server): the server's certificate changed: it was SHA-256 \(previous), it is \(fingerprint) now; "
                    + "if it was replaced on purpose, remove its line from \(storePath) or pin the new fingerprint"))
            }
            try remember(fingerprint, for: server, besides: known)
            return .success(())
        } catch {
            return .failure(TrustRefusal("\(server): cannot keep its certificate's fingerprint in \(storePath): \(error)"))
        }
    }

    /// The fingerprints remembered, by server.
    func remembered() throws -> [String: String] {
        guard let data = FileManager.default.contents(atPath: storePath) else {
            if FileManager.default.fileExists(atPath: storePath) { throw TrustRefusal("the file cannot be read") }
            return [:]
        }
        var known: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            let fields = line.split(separator: " ")
            if fields.count == 2 { known[String(fields[0])] = String(fields[1]) }
        }
        return known
    }

    /// Writes the file anew beside itself and renames it over the old, so
    /// a crash leaves the old file or the new, and it is never readable by others.
    private func remember(_ fingerprint: String, for server: String, besides known: [String: String]) throws {
        let folder = (storePath as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        var all = known
        all[server] = fingerprint
        let text = all.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)\n" }.joined()
        let temporary = storePath + ".\(getpid()).new"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw TrustRefusal(String(cString: strerror(errno))) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == bytes.count, synced, rename(temporary, storePath) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw TrustRefusal(reason)
        }
    }
}

/// Why a server's certificate is not trusted.
public struct TrustRefusal: Error, Sendable, CustomStringConvertible {
    /// The reason, naming the server and both fingerprints where there are two.
    public let description: String
    init(_ description: String) { self.description = description }
}
