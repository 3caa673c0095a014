import Foundation

/// A private PulseAudio daemon for tests, with null sinks in place of
/// sound cards. It lives in its own runtime directory and HOME, so it never
/// touches a user's real server; clients reach it through `PULSE_SERVER`.
public final class PulseServer: @unchecked Sendable {
    /// A `module-null-sink`: float32le at 48 kHz, with optional extra arguments.
    public struct NullSink: Sendable {
        public let name: String
        public let arguments: String

        public init(_ name: String, _ arguments: String = "") {
            self.name = name
            self.arguments = arguments
        }
    }

    /// Headphones (the default sink), speakers, a 5.1 device, and `mic_feed`,
    /// whose monitor `mic_feed.monitor` is the default source: a virtual
    /// microphone that hears whatever is played into `mic_feed`.
    public static let standardSinks = [
        NullSink("phones", "sink_properties='device.form_factor=headphone device.description=Phones'"),
        NullSink("speakers", "sink_properties='device.form_factor=speaker device.description=Speakers'"),
        NullSink("surround", "channels=6 channel_map=front-left,front-right,front-center,lfe,rear-left,rear-right"),
        NullSink("mic_feed", "sink_properties=device.description=Microphone"),
    ]

    /// Whether the daemon and its command-line clients are installed.
    public static var isAvailable: Bool { executable("pulseaudio") != nil && executable("pactl") != nil }

    /// The runtime directory (mode 0700); HOME, the script and the log are in it too.
    public let directory: String
    /// What clients put in `PULSE_SERVER`: "unix:<directory>/pulse/native".
    public let serverAddress: String
    /// This process's environment pointed at the private server, for child processes.
    public let environment: [String: String]
    private let script: String
    private var daemon: ChildProcess?

    public init(sinks: [NullSink] = standardSinks, defaultSink: String = "phones",
                defaultSource: String = "mic_feed.monitor") throws {
        // A short path: the socket's must fit in sockaddr_un (108 bytes).
        directory = "/tmp/pulse-test-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory + "/home", withIntermediateDirectories: true)
        try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory)
        serverAddress = "unix:\(directory)/pulse/native"
        environment = ProcessInfo.processInfo.environment.merging([
            "XDG_RUNTIME_DIR": directory,
            "PULSE_RUNTIME_PATH": directory + "/pulse",
            "HOME": directory + "/home",
            "PULSE_SERVER": serverAddress,
        ]) { $1 }

        let lines = ["load-module module-native-protocol-unix auth-anonymous=1"]
            + sinks.map { "load-module module-null-sink sink_name=\($0.name) format=float32le rate=48000 \($0.arguments)" }
            + ["set-default-sink \(defaultSink)", "set-default-source \(defaultSource)"]
        script = directory + "/test.pa"
        try lines.joined(separator: "\n").write(toFile: script, atomically: true, encoding: .utf8)
        try start()
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Starts the daemon again after `stop()` or `kill()`, at the same address.
    public func restart() throws {
        kill()
        try start()
    }

    /// Ends the daemon gracefully (SIGTERM) and waits for it.
    public func stop() { end(SIGTERM) }

    /// Ends the daemon abruptly (SIGKILL), as a crash would, and waits for it.
    public func kill() { end(SIGKILL) }

    /// Stops the daemon where it stands (SIGSTOP), as a hung server would: it
    /// keeps its sockets and answers nothing until `resume()`.
    public func freeze() { daemon?.signal(SIGSTOP) }

    /// Lets a frozen daemon go on (SIGCONT).
    public func resume() { daemon?.signal(SIGCONT) }

    /// Runs `pactl` against this server; its standard output.
    @discardableResult
    public func pactl(_ arguments: String...) throws -> String {
        try run("pactl", arguments)
    }

    /// Runs `tool` against this server and returns its standard output;
    /// throws when it exits with an error or has not ended within `seconds`.
    @discardableResult
    public func run(_ tool: String, _ arguments: [String], within seconds: Double = 120) throws -> String {
        let output = directory + "/\(URL(fileURLWithPath: tool).lastPathComponent)-\(UUID().uuidString).out"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let child = try spawn(tool, arguments, output: output, errors: output + ".errors")
        guard let status = child.wait(seconds: seconds) else {
            throw PulseServerError("\(tool) \(arguments.joined(separator: " ")) had not ended after \(seconds) s, and was killed")
        }
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0 else {
            let problems = (try? String(contentsOfFile: output + ".errors", encoding: .utf8)) ?? ""
            throw PulseServerError("\(tool) \(arguments.joined(separator: " ")) exited with \(status): \(problems)")
        }
        try? FileManager.default.removeItem(atPath: output + ".errors")
        return text
    }

    /// Starts `tool` (a path, or found on PATH) against this server, with its standard
    /// streams from and to files.
    public func spawn(_ tool: String, _ arguments: [String], input: String = "/dev/null",
                      output: String = "/dev/null", errors: String = "/dev/null") throws -> ChildProcess {
        try ChildProcess.spawn(tool, arguments, environment: environment, input: input, output: output, errors: errors)
    }

    private func start() throws {
        // -n: only our script's modules. As root the daemon warns but runs, since --system=false.
        let log = directory + "/pulseaudio.log"
        let child = try spawn("pulseaudio", ["-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit",
                                             "--use-pid-file=no", "--system=false", "--log-target=stderr",
                                             "-F", script], errors: log)
        daemon = child
        let deadline = Date().addingTimeInterval(5)
        while (try? pactl("info")) == nil {
            guard child.isRunning, Date() < deadline else {
                kill()
                let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                throw PulseServerError("pulseaudio did not come up within 5 s:\n\(output)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    private func end(_ signal: Int32) {
        guard let daemon else { return }
        daemon.signal(signal)
        daemon.wait()
        self.daemon = nil
    }

    /// The first executable called `name` on PATH.
    public static func executable(_ name: String) -> String? {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return folders.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

public struct PulseServerError: Error, CustomStringConvertible {
    public let description: String

    public init(_ description: String) { self.description = description }
}
