import Foundation

/// An independent Mumble client for tests: Tests/MumblePeer/peer.py, on
/// pymumble 1.6.1 in the venv that Tools/mumble-peer-setup.sh makes (run
/// here once per process), driven by JSON lines.
///
/// Each call sends one command and waits, for a bounded time, for its
/// reply; events (users joining, leaving and moving, a say starting and
/// finishing, the connection dropping) are kept in order as they come and
/// taken by `waitForEvent`. The peer speaks WAV files as Opus in real time,
/// 20 ms a packet, with an optional position after each packet's voice, and
/// records what it hears per sender, with the positions that came with it.
///
/// Its standard input is a FIFO and its standard output a file read as it
/// grows, both in a folder of its own that is removed at the end.
public final class MumblePeer {
    /// A user as the peer sees it.
    public struct User: Sendable, Equatable {
        /// The server's session number of the user.
        public let session: Int
        /// The user's name.
        public let name: String
        /// The name of the channel the user is in.
        public let channel: String?

        /// A user `name` of session `session` in `channel`.
        public init(session: Int, name: String, channel: String?) {
            self.session = session
            self.name = name
            self.channel = channel
        }
    }

    /// Part of a say: `seconds` of the file sent with `position` after each
    /// packet's voice, or with none.
    public struct Segment: Sendable {
        /// How long the part lasts; the last part lasts to the end of the file whatever it says.
        public var seconds: Double
        /// The position, in Mumble's frame (x right, y up, z forward, metres), or nil for none.
        public var position: SIMD3<Float>?

        /// A part of `seconds` at `position`.
        public init(seconds: Double, position: SIMD3<Float>?) {
            self.seconds = seconds
            self.position = position
        }
    }

    /// Consecutive packets that came with the same position.
    public struct PositionRun: Sendable, Equatable {
        /// The position the packets carried.
        public let position: SIMD3<Float>
        /// How many packets in a row carried it.
        public let count: Int

        /// `count` packets in a row at `position`.
        public init(position: SIMD3<Float>, count: Int) {
            self.position = position
            self.count = count
        }
    }

    /// What the peer heard of one sender between `startRecording` and `stopRecording`.
    public struct Recording: Sendable {
        /// The sender's session number.
        public let session: Int
        /// The sender's name, when the peer knew it.
        public let name: String?
        /// A WAV file, 48 kHz mono 16-bit, from the start of the recording to
        /// its stop: the decoded voice placed by sequence number within each
        /// talk spurt, silence where nothing came.
        public let path: String
        /// Voice packets received from the sender.
        public let packets: Int
        /// Seconds of audio decoded.
        public let seconds: Double
        /// Talk spurts: times the placement started anew at a packet's arrival.
        public let spurts: Int
        /// Packets that ended in a position.
        public let positionCount: Int
        /// Packets that carried none (the server strips positions between
        /// users of different plugin contexts).
        public let unpositionedCount: Int
        /// The first position received.
        public let firstPosition: SIMD3<Float>?
        /// The last position received.
        public let lastPosition: SIMD3<Float>?
        /// The positions in the order they came, consecutive equal ones counted together.
        public let positionRuns: [PositionRun]

        /// The recording's samples, scaled to ±1.
        public func samples() throws -> [Float] { try MumblePeer.readWAV16(path) }
    }

    /// The repository's root, found from this file's path.
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path
    /// The peer's script.
    public static let script = repositoryRoot + "/Tests/MumblePeer/peer.py"

    /// Runs Tools/mumble-peer-setup.sh (once per process) and returns the venv's python.
    public static func setUp() throws -> String { try setup.get() }

    private static let setup = Result<String, any Error> {
        let tool = repositoryRoot + "/Tools/mumble-peer-setup.sh"
        let output = NSTemporaryDirectory() + "mumble-peer-setup-\(UUID().uuidString.prefix(8)).log"
        defer { try? FileManager.default.removeItem(atPath: output) }
        let child = try ChildProcess.spawn(tool, [], environment: ProcessInfo.processInfo.environment, output: output, errors: output)
        let deadline = Date().addingTimeInterval(600)
        while child.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if child.isRunning { child.signal(SIGKILL) }
        let status = child.wait()
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0 else { throw MumbleServerError("Tools/mumble-peer-setup.sh exited with \(status):\n\(text)") }
        return repositoryRoot + "/.build/mumble-peer-venv/bin/python"
    }

    /// A name for messages.
    public let label: String
    /// The peer's folder: its FIFO, standard output and standard error.
    public let directory: String
    /// Every event received so far, in order, as decoded JSON objects.
    public private(set) var events: [[String: Any]] = []
    /// The session number the server gave the peer on connecting.
    public private(set) var session: Int?

    private let child: ChildProcess
    private var input: Int32
    private let output: Int32
    private var unread = Data()
    private var untaken: [[String: Any]] = []
    private var replies: [Int: [String: Any]] = [:]
    private var nextID = 1

    /// Starts the peer (setting up its venv first if need be); it connects on `connect`.
    public init(label: String = "peer") throws {
        let python = try Self.setUp()
        self.label = label
        directory = NSTemporaryDirectory() + "mumble-peer-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let fifo = directory + "/stdin"
        let stdout = directory + "/stdout.jsonl"
        guard mkfifo(fifo, 0o600) == 0, FileManager.default.createFile(atPath: stdout, contents: nil) else {
            throw MumbleServerError("\(label): cannot make \(fifo) or \(stdout)")
        }
        // Held open for reading and writing, so the child's open of the FIFO
        // does not wait for a writer (posix_spawn returns only once the child
        // has run its file actions), and so writes never raise SIGPIPE.
        input = open(fifo, O_RDWR | O_CLOEXEC)
        output = open(stdout, O_RDONLY | O_CLOEXEC)
        guard input >= 0, output >= 0 else { throw MumbleServerError("\(label): cannot open \(fifo) or \(stdout)") }
        let environment = ProcessInfo.processInfo.environment.merging([
            "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python",
            "PYTHONUNBUFFERED": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        ]) { $1 }
        do {
            child = try ChildProcess.spawn(python, [Self.script], environment: environment, input: fifo, output: stdout,
                                           errors: directory + "/stderr.log")
        } catch {
            close(input)
            close(output)
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    deinit {
        quit()
        close(output)
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// What the peer wrote to its standard error: tracebacks, pymumble's complaints.
    public var errors: String { (try? String(contentsOfFile: directory + "/stderr.log", encoding: .utf8)) ?? "" }

    /// Whether the peer's process is running.
    public var isRunning: Bool { child.isRunning }

    // MARK: - Commands

    /// Sends `command` with `arguments` and waits up to `timeout` seconds for
    /// its reply; throws when the reply is not ok, with the peer's error.
    @discardableResult
    public func send(_ command: String, _ arguments: [String: Any] = [:], timeout: Double = 15) throws -> [String: Any] {
        let id = nextID
        nextID += 1
        var line = arguments
        line["cmd"] = command
        line["id"] = id
        var data = try JSONSerialization.data(withJSONObject: line)
        data.append(0x0A)
        try write(data)
        let reply = try waitFor("the reply to \(command)", timeout: timeout) { $0.replies.removeValue(forKey: id) }
        guard reply["ok"] as? Bool == true else {
            throw MumbleServerError("\(label): \(command) failed: \(reply["error"] as? String ?? "\(reply)")")
        }
        return reply
    }

    /// Waits up to `timeout` seconds for an event named `name` that satisfies
    /// `predicate`, among those not taken yet, and takes it.
    @discardableResult
    public func waitForEvent(_ name: String, timeout: Double = 10,
                             where predicate: ([String: Any]) -> Bool = { _ in true }) throws -> [String: Any] {
        try waitFor("a \(name) event", timeout: timeout) { peer in
            guard let index = peer.untaken.firstIndex(where: { $0["event"] as? String == name && predicate($0) }) else { return nil }
            return peer.untaken.remove(at: index)
        }
    }

    /// Connects to `server` as `user`, joins `channel` (by name; the root
    /// channel when nil), after making `makeChannels` if asked, and sets the
    /// plugin context to `context`'s UTF-8 bytes; the session number.
    /// `password` is the user's or the server's, the server's by default.
    @discardableResult
    public func connect(to server: MumbleServer, user: String, channel: String? = nil, password: String? = nil,
                        context: String? = nil, makeChannels: [String] = [], timeout: Double = 10) throws -> Int {
        var arguments: [String: Any] = ["host": server.host, "port": server.port, "user": user,
                                        "password": password ?? server.serverPassword, "timeout": timeout]
        if let channel { arguments["channel"] = channel }
        if let context { arguments["context"] = context }
        if !makeChannels.isEmpty { arguments["make_channels"] = makeChannels }
        let reply = try send("connect", arguments, timeout: timeout * 3 + 5)
        guard let session = Self.number(reply["session"]).map(Int.init) else { throw MumbleServerError("\(label): no session in \(reply)") }
        self.session = session
        return session
    }

    /// Makes channels under the root channel (needs the permission: the
    /// SuperUser has it), permanent unless `temporary`; their ids by name.
    @discardableResult
    public func makeChannels(_ names: [String], temporary: Bool = false) throws -> [String: Int] {
        let reply = try send("make_channels", ["names": names, "temporary": temporary])
        return ((reply["channels"] as? [String: Any]) ?? [:]).compactMapValues { Self.number($0).map(Int.init) }
    }

    /// Starts saying a 48 kHz mono 16-bit WAV file as Opus, in real time, each
    /// packet with `position` (or none); returns the say's id, which its
    /// say_started and say_finished events carry. A say queued while another
    /// plays follows it.
    @discardableResult
    public func say(wav: String, position: SIMD3<Float>? = nil) throws -> Int {
        try say(wav: wav, segments: [Segment(seconds: 0, position: position)])
    }

    /// Starts saying a WAV file in parts, each with its position.
    @discardableResult
    public func say(wav: String, segments: [Segment]) throws -> Int {
        let lines: [[String: Any]] = segments.map { segment in
            var line: [String: Any] = ["seconds": segment.seconds]
            line["position"] = segment.position.map { [Double($0.x), Double($0.y), Double($0.z)] } ?? NSNull()
            return line
        }
        let reply = try send("say", ["wav": wav, "segments": lines])
        guard let say = Self.number(reply["say"]).map(Int.init) else { throw MumbleServerError("\(label): no say id in \(reply)") }
        return say
    }

    /// Waits until the say `say` has sent its last packet.
    public func waitUntilSaid(_ say: Int, timeout: Double = 30) throws {
        try waitForEvent("say_finished", timeout: timeout) { Self.number($0["say"]).map(Int.init) == say }
    }

    /// Starts recording what the peer hears, anew.
    public func startRecording() throws { try send("record_start") }

    /// Stops recording and writes one WAV per sender into `folder` (the
    /// peer's own folder by default, removed with the peer).
    public func stopRecording(into folder: String? = nil) throws -> [Recording] {
        let reply = try send("record_stop", ["folder": folder ?? directory + "/recordings"], timeout: 30)
        return ((reply["senders"] as? [[String: Any]]) ?? []).map(Self.recording)
    }

    /// The users in the peer's channel, or on the whole server with `all`, by session.
    public func users(all: Bool = false) throws -> [User] {
        let reply = try send("users", ["all": all])
        return ((reply["users"] as? [[String: Any]]) ?? []).map {
            User(session: Self.number($0["session"]).map(Int.init) ?? -1, name: $0["name"] as? String ?? "",
                 channel: $0["channel"] as? String)
        }
    }

    /// Turns the join, leave and move events on or off (on from the start).
    public func setEvents(enabled: Bool) throws { try send("events", ["enabled": enabled]) }

    /// Disconnects and ends the peer: a `quit`, its standard input closed,
    /// then SIGKILL if it is still running after 3 s.
    public func quit() {
        if input >= 0 {
            if child.isRunning { try? write(Data(#"{"cmd":"quit"}"#.utf8 + [0x0A])) }
            close(input)
            input = -1
        }
        let deadline = Date().addingTimeInterval(3)
        while child.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if child.isRunning { child.signal(SIGKILL) }
        child.wait()
    }

    // MARK: - Private

    private func write(_ data: Data) throws {
        guard input >= 0 else { throw MumbleServerError("\(label): the peer has quit") }
        try data.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < bytes.count {
                let written = Foundation.write(input, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    throw MumbleServerError("\(label): writing to the peer: \(String(cString: strerror(errno)))")
                }
                offset += written
            }
        }
    }

    /// Reads what the peer has written since, sorting replies and events.
    private func pump() {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(output, &buffer, buffer.count)
            guard count > 0 else { break }
            unread.append(contentsOf: buffer[0..<count])
        }
        while let newline = unread.firstIndex(of: 0x0A) {
            let line = unread[unread.startIndex..<newline]
            unread = Data(unread[(newline + 1)...])
            guard let object = (try? JSONSerialization.jsonObject(with: line)) as? [String: Any] else { continue }
            if object["event"] != nil {
                events.append(object)
                untaken.append(object)
            } else if let id = Self.number(object["id"]).map(Int.init) {
                replies[id] = object
            }
        }
    }

    private func waitFor<T>(_ what: String, timeout: Double, _ found: (MumblePeer) -> T?) throws -> T {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            pump()
            if let value = found(self) { return value }
            guard child.isRunning else {
                pump()
                if let value = found(self) { return value }
                throw MumbleServerError("\(label): the peer ended while waiting for \(what):\n\(errors)")
            }
            guard Date() < deadline else {
                throw MumbleServerError("\(label): no \(what) within \(timeout) s; its errors:\n\(errors.suffix(4_000))")
            }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }

    private static func number(_ value: Any?) -> Double? { (value as? NSNumber)?.doubleValue }

    private static func position(_ value: Any?) -> SIMD3<Float>? {
        guard let values = value as? [Any], values.count == 3 else { return nil }
        let floats = values.compactMap { number($0).map(Float.init) }
        return floats.count == 3 ? SIMD3(floats[0], floats[1], floats[2]) : nil
    }

    private static func recording(_ line: [String: Any]) -> Recording {
        let positions = line["positions"] as? [String: Any] ?? [:]
        let runs = (positions["runs"] as? [[String: Any]] ?? []).compactMap { run -> PositionRun? in
            guard let position = position(run["position"]), let count = number(run["count"]) else { return nil }
            return PositionRun(position: position, count: Int(count))
        }
        return Recording(session: number(line["session"]).map(Int.init) ?? -1, name: line["name"] as? String,
                         path: line["path"] as? String ?? "", packets: number(line["packets"]).map(Int.init) ?? 0,
                         seconds: number(line["seconds"]) ?? 0, spurts: number(line["spurts"]).map(Int.init) ?? 0,
                         positionCount: number(positions["count"]).map(Int.init) ?? 0,
                         unpositionedCount: number(positions["without"]).map(Int.init) ?? 0,
                         firstPosition: position(positions["first"]), lastPosition: position(positions["last"]),
                         positionRuns: runs)
    }

    // MARK: - WAV files

    /// Writes `samples` (±1) as a 48 kHz (or `sampleRate`) mono 16-bit WAV
    /// file, the kind `say` takes.
    public static func writeWAV16(_ samples: [Float], to path: String, sampleRate: Int = 48_000) throws {
        var data = Data()
        func append<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { data.append(contentsOf: $0) } }
        let bytes = samples.count * 2
        data.append(contentsOf: Array("RIFF".utf8)); append(UInt32(36 + bytes)); data.append(contentsOf: Array("WAVE".utf8))
        data.append(contentsOf: Array("fmt ".utf8)); append(UInt32(16)); append(UInt16(1)); append(UInt16(1))
        append(UInt32(sampleRate)); append(UInt32(sampleRate * 2)); append(UInt16(2)); append(UInt16(16))
        data.append(contentsOf: Array("data".utf8)); append(UInt32(bytes))
        for sample in samples { append(Int16((max(-1, min(1, sample)) * 32_767).rounded())) }
        try data.write(to: URL(fileURLWithPath: path))
    }

    /// The samples of a mono 16-bit PCM WAV file, scaled to ±1.
    public static func readWAV16(_ path: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let bytes = [UInt8](data)
        func integer(_ at: Int, _ size: Int) -> Int { (0..<size).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        guard bytes.count >= 12, String(decoding: bytes[0..<4], as: UTF8.self) == "RIFF" else {
            throw MumbleServerError("\(path) is not a WAV file")
        }
        var at = 12
        var format: (channels: Int, bits: Int)?
        while at + 8 <= bytes.count {
            let id = String(decoding: bytes[at..<at + 4], as: UTF8.self)
            let size = integer(at + 4, 4)
            let body = at + 8
            if id == "fmt " { format = (integer(body + 2, 2), integer(body + 14, 2)) }
            if id == "data" {
                guard let format, format.channels == 1, format.bits == 16 else {
                    throw MumbleServerError("\(path) is not mono 16-bit PCM")
                }
                let end = min(bytes.count, body + size)
                return stride(from: body, to: end - 1, by: 2).map { Float(Int16(truncatingIfNeeded: integer($0, 2))) / 32_768 }
            }
            at = body + size + (size & 1)
        }
        throw MumbleServerError("\(path) has no data chunk")
    }
}
