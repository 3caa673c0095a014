import Foundation
import NIOCore
import NIOPosix

/// Talks to a running roomd over its control socket.
public struct ControlClient: Sendable {
    public let path: String

    public init(path: String = defaultControlSocketPath()) {
        self.path = path
    }

    /// The longest answer read: far beyond any room's status, short of exhausting memory.
    static let maximumAnswerBytes = 1 << 30

    public enum Failure: Error, CustomStringConvertible {
        case noDaemon(path: String, reason: String)
        /// The socket is there and not this user's to open.
        case denied(path: String)
        /// The daemon refused the request, saying why.
        case refused(String)
        case badReply(String)

        public var description: String {
            switch self {
            case .noDaemon(let path, let reason): "no roomd is listening at \(path) (\(reason)); start one with: roomd SCENE"
            case .denied(let path): "permission denied: \(path) belongs to another user (pass --socket for your own roomd)"
            case .refused(let message): message
            case .badReply(let line): "roomd answered something that is not the protocol: \(line.prefix(200))"
            }
        }
    }

    /// Sends one request and returns its result.
    public func send(_ request: ControlProtocol.Request) async throws -> [String: Any] {
        let line = request.line
        return try await connect { inbound, outbound in
            try await outbound.write(ByteBuffer(string: line + "\n"))
            for try await reply in inbound { return UncheckedBox(try Self.result(of: String(buffer: reply))) }
            throw Failure.badReply("(the connection closed)")
        }.value
    }

    /// Subscribes to the room's events and hands each to `body` as its JSON
    /// line, until the connection ends: with `since`, the kept events after
    /// that seq of `stream` first; with `only`, just those kinds. `started`
    /// gets the daemon's answer (`stream`, `lastSeq`, `replayed`, `missed`)
    /// before any event.
    public func events(since: Int? = nil, stream: String? = nil, only: [String]? = nil,
                       started: @Sendable ([String: Any]) -> Void = { _ in },
                       _ body: @Sendable (String) -> Void) async throws {
        var args: [String: Any] = [:]
        if let since { args["since"] = since }
        if let stream { args["stream"] = stream }
        if let only { args["only"] = only }
        let request = ControlProtocol.Request(verb: "events", args: args).line
        try await connect { inbound, outbound in
            try await outbound.write(ByteBuffer(string: request + "\n"))
            var answered = false
            for try await buffer in inbound {
                let line = String(buffer: buffer)
                if !answered {
                    started(try Self.result(of: line))
                    answered = true
                    continue
                }
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                      let event = object["event"],
                      let data = try? JSONSerialization.data(withJSONObject: event, options: [.sortedKeys, .withoutEscapingSlashes]) else {
                    throw Failure.badReply(line)
                }
                body(String(decoding: data, as: UTF8.self))
            }
        }
    }

    private func connect<Result: Sendable>(
        _ body: (NIOAsyncChannelInboundStream<ByteBuffer>, NIOAsyncChannelOutboundWriter<ByteBuffer>) async throws -> Result
    ) async throws -> Result {
        var info = stat()
        if lstat(path, &info) != 0 {
            throw errno == EACCES ? Failure.denied(path: path) : Failure.noDaemon(path: path, reason: "no socket there")
        }
        let channel: LineChannel
        do {
            // An answer may be any size: the status of a room of ten thousand sources.
            channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connect(unixDomainSocketPath: path) { LineChannel.lines(on: $0, maximumBytes: Self.maximumAnswerBytes) }
        } catch let error as IOError where error.errnoCode == EACCES {
            throw Failure.denied(path: path)
        } catch {
            throw Failure.noDaemon(path: path, reason: "\(error)")
        }
        return try await channel.executeThenClose { inbound, outbound in try await body(inbound, outbound) }
    }

    private static func result(of line: String) throws -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], object["ok"] != nil else {
            throw Failure.badReply(line)
        }
        guard object["ok"] as? Bool == true else { throw Failure.refused(object["error"] as? String ?? "refused") }
        return object["result"] as? [String: Any] ?? [:]
    }
}
