import AudioCore
import Engine
import Foundation
import NIOCore
import NIOPosix
import Scene
import Synchronization

/// A live room as a Mumble client: every other user in the scene's channel
/// is a talker of the room, of category `voice`, heard where their packets
/// place them (or on an arc in front of the listener), ducking the scene
/// while they talk; the room's uplink goes to them.
///
/// Make the `uplink` first and give it to the session, then the room:
///
/// ```swift
/// let uplink = MumbleUplink(settings: mumble)
/// let session = try RoomSession(room: room, ..., voiceUplink: uplink)
/// let network = MumbleRoom(settings: mumble, session: session, uplink: uplink)
/// network.start()
/// ```
public final class MumbleRoom: VoiceNetwork, MumbleClientDelegate, @unchecked Sendable {
    /// How far in front of the listener talkers without a position stand, in metres.
    static let arcRadius = 2.0
    /// Degrees between neighbours on the arc, which fills from ahead outwards.
    static let arcStep = 30.0
    /// What the decoder keeps queued in each talker's stream, ahead of the
    /// room: 20 ms, two of the room's blocks, topped up 10 ms at a time. Each
    /// millisecond here is a millisecond of mouth-to-ear latency.
    static let queuedSamples = 960
    /// The decoder tops the streams up as each block plays (the uplink
    /// tells it); this long without a block, it looks every `decoderWake`.
    static let blockWait = 0.025
    /// How often the decoder looks at the streams while no block tells it
    /// (a room without a voice bus plays no uplink): often enough that two
    /// blocks rendered back to back never find one empty.
    static let decoderWake = 0.002
    /// How often it looks while nobody else is in the channel: a talker who
    /// joins waits this long at most, its first packets held by its jitter buffer.
    static let decoderWakeAlone = 0.02
    /// How long a talker glides to a new position.
    static let glideMilliseconds = 60.0

    private let settings: MumbleSettings
    private let session: RoomSession
    private let uplink: MumbleUplink
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var client: MumbleClient!
    private let remote = Mutex<[UInt32: RemoteTalker]>([:])
    private let running = Atomic<Bool>(true)
    private let decoderFinished = DispatchSemaphore(value: 0)

    /// A room that joins `settings`' server once started, keeping certificates as `trust` says.
    public init(settings: MumbleSettings, session: RoomSession, uplink: MumbleUplink,
                trust: ServerTrust = .userStore()) {
        self.settings = settings
        self.session = session
        self.uplink = uplink
        client = MumbleClient(settings: settings, trust: trust, group: group, delegate: self)
        uplink.attach(client) { [session] in session.listener.position }
    }

    /// Connects, and keeps connecting after a loss, until `close`; with
    /// `connect` false only the talkers' decoder runs, for a room fed by hand
    /// through the calls the client makes (`userEntered`, `voice`, `userLeft`).
    public func start(connect: Bool = true) {
        session.voiceNetwork = self
        let thread = Thread { [self] in decodeLoop() }
        thread.name = "mumble-talkers"
        thread.start()
        if connect { client.start() }
    }

    /// Leaves the server, takes the talkers out of the room and stops the threads.
    public func close() {
        client.stop()
        uplink.attach(nil, listener: nil)
        if running.exchange(false, ordering: .relaxed) {
            uplink.blockPlayed.signal()
            decoderFinished.wait()
        }
        remote.withLock { $0.removeAll() }
        try? group.syncShutdownGracefully()
        session.voiceNetwork = nil
    }

    // MARK: VoiceNetwork

    /// The connection, the uplink and what was dropped, for `status`.
    public func status() -> [String: Any] {
        var status = client.status()
        status["pushToTalk"] = uplink.talkKeyHeld
        status["bitrate"] = uplink.bitrate
        status["talkers"] = remote.withLock { $0.count }
        return status
    }

    /// Each remote talker, in the order they joined the server.
    public func talkers() -> [[String: Any]] {
        remote.withLock { Array($0.values) }.sorted { $0.session < $1.session }.map { $0.summary() }
    }

    /// Sets a talker's volume in dB (-60 to +24), heard within two blocks.
    public func setTalkerGain(_ id: String, decibels: Double) throws {
        guard decibels.isFinite, (-60...24).contains(decibels) else {
            throw SessionError.refused("talker \(id): gain \(decibels) dB: must be between -60 and 24 dB")
        }
        let talker = try find(id)
        try session.setGain(talker.sourceID, decibels: talker.hear(gain: decibels))
    }

    /// Mutes or unmutes a talker for this room only: the server and the others still hear them.
    public func setTalkerMuted(_ id: String, muted: Bool) throws {
        let talker = try find(id)
        try session.setGain(talker.sourceID, decibels: talker.hear(muted: muted))
    }

    /// Holds or releases the talk key; refused when the room sends on voice activity.
    public func setPushToTalk(_ held: Bool) throws {
        guard settings.transmission == .pushToTalk else {
            throw SessionError.refused("ptt: the room sends on voice activity (transmission: voiceActivity); "
                                       + "set transmission: pushToTalk in the scene's voice.network.mumble to use the talk key")
        }
        uplink.setTalkKey(held)
    }

    private func find(_ id: String) throws -> RemoteTalker {
        let all = remote.withLock { Array($0.values) }
        guard let talker = all.first(where: { $0.name == id || $0.sourceID == id }) else {
            let names = all.map(\.name).sorted().map { "\"\($0)\"" }.joined(separator: ", ")
            throw SessionError.refused("no remote talker \"\(id)\"; " + (names.isEmpty ? "nobody else is in the channel" : "the channel has \(names)"))
        }
        return talker
    }

    // MARK: What the server tells, on the client's event loop
    // Public for a benchmark that feeds the room as the server would, without one.

    /// The connection changed: subscribers hear `connectionChanged`.
    public func connectionChanged(_ state: ConnectionState, reason: String) {
        session.post(.connectionChanged(state: state.rawValue, reason: reason))
    }

    /// A user is in the channel: a talker joins the room, on the arc until its packets place it.
    public func userEntered(session number: UInt32, name: String) {
        let taken = Set(remote.withLock { $0.values.map(\.sourceID) })
        var sourceID = Self.sourceID(for: name, session: number, taken: taken)
        let place = arcPlace(avoiding: remote.withLock { $0.values.filter { !$0.standsWhereItsPacketsSay }.map(\.place) })
        do {
            let stream: SourceStream
            do {
                stream = try session.addStream(id: sourceID, at: place, category: .voice)
            } catch {
                // The name is a source of the scene's: the talker's source takes its session too.
                sourceID = "\(sourceID)-\(number)"
                stream = try session.addStream(id: sourceID, at: place, category: .voice)
            }
            let talker = try RemoteTalker(name: name, session: number, sourceID: sourceID, stream: stream, at: place)
            remote.withLock { $0[number] = talker }
            session.post(.talkerJoined(talker: name, session: Int(number)))
        } catch {
            client.drop("a talker the room could not place")
            session.post(.talkerLeft(talker: name, session: Int(number), reason: "the room cannot play another talker: \(error)"))
        }
    }

    /// A user left the channel or the server: their talker leaves the room.
    public func userLeft(session number: UInt32, reason: String) {
        guard let talker = remote.withLock({ $0.removeValue(forKey: number) }) else { return }
        if talker.isTalking { session.remoteTalker(talker.name, session: Int(number), talking: false) }
        try? session.remove(talker.sourceID)
        session.post(.talkerLeft(talker: talker.name, session: Int(number), reason: reason))
    }

    /// A voice packet of a user in the channel, into that talker's jitter buffer.
    public func voice(_ packet: VoicePacket) {
        guard let session = packet.session, let talker = remote.withLock({ $0[session] }) else {
            return client.drop("voice from a talker the room could not place")
        }
        talker.put(packet)
    }

    /// The server's limit on each user's voice, which the uplink's bit rate keeps under.
    public func bandwidthLimit(_ bitsPerSecond: Int) { uplink.setBandwidthLimit(bitsPerSecond) }

    // MARK: Decoding, on the talkers' thread

    /// Keeps each talker's stream `queuedSamples` ahead of the room, half a
    /// 20 ms frame at a time, as each block plays; the room's clock sets the
    /// pace, not this thread's.
    private func decodeLoop() {
        defer { decoderFinished.signal() }
        var scenes = session.scenesLoaded
        // Taken afresh at every wake, into the same storage: with talkers, the loop wakes with every block.
        var talkers: [RemoteTalker] = []
        var wait = Self.blockWait
        while running.load(ordering: .relaxed) {
            if session.scenesLoaded != scenes {
                scenes = session.scenesLoaded
                rejoinTalkers()
            }
            talkers.removeAll(keepingCapacity: true)
            remote.withLock { talkers.append(contentsOf: $0.values) }
            for talker in talkers {
                while talker.queuedFrames < Self.queuedSamples {
                    if talker.pushLaterHalf() { continue }
                    let step = talker.produceFrame()
                    if let talking = step.talkingChanged {
                        session.remoteTalker(talker.name, session: Int(talker.session), talking: talking)
                    }
                    if let place = step.moveTo {
                        try? session.move(talker.sourceID, to: place, overMilliseconds: Self.glideMilliseconds)
                    }
                }
            }
            let alone = talkers.isEmpty
            talkers.removeAll(keepingCapacity: true)
            if alone {
                Thread.sleep(forTimeInterval: Self.decoderWakeAlone)
            } else {
                wait = uplink.blockPlayed.wait(seconds: wait) ? Self.blockWait : Self.decoderWake
            }
        }
    }

    /// A new scene replaced the room, and the talkers with it: each joins
    /// the new room where it stood, and says again that it talks.
    private func rejoinTalkers() {
        for talker in remote.withLock({ Array($0.values) }).sorted(by: { $0.session < $1.session }) {
            do {
                talker.rejoin(try session.addStream(id: talker.sourceID, at: talker.place, category: .voice, gainDecibels: talker.roomGain))
                if talker.isTalking { session.remoteTalker(talker.name, session: Int(talker.session), talking: true) }
            } catch {
                client.drop("a talker the new scene could not place")
            }
        }
    }

    /// The first place on the arc in front of the listener that no other
    /// talker without a position holds: ahead, then 30° right, 30° left, 60° right...
    private func arcPlace(avoiding taken: [Position]) -> Position {
        let listener = session.listener
        for slot in 0..<12 {
            let side = slot % 2 == 1 ? 1.0 : -1.0
            let degrees = listener.orientation.yaw + side * Double((slot + 1) / 2) * Self.arcStep
            let radians = degrees * .pi / 180
            let place = listener.position + Position(sin(radians), 0, -cos(radians)) * Self.arcRadius
            if !taken.contains(where: { (($0 - place) * ($0 - place)).sum() < 0.01 }) { return place }
        }
        return listener.position + Position(0, 0, -Self.arcRadius)
    }

    /// A room source id for a user name: the name where it is one (a-z, 0-9,
    /// `_`, `-`, at most 64), else made of it, with the session where it is taken.
    static func sourceID(for name: String, session: UInt32, taken: Set<String>) -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789_-")
        var id = String(name.lowercased().map { allowed.contains($0) ? $0 : "-" }.prefix(48))
        if id.isEmpty { id = "talker" }
        return taken.contains(id) || id != name ? "\(id)-\(session)" : id
    }
}

