import Foundation

/// A private Mumble server for tests: Debian's `murmurd` (mumble-server
/// 1.3.4) in the foreground, on a free loopback port, with its ini file,
/// database, certificate and logs in a folder of its own that is removed
/// at the end.
///
/// murmurd makes a self-signed certificate on its first start and keeps it,
/// with the channels, in its SQLite database, so `start()` after `stop()`
/// or `kill()` brings back the same port, certificate and channels. Run as
/// root it switches to the `mumble-server` user, so the folder is given to
/// that user. The SuperUser's password is set (`-supw`) before the first
/// start; `makeChannels` logs in with it to make permanent channels.
public final class MumbleServer: @unchecked Sendable {
    /// The address it listens on, TCP for the control channel and UDP for voice.
    public let host = "127.0.0.1"
    /// The port, the same for TCP and UDP and across restarts.
    public let port: Int
    /// Its folder: murmur.ini, murmur.sqlite and the logs of each start.
    public let directory: String
    /// The ini file murmurd reads (`-ini`).
    public let iniPath: String
    /// The password of the `SuperUser` account.
    public let superUserPassword: String
    /// The server password clients must give; empty for none.
    public let serverPassword: String
    /// The SHA-256 fingerprint of the server's certificate, in lowercase hex
    /// without colons, as a client sees it in the TLS handshake; known after
    /// the first start and the same on every later one.
    public private(set) var certificateFingerprint = ""
    /// Where murmurd's messages (its standard error) of the latest start go.
    public private(set) var logPath = ""

    private var daemon: ChildProcess?
    private var starts = 0
    private let murmurd: String

    /// Whether murmurd is installed.
    public static var isAvailable: Bool { executable != nil }

    private static var executable: String? {
        PulseServer.executable("murmurd") ?? ["/usr/sbin/murmurd"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Makes the folder and the ini, sets the SuperUser's password, starts
    /// the server and waits until it accepts connections and shows its
    /// certificate, then makes `channels` under the root channel.
    ///
    /// - Parameters:
    ///   - bandwidth: the most bits per second a client may send voice at (`bandwidth`).
    ///   - users: the most users at once (`users`).
    ///   - serverPassword: what clients must give to connect (`serverpassword`).
    ///   - welcomeText: sent to each client as it connects (`welcometext`).
    ///   - channels: permanent channels to make, e.g. `["Tavern", "Cellar"]`.
    public init(bandwidth: Int = 72_000, users: Int = 20, serverPassword: String = "",
                welcomeText: String = "RoomAudio test server", channels: [String] = []) throws {
        guard let murmurd = Self.executable else { throw MumbleServerError("murmurd is not installed (apt-get install mumble-server)") }
        self.murmurd = murmurd
        self.serverPassword = serverPassword
        superUserPassword = "su-" + UUID().uuidString.prefix(12).lowercased()
        port = try Self.freePort()
        directory = NSTemporaryDirectory() + "murmur-test-" + UUID().uuidString.prefix(8)
        iniPath = directory + "/murmur.ini"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        do {
            // Run as root, murmurd becomes `uname` and must then own its folder.
            let account = getuid() == 0 ? getpwnam("mumble-server") : nil
            let lines = [
                "database=\(directory)/murmur.sqlite",
                "logfile=",  // to standard error
                "pidfile=",  // none: the fixture knows its child's pid
                "host=\(host)",
                "port=\(port)",
                "ice=",  // no Ice endpoint, which would take TCP port 6502
                "bonjour=false",  // nothing announced on the network
                "welcometext=\"\(welcomeText)\"",
                "serverpassword=\(serverPassword)",
                "bandwidth=\(bandwidth)",
                "users=\(users)",
                "opusthreshold=0",  // Opus whatever the clients
                "messageburst=5",  // murmurd's defaults, written out: a client's own
                "messagelimit=1",  // UserStates beyond 5 at once, then 1 a second, are dropped
            ] + (account != nil ? ["uname=mumble-server"] : [])
            try (lines.joined(separator: "\n") + "\n").write(toFile: iniPath, atomically: true, encoding: .utf8)
            if let account {
                for path in [directory, iniPath] { chown(path, account.pointee.pw_uid, account.pointee.pw_gid) }
            }
            chmod(directory, 0o700)
            try setSuperUserPassword()
            try start()
            if !channels.isEmpty { try makeChannels(channels) }
        } catch {
            kill()
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Whether murmurd is running.
    public var isRunning: Bool { daemon?.isRunning ?? false }

    /// murmurd's messages since its latest start.
    public var log: String {
        [logPath, logPath + ".stdout"].compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }.joined()
    }

    /// Starts murmurd (again, after `stop()` or `kill()`) on the same port
    /// and folder, and waits until it accepts TCP connections; the first time
    /// also until it shows its certificate, whose fingerprint it keeps.
    public func start() throws {
        guard daemon == nil else { return }
        starts += 1
        logPath = directory + "/murmurd-\(starts).log"
        let child = try ChildProcess.spawn(murmurd, ["-fg", "-ini", iniPath], environment: ProcessInfo.processInfo.environment,
                                           output: logPath + ".stdout", errors: logPath)
        daemon = child
        let deadline = Date().addingTimeInterval(15)
        while !Self.acceptsConnections(host: host, port: port) {
            guard child.isRunning else {
                daemon = nil
                throw MumbleServerError("murmurd exited with \(child.wait()) on starting:\n\(log)")
            }
            guard Date() < deadline else {
                kill()
                throw MumbleServerError("murmurd did not listen on \(host):\(port) within 15 s:\n\(log)")
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        if certificateFingerprint.isEmpty { certificateFingerprint = try fetchCertificateFingerprint() }
    }

    /// Ends murmurd gracefully (SIGTERM) and waits for it, up to 10 s before SIGKILL.
    public func stop() {
        guard let daemon else { return }
        daemon.signal(SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while daemon.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        kill()
    }

    /// Ends murmurd abruptly (SIGKILL), as a crash would, and waits for it:
    /// its clients see their connections reset.
    public func kill() {
        guard let daemon else { return }
        daemon.signal(SIGKILL)
        daemon.wait()
        self.daemon = nil
    }

    /// Makes permanent channels under the root channel, as the SuperUser over
    /// the protocol (through a `MumblePeer`); ones already there are kept.
    /// They stay in the database across restarts.
    public func makeChannels(_ names: [String]) throws {
        let peer = try MumblePeer(label: "superuser")
        defer { peer.quit() }
        try peer.connect(to: self, user: "SuperUser", password: superUserPassword)
        try peer.makeChannels(names)
    }

    // MARK: - Private

    private func setSuperUserPassword() throws {
        // murmurd makes its database, sets the password and exits; its first
        // run also times PBKDF2 for about a second.
        let output = directory + "/supw.log"
        let child = try ChildProcess.spawn(murmurd, ["-fg", "-ini", iniPath, "-supw", superUserPassword],
                                           environment: ProcessInfo.processInfo.environment, output: output, errors: output)
        let status = try Self.wait(for: child, seconds: 60, what: "murmurd -supw")
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0 else { throw MumbleServerError("murmurd -supw exited with \(status): \(text)") }
    }

    /// Asks the running server for its certificate now: the SHA-256 of the
    /// certificate it shows in a TLS handshake (made by Python's ssl module),
    /// in lowercase hex without colons.
    public func fetchCertificateFingerprint() throws -> String {
        guard let python = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") ? "/usr/bin/python3"
            : PulseServer.executable("python3") else { throw MumbleServerError("python3 is not installed") }
        let script = """
            import hashlib, ssl, sys
            pem = ssl.get_server_certificate((sys.argv[1], int(sys.argv[2])), timeout=10)
            print(hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest())
            """
        let output = directory + "/fingerprint.out"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let child = try ChildProcess.spawn(python, ["-c", script, host, String(port)], environment: ProcessInfo.processInfo.environment,
                                           output: output, errors: output)
        let status = try Self.wait(for: child, seconds: 20, what: "the certificate's fingerprint")
        let text = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        guard status == 0, text.count == 64, text.allSatisfy(\.isHexDigit) else {
            throw MumbleServerError("no certificate fingerprint from \(host):\(port) (exit \(status)): \(text)")
        }
        return text
    }

    /// Waits at most `seconds` for `child`, then kills it and throws.
    private static func wait(for child: ChildProcess, seconds: Double, what: String) throws -> Int32 {
        guard let status = child.wait(seconds: seconds) else { throw MumbleServerError("\(what) took more than \(Int(seconds)) s") }
        return status
    }

    /// A port between 20000 and 32000, below Linux's ephemeral range so no
    /// client connection takes it between restarts, free for TCP and UDP.
    private static func freePort() throws -> Int {
        for _ in 0..<200 {
            let port = Int.random(in: 20_000..<32_000)
            if canBind(port: port, type: Int32(SOCK_STREAM.rawValue)) && canBind(port: port, type: Int32(SOCK_DGRAM.rawValue)) {
                return port
            }
        }
        throw MumbleServerError("no free loopback port between 20000 and 32000")
    }

    private static func canBind(port: Int, type: Int32) -> Bool {
        let descriptor = socket(AF_INET, type | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    static func acceptsConnections(host: String, port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = loopback(port: port)
        address.sin_addr.s_addr = inet_addr(host)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}

/// A failure of the test Mumble server or of its peer.
public struct MumbleServerError: Error, CustomStringConvertible {
    /// What went wrong, with murmurd's or the peer's messages where they help.
    public let description: String

    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}
