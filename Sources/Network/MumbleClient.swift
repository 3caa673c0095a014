import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Scene
import SwiftProtobuf
import Synchronization

/// Where the connection to the server stands, as `connectionChanged` tells it.
public enum ConnectionState: String, Sendable, CaseIterable {
    /// Connecting, logging in and joining the channel.
    case connecting
    /// In the channel: remote talkers are heard and the uplink is sent.
    case connected
    /// The server went away or could not be reached; the client tries again.
    case lost
    /// The server refused the room (a password, a name, a missing channel, a
    /// changed certificate); the client does not try again on its own.
    case rejected
}

/// What the client tells the room, on the client's event loop.
protocol MumbleClientDelegate: AnyObject, Sendable {
    /// The connection changed, with a line that names the server and why.
    func connectionChanged(_ state: ConnectionState, reason: String)
    /// A user is in the room's channel now (already there at the join, or arrived).
    func userEntered(session: UInt32, name: String)
    /// A user left the channel, the server, or the connection ended.
    func userLeft(session: UInt32, reason: String)
    /// A voice packet from a user in the room's channel.
    func voice(_ packet: VoicePacket)
    /// The most the server lets a user send, in bits per second.
    func bandwidthLimit(_ bitsPerSecond: Int)
}

/// The room's Mumble client: one TLS connection that logs in, joins the
/// scene's channel, keeps the channel's users, carries voice both ways in
/// its tunnel, pings, and connects again after a lost server, waiting
/// 0.5 s, then twice as long each time up to 10 s.
///
/// Its state lives on its event loop; `send(voice:)` may be called from any thread.
final class MumbleClient: @unchecked Sendable {
    /// The version announced: 1.4.0, so that servers of every version speak the legacy voice format to it.
    static let announcedVersion: UInt32 = 1 << 16 | 4 << 8
    static let pingInterval = TimeAmount.seconds(5)
    /// How often the server's silence is looked at: the loss is told within a second of the limit.
    static let silenceCheck = TimeAmount.seconds(1)
    /// A server that sends nothing for this long is lost.
    static let silenceLimit = TimeAmount.seconds(30)
    static let firstRetry = 0.5, lastRetry = 10.0
    /// The most users and channels kept of what the server tells: far above
    /// a real server's, so a hostile one cannot grow the room's memory without bound.
    static let mostKept = 10_000
    /// The longest user or channel name kept, in bytes; longer ones are cut
    /// (Mumble's own limit is far shorter), so names cannot fill memory either.
    static let longestName = 512

    let settings: MumbleSettings
    private let trust: ServerTrust
    private let group: EventLoopGroup
    private let loop: EventLoop
    private weak var delegate: MumbleClientDelegate?

    // Confined to `loop`.
    private var channel: Channel?
    private var attempt = 0
    private var stopped = false
    private var retryTask: Scheduled<Void>?
    private var pingTask: RepeatedTask?
    private var lastHeard = NIODeadline.now()
    private var lastPing = NIODeadline.now()
    private var ownSession: UInt32?
    private var targetChannel: UInt32?
    private var channels: [UInt32: String] = [:]
    private var users: [UInt32: User] = [:]
    private var inChannel: Set<UInt32> = []
    private var joined = false
    /// Why the connection ended, told when it closes; nil for a plain loss.
    private var ending: (state: ConnectionState, reason: String)?
    private var serverVersion = ""

    /// The connection voice is sent on while the room is in its channel.
    private let voiceChannel = Mutex<Channel?>(nil)
    private let counters = Mutex(Counters())

    struct User {
        var name = ""
        var channel: UInt32?
    }

    /// What came from the network and was not used, by reason, and what was sent.
    struct Counters {
        var dropped: [String: Int] = [:]
        var voiceSent = 0
        var voiceNotSent = 0
        var voiceReceived = 0
        var reconnects = 0
        var state = ConnectionState.connecting
        var reason = ""
    }

    init(settings: MumbleSettings, trust: ServerTrust, group: EventLoopGroup, delegate: MumbleClientDelegate) {
        self.settings = settings
        self.trust = trust
        self.group = group
        loop = group.next()
        self.delegate = delegate
    }

    /// Starts connecting; the client keeps trying until `stop`.
    func start() { loop.execute { self.connect() } }

    /// Closes the connection and stops trying; returns once it is closed.
    func stop() {
        let done = loop.submit { () -> EventLoopFuture<Void> in
            self.stopped = true
            self.retryTask?.cancel()
            self.pingTask?.cancel()
            self.ending = (.lost, "\(self.settings.server): the room left")
            return self.channel?.close() ?? self.loop.makeSucceededVoidFuture()
        }.flatMap { $0 }
        _ = try? done.wait()
    }

    /// Sends a voice packet (client format) in the tunnel; false when it was
    /// not sent: not in the channel, or the connection is backed up, when
    /// voice is better dropped than sent late.
    @discardableResult
    func send(voice packet: [UInt8]) -> Bool {
        guard let channel = voiceChannel.withLock({ $0 }), channel.isWritable else {
            counters.withLock { $0.voiceNotSent += 1 }
            return false
        }
        channel.writeAndFlush((type: MumbleMessageType.udpTunnel, payload: packet), promise: nil)
        counters.withLock { $0.voiceSent += 1 }
        return true
    }

    /// The connection and the counts for `status`.
    func status() -> [String: Any] {
        let counts = counters.withLock { $0 }
        return ["server": settings.server, "channel": settings.channel, "user": settings.user,
                "state": counts.state.rawValue, "reason": counts.reason, "transmission": settings.transmission.rawValue,
                "voicePacketsSent": counts.voiceSent, "voicePacketsNotSent": counts.voiceNotSent,
                "voicePacketsReceived": counts.voiceReceived, "reconnects": counts.reconnects, "dropped": counts.dropped]
    }

    /// Counts something from the network that was not used.
    func drop(_ reason: String) { counters.withLock { $0.dropped[reason, default: 0] += 1 } }

    // MARK: The connection, on the event loop

    private func tell(_ state: ConnectionState, _ reason: String) {
        counters.withLock { $0.state = state; $0.reason = reason }
        delegate?.connectionChanged(state, reason: reason)
    }

    private func connect() {
        guard !stopped else { return }
        tell(.connecting, "\(settings.server): connecting as \(settings.user)")
        let tls: NIOSSLContext
        do {
            var configuration = TLSConfiguration.makeClientConfiguration()
            // The chain is checked by fingerprint in `verify`, as Mumble servers sign their own.
            configuration.certificateVerification = .noHostnameVerification
            tls = try NIOSSLContext(configuration: configuration)
        } catch {
            return closed(reason: "\(settings.server): cannot set up TLS: \(error)")
        }
        let host = settings.host
        let isName = host.contains(where: \.isLetter) && !host.contains(":")
        ClientBootstrap(group: loop)
            .connectTimeout(.seconds(5))
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(context: tls, serverHostname: isName ? host : nil) { certificates, promise in
                        promise.succeed(self.verify(certificates))
                    }
                    try channel.pipeline.syncOperations.addHandlers([
                        handler,
                        ByteToMessageHandler(MumbleFrameDecoder()),
                        MessageToByteHandler(MumbleFrameEncoder()),
                        MumbleClientHandler(client: self),
                    ])
                }
            }
            .connect(host: host, port: settings.port)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    if self.stopped { channel.close(promise: nil) } else { self.channel = channel }
                case .failure(let error):
                    self.closed(reason: "\(self.settings.server): \(Self.describe(error))")
                }
            }
    }

    /// The server's certificate, by the fingerprint it was first seen with or the one pinned.
    private func verify(_ certificates: [NIOSSLCertificate]) -> NIOSSLVerificationResult {
        guard let leaf = certificates.first, let der = try? leaf.toDERBytes() else {
            ending = (.rejected, "\(settings.server): the server showed no certificate")
            return .failed
        }
        let fingerprint = ServerTrust.fingerprint(ofDER: der)
        switch trust.check(fingerprint, server: settings.server, pinned: settings.fingerprint) {
        case .success: return .certificateVerified
        case .failure(let refusal):
            ending = (.rejected, refusal.description)
            return .failed
        }
    }

    fileprivate func active(_ channel: Channel) {
        lastHeard = .now()
        var version = MumbleProto_Version()
        version.version = Self.announcedVersion
        version.release = "roomd"
        version.os = "Linux"
        send(.version, version, on: channel)
        var login = MumbleProto_Authenticate()
        login.username = settings.user
        if !settings.password.isEmpty { login.password = settings.password }
        login.opus = true
        send(.authenticate, login, on: channel)
        lastPing = .now()
        pingTask = channel.eventLoop.scheduleRepeatedTask(initialDelay: Self.silenceCheck, delay: Self.silenceCheck) { [weak self] _ in
            self?.watch(channel)
        }
    }

    /// Each second: a server silent too long is lost; every 5 s it is pinged.
    private func watch(_ channel: Channel) {
        let now = NIODeadline.now()
        if now - lastHeard > Self.silenceLimit {
            ending = (.lost, "\(settings.server): the server sent nothing for 30 s")
            channel.close(promise: nil)
            return
        }
        guard now - lastPing >= Self.pingInterval else { return }
        lastPing = now
        var ping = MumbleProto_Ping()
        ping.timestamp = UInt64(Date().timeIntervalSince1970 * 1000)
        send(.ping, ping, on: channel)
    }

    /// Keeps why the connection fails, unless something said why first (a refused certificate).
    fileprivate func failed(_ error: Error) {
        if ending == nil { ending = (.lost, "\(settings.server): \(Self.describe(error))") }
    }

    fileprivate func inactive() {
        pingTask?.cancel()
        pingTask = nil
        channel = nil
        voiceChannel.withLock { $0 = nil }
        let reason = ending?.reason ?? "\(settings.server): the server closed the connection"
        closed(reason: reason, state: ending?.state ?? .lost)
    }

    /// The connection ended or never started: the channel's users leave, and
    /// the client tries again after its backoff unless it was refused or stopped.
    private func closed(reason: String, state: ConnectionState = .lost) {
        for session in inChannel.sorted() { delegate?.userLeft(session: session, reason: "the connection to the server ended") }
        inChannel = []
        users = [:]
        channels = [:]
        ownSession = nil
        targetChannel = nil
        joined = false
        ending = nil
        guard !stopped else { return }
        tell(state, reason)
        guard state != .rejected else { return }
        let delay = min(Self.firstRetry * pow(2, Double(attempt)), Self.lastRetry)
        attempt += 1
        counters.withLock { $0.reconnects += 1 }
        retryTask = loop.scheduleTask(in: .milliseconds(Int64(delay * 1000))) { self.connect() }
    }

    private func refuse(_ state: ConnectionState, _ reason: String) {
        ending = (state, reason)
        channel?.close(promise: nil)
    }

    // MARK: Messages, on the event loop

    fileprivate func received(_ inbound: MumbleInbound) {
        lastHeard = .now()
        switch inbound {
        case .skipped:
            // Reasons are fixed phrases, so a hostile server cannot grow the counts' keys.
            drop("a message too long to keep")
        case .frame(let type, let payload):
            guard let kind = MumbleMessageType(rawValue: type) else { return drop("a message of an unknown type") }
            do {
                try handle(kind, payload)
            } catch {
                drop("a malformed \(kind) message")
            }
        }
    }

    private func handle(_ kind: MumbleMessageType, _ payload: ByteBuffer) throws {
        let bytes = payload.readableBytesView
        switch kind {
        case .udpTunnel:
            // The tunnel carries the voice packet as it is, not as a protobuf.
            switch VoicePacket.parse(Array(bytes), fromServer: true) {
            case .success(let packet):
                guard let session = packet.session, inChannel.contains(session) else { return drop("voice from a user not in the channel") }
                counters.withLock { $0.voiceReceived += 1 }
                delegate?.voice(packet)
            case .failure(let problem):
                drop("voice: \(problem)")
            }
        case .version:
            let version = try MumbleProto_Version(serializedBytes: Array(bytes))
            serverVersion = "\(version.version >> 16).\(version.version >> 8 & 0xFF).\(version.version & 0xFF)"
        case .ping, .cryptSetup, .codecVersion, .authenticate:
            break
        case .reject:
            // A refusal means something only while logging in.
            guard ownSession == nil else { return drop("a refusal after the login") }
            let reject = try MumbleProto_Reject(serializedBytes: Array(bytes))
            let why = reject.reason.isEmpty ? "\(reject.type)" : reject.reason
            let again = reject.type == .usernameInUse || reject.type == .serverFull
            refuse(again ? .lost : .rejected, "\(settings.server) refused the login of \(settings.user): \(why)")
        case .serverSync:
            let sync = try MumbleProto_ServerSync(serializedBytes: Array(bytes))
            ownSession = sync.session
            if sync.hasMaxBandwidth { delegate?.bandwidthLimit(Int(sync.maxBandwidth)) }
            join()
        case .serverConfig:
            let config = try MumbleProto_ServerConfig(serializedBytes: Array(bytes))
            if config.hasMaxBandwidth { delegate?.bandwidthLimit(Int(config.maxBandwidth)) }
        case .channelState:
            let state = try MumbleProto_ChannelState(serializedBytes: Array(bytes))
            guard channels.count < Self.mostKept || channels[state.channelID] != nil else { return drop("a channel beyond the most kept") }
            if state.hasChannelID && state.hasName { channels[state.channelID] = Self.kept(state.name) }
        case .channelRemove:
            let remove = try MumbleProto_ChannelRemove(serializedBytes: Array(bytes))
            channels[remove.channelID] = nil
        case .userState:
            let state = try MumbleProto_UserState(serializedBytes: Array(bytes))
            guard state.hasSession else { return drop("a user state without a session") }
            guard users.count < Self.mostKept || users[state.session] != nil else { return drop("a user beyond the most kept") }
            // A user first told of without a channel is in the root channel, whose id servers leave out.
            var user = users[state.session] ?? User(channel: 0)
            if state.hasName { user.name = Self.kept(state.name) }
            if state.hasChannelID { user.channel = state.channelID }
            users[state.session] = user
            if state.session == ownSession { joinedIfThere() }
            updateMembership(of: state.session)
        case .userRemove:
            let remove = try MumbleProto_UserRemove(serializedBytes: Array(bytes))
            if remove.session == ownSession {
                let why = remove.reason.isEmpty ? "" : ": \(remove.reason)"
                return refuse(.rejected, "\(settings.server) removed \(settings.user) from the server\(why)")
            }
            users[remove.session] = nil
            if inChannel.remove(remove.session) != nil {
                delegate?.userLeft(session: remove.session, reason: remove.reason.isEmpty ? "left the server" : remove.reason)
            }
        case .permissionDenied:
            let denied = try MumbleProto_PermissionDenied(serializedBytes: Array(bytes))
            if !joined {
                let why = denied.reason.isEmpty ? "\(denied.type)" : denied.reason
                refuse(.rejected, "\(settings.server): cannot enter channel \(settings.channel): permission denied (\(why))")
            }
        }
    }

    /// Asks to move into the scene's channel, with the room's plugin context;
    /// a channel the server does not have refuses the connection, naming those it has.
    private func join() {
        guard let own = ownSession, let channel else { return }
        guard let target = channels.first(where: { $0.value == settings.channel })?.key else {
            let names = channels.values.sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            return refuse(.rejected, "\(settings.server) has no channel \"\(settings.channel)\"; its channels are \(names)")
        }
        targetChannel = target
        var state = MumbleProto_UserState()
        state.session = own
        // Already there (the root channel, say), there is no move to ask for, and none will be told.
        if users[own]?.channel != target { state.channelID = target }
        state.pluginContext = Data(settings.context.utf8)
        send(.userState, state, on: channel)
        joinedIfThere()
    }

    /// The room is in its channel: voice flows, and the channel's users become talkers.
    private func joinedIfThere() {
        guard let own = ownSession, let target = targetChannel, users[own]?.channel == target, !joined else { return }
        joined = true
        attempt = 0
        voiceChannel.withLock { $0 = channel }
        tell(.connected, "\(settings.server): in channel \(settings.channel) as \(settings.user) (session \(own), server \(serverVersion))")
        updateMembership()
    }

    /// A name as kept: at most `longestName` bytes, cut between characters.
    static func kept(_ name: String) -> String {
        guard name.utf8.count > longestName else { return name }
        var cut = ""
        for character in name {
            guard cut.utf8.count + character.utf8.count <= longestName else { break }
            cut.append(character)
        }
        return cut
    }

    /// Tells the delegate whether one user entered or left the room's channel.
    private func updateMembership(of session: UInt32) {
        guard joined, let target = targetChannel, session != ownSession, let user = users[session] else { return }
        let isIn = user.channel == target && !user.name.isEmpty
        if isIn && inChannel.insert(session).inserted {
            delegate?.userEntered(session: session, name: user.name)
        } else if !isIn && inChannel.remove(session) != nil {
            delegate?.userLeft(session: session, reason: "left the channel")
        }
    }

    /// Tells the delegate who entered or left the room's channel since the last look.
    private func updateMembership() {
        guard joined, let target = targetChannel else { return }
        let now = Set(users.filter { $0.key != ownSession && $0.value.channel == target && !$0.value.name.isEmpty }.keys)
        for session in inChannel.subtracting(now).sorted() { delegate?.userLeft(session: session, reason: "left the channel") }
        for session in now.subtracting(inChannel).sorted() {
            let user = users[session]!
            delegate?.userEntered(session: session, name: user.name)
        }
        inChannel = now
    }

    private func send(_ type: MumbleMessageType, _ message: some SwiftProtobuf.Message, on channel: Channel) {
        guard let bytes: [UInt8] = try? message.serializedBytes() else { return }
        channel.writeAndFlush((type: type, payload: bytes), promise: nil)
    }

    /// An error as one short line: what the system said, not NIO's types.
    private static func describe(_ error: Error) -> String {
        if let error = error as? NIOConnectionError {
            if let failure = error.connectionErrors.first { return describe(failure.error) }
            if error.dnsAError != nil || error.dnsAAAAError != nil { return "cannot resolve the host name" }
        }
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)).lowercased() }
        if let error = error as? ChannelError, case .connectTimeout = error { return "no answer within 5 s" }
        return "\(error)"
    }
}

/// Hands the connection's frames and its end to the client.
private final class MumbleClientHandler: ChannelInboundHandler, @unchecked Sendable {
    typealias InboundIn = MumbleInbound
    private let client: MumbleClient

    init(client: MumbleClient) { self.client = client }

    func channelActive(context: ChannelHandlerContext) {
        client.active(context.channel)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        client.received(unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        client.inactive()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        // A TLS failure or a reset: the connection closes, and `inactive` tells why.
        client.failed(error)
        context.close(promise: nil)
    }
}
