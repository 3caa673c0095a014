import Dispatch
import Engine
import Foundation
import NIOCore
import NIOPosix
import Synchronization

/// Where roomd listens: `$XDG_RUNTIME_DIR/roomd.sock`, or, without a
/// runtime folder, a folder of the user's own under /tmp.
public func defaultControlSocketPath() -> String {
    if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
        return runtime + "/roomd.sock"
    }
    return fallbackControlSocketFolder + "/roomd.sock"
}

/// The user's own folder for the socket when there is no runtime folder.
let fallbackControlSocketFolder = "/tmp/roomd-\(getuid())"

/// Splits the stream into lines, refusing any longer than `maximumBytes`.
struct LineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    struct LineTooLong: Error {}

    /// The longest line taken: the protocol's for requests; answers may be any size.
    let maximumBytes: Int
    /// Bytes of the line under way already searched for its end: a long
    /// line comes in many reads, and each looks only at what is new.
    private var searchedBytes = 0

    init(maximumBytes: Int) {
        self.maximumBytes = maximumBytes
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        let unsearched = buffer.readableBytesView.dropFirst(searchedBytes)
        guard let newline = unsearched.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > maximumBytes { throw LineTooLong() }
            searchedBytes = buffer.readableBytes
            return .needMoreData
        }
        searchedBytes = 0
        let length = newline - buffer.readerIndex
        if length > maximumBytes { throw LineTooLong() }
        let line = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        context.fireChannelRead(wrapInboundOut(line))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A client gone mid-line sent no request: drop the part.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        searchedBytes = 0
        return .needMoreData
    }
}

typealias LineChannel = NIOAsyncChannel<ByteBuffer, ByteBuffer>

extension NIOAsyncChannel where Inbound == ByteBuffer, Outbound == ByteBuffer {
    /// A connection of the control protocol, either end: lines of at most `maximumBytes` in, buffers out.
    static func lines(on channel: Channel, maximumBytes: Int = ControlProtocol.maximumLineBytes) -> EventLoopFuture<LineChannel> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder(maximumBytes: maximumBytes)))
            return try LineChannel(wrappingChannelSynchronously: channel)
        }
    }
}

/// The daemon's control socket: a Unix socket only its user may open, one
/// task per client, requests run one at a time against the room.
public final class ControlServer: Sendable {
    /// Clients served at once; one more is told so and closed.
    public static let maximumClients = 256

    public let path: String
    private let service: ControlService
    /// Requests change the room one at a time, off the socket's threads:
    /// loading a scene or making renderers takes a while.
    private let queue = DispatchQueue(label: "room control")
    private let clients = Atomic<Int>(0)
    /// Connections since the daemon started, numbering them in the trace.
    private let connections = Atomic<Int>(0)
    private let trace: ProtocolTrace?

    /// Serves `service` at `path`, recording every line to `trace` if there is one.
    public init(service: ControlService, path: String, trace: ProtocolTrace? = nil) {
        self.service = service
        self.path = path
        self.trace = trace
    }

    /// Checks that roomd may listen at `path`: its folder is safe and no
    /// daemon answers there; a stale socket is removed. `run` checks again.
    public static func prepare(socket path: String) throws { try ControlSocketPlace.prepare(path) }

    /// Listens until the task is cancelled, calling `listening` once clients can connect.
    ///
    /// The socket is made only the user may open it (by umask, never by a
    /// chmod of its path). The fallback folder under /tmp is used only if it
    /// is the user's own, a real folder only they may enter. A socket a
    /// daemon still answers on is never taken over; one that refuses
    /// connections is stale and replaced.
    public func run(group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton, listening: @Sendable () -> Void = {}) async throws {
        try ControlSocketPlace.prepare(path)
        let previous = umask(0o177)
        let server: NIOAsyncChannel<LineChannel, Never>
        do {
            server = try await ServerBootstrap(group: group)
                .serverChannelOption(.backlog, value: 256)
                .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: false) { LineChannel.lines(on: $0) }
            umask(previous)
        } catch {
            umask(previous)
            throw error
        }
        defer { unlink(path) }
        listening()
        try await withThrowingDiscardingTaskGroup { group in
            try await server.executeThenClose { connections in
                for try await connection in connections {
                    group.addTask { await self.serve(connection) }
                }
            }
        }
    }

    private func serve(_ connection: LineChannel) async {
        let admitted = clients.add(1, ordering: .relaxed).newValue <= Self.maximumClients
        defer { clients.subtract(1, ordering: .relaxed) }
        let closed = connection.channel.closeFuture
        let number = connections.add(1, ordering: .relaxed).newValue
        try? await connection.executeThenClose { inbound, outbound in
            func reply(_ line: String) async throws {
                trace?.record(client: number, received: false, line)
                try await outbound.write(ByteBuffer(string: line + "\n"))
            }
            guard admitted else {
                try await reply(ControlProtocol.error("roomd serves \(Self.maximumClients) clients at once; try again"))
                return
            }
            do {
                for try await line in inbound {
                    trace?.record(client: number, received: true, String(decoding: line.readableBytesView, as: UTF8.self))
                    let request: ControlProtocol.Request
                    do {
                        request = try ControlProtocol.Request(line: Data(line.readableBytesView))
                    } catch {
                        try await reply(ControlProtocol.error("\(error)"))
                        continue
                    }
                    if request.verb == "events" {
                        let subscription: EventSubscription
                        do {
                            subscription = try service.subscription(for: request)
                        } catch {
                            try await reply(ControlProtocol.error("\(error)"))
                            continue
                        }
                        try await reply(ControlProtocol.ok(ControlService.streamingResult(subscription)))
                        try await streamEvents(subscription.events, to: outbound, until: closed, client: number)
                        return
                    }
                    try await reply(await perform(request))
                }
            } catch is LineDecoder.LineTooLong {
                try await reply(ControlProtocol.error("request longer than \(ControlProtocol.maximumLineBytes) bytes; closing"))
            }
        }
    }

    private func perform(_ request: ControlProtocol.Request) async -> String {
        let request = UncheckedBox(request)
        return await withCheckedContinuation { continuation in
            queue.async { [self] in
                do {
                    var result = try service.perform(request.value)
                    // The socket's own figure: the clients connected now, this one included.
                    if request.value.verb == "status" {
                        result["controlClients"] = clients.load(ordering: .relaxed)
                        result["pid"] = Int(getpid())
                    }
                    continuation.resume(returning: ControlProtocol.ok(result))
                } catch {
                    continuation.resume(returning: ControlProtocol.error("\(error)"))
                }
            }
        }
    }

    /// Sends the room's events until the client goes.
    private func streamEvents(_ events: AsyncStream<EngineEvent>, to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>,
                              until closed: EventLoopFuture<Void>, client: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events {
                    let line = ControlProtocol.event(event)
                    self.trace?.record(client: client, received: false, line)
                    try await outbound.write(ByteBuffer(string: line + "\n"))
                }
            }
            group.addTask { try await closed.get() }
            _ = try await group.next()
            group.cancelAll()
        }
    }
}

/// Carries a value across a thread hop that Swift cannot check: the
/// request's arguments are JSON values nobody else holds.
struct UncheckedBox<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Where the control socket goes, checked before roomd binds it.
public enum ControlSocketPlace {
    /// Why roomd will not listen at a path.
    public struct Refusal: Error, CustomStringConvertible {
        public let description: String
        /// No socket can be made at the path at all: the caller named a wrong one.
        public var isUsage = false
    }

    /// Makes the fallback folder if it is missing, checks the socket's
    /// folder, and clears a stale socket; throws when another daemon
    /// answers there or the place is not safe.
    static func prepare(_ path: String) throws {
        let longest = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1
        guard path.utf8.count <= longest else {
            throw Refusal(description: "the socket path \(path) is \(path.utf8.count) bytes; a socket's path holds at most \(longest)", isUsage: true)
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if folder == fallbackControlSocketFolder {
            if mkdir(folder, 0o700) != 0 && errno != EEXIST { throw Refusal(description: "cannot make \(folder): \(String(cString: strerror(errno)))") }
            var info = stat()
            guard lstat(folder, &info) == 0 else { throw Refusal(description: "cannot check \(folder): \(String(cString: strerror(errno)))") }
            let problem: String? = if info.st_mode & S_IFMT != S_IFDIR {
                "it is not a folder (a symlink or a file)"
            } else if info.st_uid != getuid() {
                "it belongs to user \(info.st_uid), not to you (\(getuid()))"
            } else if info.st_mode & 0o777 != 0o700 {
                "its mode is \(String(info.st_mode & 0o777, radix: 8)), not 700: others could swap the socket"
            } else {
                nil
            }
            if let problem { throw Refusal(description: "refusing the socket folder \(folder): \(problem); remove it or pass --socket") }
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            guard errno == ENOENT || errno == ENOTDIR else { throw Refusal(description: "cannot use \(path): \(String(cString: strerror(errno)))") }
            var place = stat()
            guard stat(folder, &place) == 0 else {
                throw Refusal(description: "cannot make the socket \(path): \(folder): \(String(cString: strerror(errno)))", isUsage: true)
            }
            guard place.st_mode & S_IFMT == S_IFDIR else {
                throw Refusal(description: "cannot make the socket \(path): \(folder) is not a folder", isUsage: true)
            }
            guard access(folder, W_OK | X_OK) == 0 else {
                throw Refusal(description: "cannot make the socket \(path): \(folder): \(String(cString: strerror(errno)))", isUsage: true)
            }
            return
        }
        guard info.st_mode & S_IFMT == S_IFSOCK else { throw Refusal(description: "\(path) is there and is not a socket; not replacing it") }
        switch probe(path) {
        case .answered(let pid):
            throw Refusal(description: "roomd already runs at \(path)" + (pid.map { ", pid \($0)" } ?? ""))
        case .refused:
            // Stale: nobody listens.
            if unlink(path) != 0 { throw Refusal(description: "cannot remove the stale socket \(path): \(String(cString: strerror(errno)))") }
        case .failed(let code):
            throw Refusal(description: "cannot use \(path): \(String(cString: strerror(code)))"
                          + (code == EACCES ? " (it belongs to another user)" : ""))
        }
    }

    enum Probe {
        /// A daemon answered, and said its pid if it could.
        case answered(pid: Int?)
        /// Nobody listens: the socket is stale.
        case refused
        case failed(errno: Int32)
    }

    /// Connects to the socket at `path` and asks who is there, waiting at most a second.
    static func probe(_ path: String) -> Probe {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return .failed(errno: errno) }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return .failed(errno: ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else { return errno == ECONNREFUSED ? .refused : .failed(errno: errno) }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Array((ControlProtocol.Request(verb: "status").line + "\n").utf8)
        _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var reply = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while !reply.contains(UInt8(ascii: "\n")) {
            let got = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if got <= 0 { break }
            reply += chunk[0..<got]
        }
        let object = try? JSONSerialization.jsonObject(with: Data(reply.prefix { $0 != UInt8(ascii: "\n") })) as? [String: Any]
        let result = object?["result"] as? [String: Any]
        return .answered(pid: result?["pid"] as? Int)
    }
}
