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
    return "/tmp/roomd-\(getuid())/roomd.sock"
}

/// Splits the stream into lines, refusing any longer than the protocol allows.
struct LineDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    struct LineTooLong: Error {}

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let newline = buffer.readableBytesView.firstIndex(of: UInt8(ascii: "\n")) else {
            if buffer.readableBytes > ControlProtocol.maximumLineBytes { throw LineTooLong() }
            return .needMoreData
        }
        let length = newline - buffer.readerIndex
        if length > ControlProtocol.maximumLineBytes { throw LineTooLong() }
        let line = buffer.readSlice(length: length)!
        buffer.moveReaderIndex(forwardBy: 1)
        context.fireChannelRead(wrapInboundOut(line))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A client gone mid-line sent no request: drop the part.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}

typealias LineChannel = NIOAsyncChannel<ByteBuffer, ByteBuffer>

extension NIOAsyncChannel where Inbound == ByteBuffer, Outbound == ByteBuffer {
    /// A connection of the control protocol, either end: lines in, buffers out.
    static func lines(on channel: Channel) -> EventLoopFuture<LineChannel> {
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(LineDecoder()))
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

    public init(service: ControlService, path: String) {
        self.service = service
        self.path = path
    }

    /// Listens until the task is cancelled.
    public func run(group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton) async throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if !FileManager.default.fileExists(atPath: folder) {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true) { LineChannel.lines(on: $0) }
        chmod(path, 0o600)
        defer { unlink(path) }
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
        try? await connection.executeThenClose { inbound, outbound in
            func reply(_ line: String) async throws { try await outbound.write(ByteBuffer(string: line + "\n")) }
            guard admitted else {
                try await reply(ControlProtocol.error("roomd serves \(Self.maximumClients) clients at once; try again"))
                return
            }
            do {
                for try await line in inbound {
                    let request: ControlProtocol.Request
                    do {
                        request = try ControlProtocol.Request(line: Data(line.readableBytesView))
                    } catch {
                        try await reply(ControlProtocol.error("\(error)"))
                        continue
                    }
                    if request.verb == "events" {
                        try await reply(ControlProtocol.ok(["streaming": "events"]))
                        try await streamEvents(to: outbound, until: closed)
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
                    if request.value.verb == "status" { result["controlClients"] = clients.load(ordering: .relaxed) }
                    continuation.resume(returning: ControlProtocol.ok(result))
                } catch {
                    continuation.resume(returning: ControlProtocol.error("\(error)"))
                }
            }
        }
    }

    /// Sends the room's events until the client goes.
    private func streamEvents(to outbound: NIOAsyncChannelOutboundWriter<ByteBuffer>, until closed: EventLoopFuture<Void>) async throws {
        let events = service.session.subscribe()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await event in events { try await outbound.write(ByteBuffer(string: ControlProtocol.event(event) + "\n")) }
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
