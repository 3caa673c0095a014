import AudioMeasurements
import Foundation
import Testing

/// The control socket against clients that misbehave: each gets an error
/// reply or a clean close, roomd stays up, its memory stays bounded, and
/// the room keeps its state. roomd runs with no sound server here, on its
/// own clock; the socket is the same.
@Suite(.serialized)
struct ControlSocketTests {
    @Test func badRequestsGetAnErrorAndTheConnectionGoesOn() throws {
        let daemon = try RoomDaemon(wellFormedRequests: false)
        let client = try RawClient(path: daemon.socket)
        let cases: [(line: String, says: String)] = [
            ("{not json", "malformed request"),
            ("\"just a string\"", "malformed request"),
            (String(repeating: "[", count: 60_000), "malformed request"),
            (String(repeating: "{\"a\":", count: 10_000) + "1" + String(repeating: "}", count: 10_000), "malformed request"),
            ("{\"v\":2,\"verb\":\"status\"}", "\"v\": 2; this daemon speaks protocol version 1"),
            ("{\"v\":true,\"verb\":\"status\"}", "\"v\": true (not a number)"),
            ("{\"v\":\"1\",\"verb\":\"status\"}", "\"v\": \"1\" (text; the version is a number)"),
            ("{\"verb\":\"status\"}", "\"v\": missing"),
            ("{\"v\":1}", "no \"verb\""),
            ("{\"v\":1,\"verb\":\"status\",\"args\":[1]}", "\"args\" must be an object"),
            ("{\"v\":1,\"verb\":\"explode\"}", "unknown verb \"explode\"; the verbs are status, load"),
            ("{\"v\":1,\"verb\":\"gain\",\"args\":{\"id\":\"tone\",\"db\":\"loud\"}}", "gain: db: loud: expected a number"),
            ("{\"v\":1,\"verb\":\"gain\",\"args\":{\"id\":\"tone\",\"db\":1e999}}", "malformed request"),
            ("{\"v\":1,\"verb\":\"gain\",\"args\":{\"id\":\"tone\",\"db\":500}}", "out of range -120.0...24.0"),
            ("{\"v\":1,\"verb\":\"move\",\"args\":{\"id\":\"tone\",\"position\":[1,2,\"x\"]}}", "expected [x, y, z] in metres"),
            ("{\"v\":1,\"verb\":\"move\",\"args\":{\"id\":\"tone\",\"position\":[true,false,true]}}", "expected [x, y, z] in metres"),
            ("{\"v\":1,\"verb\":\"save\",\"args\":{\"path\":\"\(daemon.folder)\"}}", "cannot save to \(daemon.folder): it is a folder"),
            ("{\"v\":1,\"verb\":\"move\",\"args\":{\"id\":\"bard\",\"position\":[1,2,3]}}", "no source \"bard\" in this room; it has tone"),
            ("{\"v\":1,\"verb\":\"mute\",\"args\":{\"on\":1}}", "mute: on: 1: expected true or false"),
            ("{\"v\":1,\"verb\":\"gain\",\"args\":{\"id\":\"tone\",\"db\":-1e309}}",
             "malformed request: the number -1e309 is beyond the range of a double (about 1.8e308)"),
            ("{\"v\":1,\"verb\":\"gain\",\"args\":{\"id\":\"tone\",\"db\":1\(String(repeating: "0", count: 400))}}",
             "malformed request: the number 10000000000000000000... (401 characters) is beyond the range of a double"),
            ("{\"v\":1,\"verb\":\"load\",\"args\":{\"path\":\"/dev/zero\"}}", "is not a regular file"),
            ("{\"v\":1,\"verb\":\"load\",\"args\":{\"path\":\"\(daemon.fifo)\"}}", "is not a regular file"),
            ("{\"v\":1,\"verb\":\"mic\",\"args\":{\"file\":\"\(daemon.fifo)\"}}", "is not a regular file"),
            ("{\"v\":1,\"verb\":\"mic\",\"args\":{\"file\":\"/dev/zero\"}}", "is not a regular file"),
            ("{\"v\":1,\"verb\":\"sink\",\"args\":{\"record\":\"\(daemon.fifo)\"}}", "cannot record to \(daemon.fifo): it is a device, a FIFO or a socket, not a file"),
        ]
        for (line, says) in cases {
            try client.send(Array((line + "\n").utf8))
            let reply = try #require(client.readLine(), "a reply to \(line.prefix(60))")
            let object = try #require(RawClient.object(reply), "a JSON reply: \(reply.prefix(200))")
            #expect(object["ok"] as? Bool == false && object["v"] as? Int == 1)
            #expect((object["error"] as? String)?.contains(says) == true, "\(line.prefix(60)) -> \(reply.prefix(300))")
        }
        // Invalid UTF-8 and NULs.
        try client.send([0x00, 0xff, 0xfe, 0x20, 0x80, 0x0a])
        #expect(RawClient.object(client.readLine() ?? "")?["error"] as? String == "malformed request: not a JSON object on one line")
        // After all that, the same connection still works and the room is as it was.
        let status = try client.request("{\"v\":1,\"verb\":\"status\"}")
        let tone = try #require((status["result"] as? [String: Any])?["sources"] as? [[String: Any]]).first
        #expect(tone?["gain"] as? Double == 0 && tone?["position"] as? [Double] == [-2, 0, 0])
        #expect(daemon.child.isRunning)
    }

    @Test func anOversizedLineIsRefusedAndClosed() throws {
        let daemon = try RoomDaemon(wellFormedRequests: false)
        for ending in ["", "\n"] {
            let client = try RawClient(path: daemon.socket)
            try client.send(Array((String(repeating: "x", count: 1_100 * 1_024) + ending).utf8))
            let (lines, closed) = client.readUntilClosed()
            #expect(lines == ["{\"error\":\"request longer than 1048576 bytes; closing\",\"ok\":false,\"v\":1}"])
            #expect(closed, "the connection is closed after the refusal")
        }
        #expect(try RawClient(path: daemon.socket).request("{\"v\":1,\"verb\":\"status\"}")["ok"] as? Bool == true)
    }

    /// A hundred clients at once, then more than the daemon serves, then
    /// clients that leave mid-line or never read their replies, in rounds:
    /// the daemon answers everyone it admits, refuses the rest in words,
    /// and its memory after the last round is what it was after the first.
    @Test func crowdsAndDesertersStayBounded() throws {
        let daemon = try RoomDaemon(wellFormedRequests: false)
        _ = try RawClient(path: daemon.socket).request("{\"v\":1,\"verb\":\"gain\",\"args\":{\"id\":\"tone\",\"db\":-6}}")
        var resident: [Int] = []
        for round in 0..<6 {
            // A hundred at once, each asking for the status, once the last round's clients are seen to be gone.
            try daemon.waitUntilItsClientsAreGone()
            do {
                let hundred = try (0..<100).map { _ in try RawClient(path: daemon.socket) }
                for client in hundred { try client.send(Array("{\"v\":1,\"verb\":\"status\"}\n".utf8)) }
                let answered = hundred.filter { RawClient.object($0.readLine() ?? "")?["ok"] as? Bool == true }.count
                #expect(answered == 100, "round \(round): \(answered) of 100 answered")
            }
            // 300 at once: up to 256 are served, the rest told so and closed.
            try daemon.waitUntilItsClientsAreGone()
            do {
                let crowd = try (0..<300).map { _ in try RawClient(path: daemon.socket) }
                Thread.sleep(forTimeInterval: 0.3)
                for client in crowd { try client.send(Array("{\"v\":1,\"verb\":\"mute\",\"args\":{\"on\":\"yes\"}}\n".utf8)) }
                let replies = crowd.map { RawClient.object($0.readLine() ?? "")?["error"] as? String ?? "" }
                let refused = replies.filter { $0.contains("serves 256 clients at once") }.count
                let served = replies.filter { $0.contains("mute: on: yes") }.count
                // The client that asked whether the others had gone may still be counted.
                #expect(served + refused == 300 && (255...256).contains(served), "round \(round): \(served) served, \(refused) refused")
            }

            // Gone mid-line, and gone without reading a thousand pipelined replies.
            for _ in 0..<50 {
                let client = try RawClient(path: daemon.socket)
                try client.send(Array("{\"v\":1,\"verb\":\"move\",\"args\":{\"id\":\"to".utf8))
            }
            do {
                let greedy = try RawClient(path: daemon.socket)
                try greedy.send(Array(String(repeating: "{\"v\":1,\"verb\":\"status\"}\n", count: 1_000).utf8))
            }
            Thread.sleep(forTimeInterval: 1)
            resident.append(try #require(daemon.child.residentBytes))
        }
        try daemon.waitUntilItsClientsAreGone()
        let growth = resident.last! - resident.first!
        print("roomd resident memory after each round: \(resident.map { String(format: "%.1f MB", Double($0) / 1_048_576) }); growth after the first: \(growth / 1_024) KiB")
        #expect(growth < 4 << 20, "memory stays bounded round after round")
        #expect(daemon.child.isRunning)
        let status = try RawClient(path: daemon.socket).request("{\"v\":1,\"verb\":\"status\"}")
        let tone = try #require((status["result"] as? [String: Any])?["sources"] as? [[String: Any]]).first
        #expect(tone?["gain"] as? Double == -6, "the room keeps its state")
    }

    /// Requests mutated at random, byte by byte, from valid ones: every
    /// line gets exactly one JSON reply, and the daemon stays up.
    @Test func mutatedRequestsEachGetOneReply() throws {
        let daemon = try RoomDaemon(wellFormedRequests: false)
        let valid = [
            "{\"v\":1,\"verb\":\"status\"}",
            "{\"v\":1,\"verb\":\"move\",\"args\":{\"id\":\"tone\",\"position\":[1,0,-2],\"overMs\":100}}",
            "{\"v\":1,\"verb\":\"gain\",\"args\":{\"id\":\"tone\",\"db\":-3}}",
            "{\"v\":1,\"verb\":\"listener\",\"args\":{\"yaw\":30}}",
            "{\"v\":1,\"verb\":\"route\",\"args\":{\"route\":\"speakers\"}}",
            "{\"v\":1,\"verb\":\"duck\",\"args\":{\"level\":\"max\"}}",
        ].map { Array($0.utf8) }
        let alphabet = Array("{}[]\":,0123456789.-eE truefalsnl\\u".utf8) + [0x00, 0x7f, 0xc3, 0xff]
        var state: UInt64 = 0x5eed
        func random(_ count: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33) % count
        }
        let client = try RawClient(path: daemon.socket)
        var answered = 0, accepted = 0
        for _ in 0..<2_000 {
            var line = valid[random(valid.count)]
            for _ in 0...random(4) {
                let at = random(line.count)
                switch random(3) {
                case 0: line[at] = alphabet[random(alphabet.count)]
                case 1: line.insert(alphabet[random(alphabet.count)], at: at)
                default: line.remove(at: at)
                }
            }
            line.removeAll { $0 == 0x0a }
            try client.send(line + [0x0a])
            guard let reply = client.readLine(), let object = RawClient.object(reply), let ok = object["ok"] as? Bool else {
                Issue.record("no JSON reply to \(String(decoding: line, as: UTF8.self))")
                break
            }
            answered += 1
            if ok { accepted += 1 }
        }
        print("mutated requests: \(answered) answered, \(accepted) of them still valid enough to carry out")
        #expect(answered == 2_000)
        #expect(daemon.child.isRunning)
    }
}

/// roomd on a scene of one tone, with no sound server.
final class RoomDaemon {
    let folder: String
    let socket: String
    let scene: String
    var environment: [String: String]
    /// A named pipe in the folder, for requests that name one.
    let fifo: String
    let child: ChildProcess
    /// Whether the requests sent are meant to follow the protocol; a test
    /// that throws malformed ones at the daemon has only its answers checked.
    let wellFormedRequests: Bool

    /// roomd on `scene` with `arguments`, once `prepare` has written what
    /// else the scene needs into the folder it is given. Every line on its
    /// socket is checked against the protocol's schema when it stops.
    init(scene room: LiveRoom.Scene = .tone(at: [-2, 0, 0]), arguments: [String] = [], wellFormedRequests: Bool = true,
         prepare: (_ folder: String) throws -> Void = { _ in }) throws {
        self.wellFormedRequests = wellFormedRequests
        folder = "/tmp/roomd-test-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        socket = folder + "/roomd.sock"
        fifo = folder + "/pipe"
        mkfifo(fifo, 0o600)
        scene = try room.write(into: folder)
        try prepare(folder)
        environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = "unix:\(folder)/no-server"
        environment["XDG_RUNTIME_DIR"] = folder
        child = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--socket", socket, "--output", folder + "/room.wav",
                                                                   "--protocol-log", folder + "/protocol.log"] + arguments,
                                       environment: environment, output: folder + "/roomd.out", errors: folder + "/roomd.err")
        let deadline = Date().addingTimeInterval(10)
        while (try? RawClient(path: socket).request("{\"v\":1,\"verb\":\"status\"}")) == nil {
            guard child.isRunning, Date() < deadline else {
                throw PulseServerError("roomd did not start: " + ((try? String(contentsOfFile: folder + "/roomd.err", encoding: .utf8)) ?? ""))
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// Stops the daemon, leaving its folder, and checks what went over its socket.
    func stop() {
        guard child.isRunning else { return }
        child.signal(SIGTERM)
        child.wait()
        ProtocolSchema.check(trace: folder + "/protocol.log", requests: wellFormedRequests)
    }

    /// Waits, up to 20 s, until the daemon has seen every earlier client go:
    /// until `status` counts the asker alone. On a loaded machine that takes
    /// a while after hundreds close at once; if it never happens, the daemon
    /// has lost count of its clients.
    func waitUntilItsClientsAreGone() throws {
        let deadline = Date().addingTimeInterval(20)
        while ((try? RawClient(path: socket).request("{\"v\":1,\"verb\":\"status\"}"))?["result"] as? [String: Any])?["controlClients"] as? Int != 1 {
            guard Date() < deadline else { throw PulseServerError("roomd still counts earlier clients 20 s after they went") }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }
}

/// A client of the control socket at the level of bytes, so a test can send what scenectl never would.
final class RawClient {
    private let descriptor: Int32
    private var pending: [UInt8] = []

    init(path: String) throws {
        descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { bytes in
            for (index, byte) in path.utf8.prefix(bytes.count - 1).enumerated() { bytes[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        // No close here: a class whose init throws once it is whole is
        // deinitialised, and deinit closes it. Closing twice closed whatever
        // another test's thread had opened under the number meanwhile.
        guard connected == 0 else {
            throw PulseServerError("connect \(path): \(String(cString: strerror(errno)))")
        }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// Sends every byte; a daemon that has closed the connection is not an error here.
    func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EPIPE || errno == ECONNRESET) { return }
            guard count >= 0 else { throw PulseServerError("send: \(String(cString: strerror(errno)))") }
            sent += count
        }
    }

    /// The next line, or nil when the daemon closed the connection or said nothing for 10 s.
    func readLine() -> String? {
        while true {
            if let newline = pending.firstIndex(of: 0x0a) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return nil }
            pending += chunk[..<count]
        }
    }

    /// Every line until the daemon closes the connection; whether it did, rather than falling silent.
    func readUntilClosed() -> (lines: [String], closed: Bool) {
        var lines: [String] = []
        while let line = readLine() { lines.append(line) }
        var byte: UInt8 = 0
        return (lines, recv(descriptor, &byte, 1, 0) == 0)
    }

    /// Sends one request line and reads its reply.
    func request(_ line: String) throws -> [String: Any] {
        try send(Array((line + "\n").utf8))
        guard let reply = readLine(), let object = Self.object(reply) else { throw PulseServerError("no reply to \(line)") }
        return object
    }

    static func object(_ line: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    }
}

/// The control protocol's schema, `Sources/Control/protocol.schema.json`,
/// checked against what went over a daemon's socket by Tools/check-protocol.py
/// with Debian's python3-jsonschema.
enum ProtocolSchema {
    static let root = LiveRoom.packageRoot.path

    /// Records an issue for every line of the trace that the schema does not
    /// take: replies and events always, requests when they are meant to be whole.
    static func check(trace: String, requests: Bool) {
        guard FileManager.default.fileExists(atPath: trace) else {
            Issue.record("roomd wrote no protocol trace at \(trace)")
            return
        }
        let report = trace + ".check"
        do {
            let child = try ChildProcess.spawn("/usr/bin/python3", [root + "/Tools/check-protocol.py", root + "/Sources/Control/protocol.schema.json", trace]
                                               + (requests ? [] : ["--no-requests"]),
                                               environment: ProcessInfo.processInfo.environment, output: report, errors: report + ".errors")
            let status = child.wait()
            let said = ((try? String(contentsOfFile: report, encoding: .utf8)) ?? "") + ((try? String(contentsOfFile: report + ".errors", encoding: .utf8)) ?? "")
            print("protocol check of \(URL(fileURLWithPath: trace).lastPathComponent): \(said.split(separator: "\n").last ?? "")")
            if status != 0 { Issue.record("the protocol schema refuses what went over the socket (exit \(status)):\n\(said.prefix(4_000))") }
        } catch {
            Issue.record("cannot run Tools/check-protocol.py: \(error)")
        }
    }
}
