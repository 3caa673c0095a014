import Foundation
import Synchronization

/// A process a test starts, with its standard streams from and to files.
///
/// With posix_spawn rather than Foundation's Process, for two reasons: a
/// daemon such as pulseaudio closes the descriptors it inherits, which
/// Process takes for its exit, blocking its monitor thread in waitpid and
/// hanging every later Process; and the child must not inherit the signal
/// mask of the test's thread (libdispatch's threads block SIGTERM and SIGINT).
public final class ChildProcess: Sendable {
    public let pid: pid_t
    /// Its exit status once reaped, by `wait` or by `isRunning`.
    private let reaped = Mutex<Int32?>(nil)

    private init(pid: pid_t) { self.pid = pid }

    /// Starts `tool` (a path, or found on PATH) with `environment` as its whole environment.
    public static func spawn(_ tool: String, _ arguments: [String], environment: [String: String], input: String = "/dev/null",
                             output: String = "/dev/null", errors: String = "/dev/null") throws -> ChildProcess {
        guard let path = tool.hasPrefix("/") ? tool : PulseServer.executable(tool) else { throw PulseServerError("\(tool) is not on PATH") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, input, O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errors, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        var pid = pid_t()
        let status = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard status == 0 else { throw PulseServerError("posix_spawn \(tool): \(String(cString: strerror(status)))") }
        return ChildProcess(pid: pid)
    }

    /// Signals the process, unless it has been reaped and its pid may be another's.
    public func signal(_ signal: Int32) {
        reaped.withLock { status in if status == nil { _ = Foundation.kill(pid, signal) } }
    }

    /// Waits for the process to end; its exit status, 128 + the signal that
    /// ended it, or -1 if it is not this process's child.
    @discardableResult
    public func wait() -> Int32 { reap(options: 0) ?? -1 }

    /// Waits at most `seconds` for the process to end; past that, kills it
    /// and returns nil, so a test that waits on a tool fails instead of hanging.
    public func wait(seconds: Double) -> Int32? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while isRunning {
            guard Date() < deadline else {
                signal(SIGKILL)
                wait()
                return nil
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return wait()
    }

    /// Whether the process is still running.
    public var isRunning: Bool { reap(options: WNOHANG) == nil }

    private func reap(options: Int32) -> Int32? {
        reaped.withLock { reaped in
            if let reaped { return reaped }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &status, options) } while result == -1 && errno == EINTR
            guard result == pid else { return nil }
            reaped = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + status & 0x7f
            return reaped
        }
    }

    /// Its resident memory in bytes, from /proc.
    public var residentBytes: Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first.flatMap({ Int($0) }) else { return nil }
        return kilobytes * 1_024
    }
}
