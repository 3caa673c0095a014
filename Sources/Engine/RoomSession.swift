import AudioCore
import Devices
import Foundation
import Scene
import Spatial
import Synchronization
import Voice

/// A room playing live, as its control side sees it: it validates every
/// change once, keeps what `status` reports and `save` writes, and tells
/// the render side (`live`).
///
/// Sources and the listener change through the room's parameter slots
/// (`SessionControls`), which every renderer reads each block: a move, a
/// gain, a play or a stop on any kind of source, and a listener turn in any
/// room, are heard within two blocks and rebuild nothing. Discrete changes
/// go through `live`'s command ring; a ring that stays full (the render
/// side stalled) makes the call throw `SessionError.notRendering` instead of
/// answering for a change that will not happen. Only a route change makes
/// new renderers, here, off the render thread, crossfaded in; a burst of
/// them collapses into one takeover in flight.
///
/// Every method is safe from any thread but the render thread.
public final class RoomSession: @unchecked Sendable {
    /// How far ahead new renderers are made to take over: longer than making them takes.
    static let takeoverLead = 0.25
    /// How long a discrete change waits for room in a full command ring before it fails.
    static let commandWait = 0.5

    /// The render side: a device's callback or a manual render reads the room through it.
    public let live: LiveRoom
    /// Where the room's state goes when its output changes channels: the
    /// driver opens a stream of as many.
    public var onLayoutChange: (ChannelLayout) -> Void = { _ in }
    /// What the output reports of itself for `status`: latency, underruns, server.
    public var outputStatus: () -> [String: Any] = { [:] }
    /// Whether the microphone is a capture device and the output a playback device, for `aec: auto`.
    public let devices: (microphoneIsCapture: Bool, outputIsPlayback: Bool)

    private let lock = NSLock()
    private var room: Room { didSet { sourcePlaces = nil } }
    /// The microphone the device feeds; the engine reads it on the render thread.
    public let deviceMicrophone: PushedAudioSource
    private var deviceRoute: OutputRoute?
    private var forcedRoute: OutputRoute?
    /// The route the room plays on now.
    private var route: OutputRoute
    private var echoMode: EchoCancellationMode
    private var echoOn: Bool
    private var microphoneFile: String?
    /// The capture device the output records from, as it last said; and
    /// whether it is the room's own output monitor, which the output silences.
    private var captureDevice: String?
    private var captureIsRoomOutput = false
    /// The recording `microphoneFile` plays, counted against the budget.
    private var microphoneSamples: [Float]?
    /// How much decoded audio the room may hold; what joins or loads over it is refused.
    public let budget: MemoryBudget
    private var recordingFile: String?
    /// Where each source stood before a `set` made it a bed or played it as it is, which have no position.
    private var positionsWhileUnplaced: [String: Position] = [:]
    /// Recordings the room no longer plays into, for `pump` to close off the lock: closing waits
    /// for the recorder's last write, whose failure it reports under the lock.
    private var endedRecordings: [RecordingSink] = []
    /// The files the program writes beside the session (its recordings, its
    /// log): no `sink record` or `save` may name one.
    private let programOutputs: [String]
    private var promptStyle = PromptStyle.normal
    private var speaking: Set<String> = []
    private let hub = EventLog()
    /// The scenes loaded since the session started: the epoch the room's events count in.
    private var epoch = 0
    private let uplinkSink: AudioSink?
    private let voiceUplink: VoiceUplink?
    /// How many remote talkers talk now, which every engine of the session reads.
    private let remoteTalking = RemoteTalking()
    private var network: VoiceNetwork?
    private var referenceDelay = ReferenceDelayEstimate()
    /// The parameter plane of the engine playing now.
    private var controls: SessionControls
    /// The route the render side's renderers play, or will once the takeover in flight arrives.
    private var renderedRoute: OutputRoute
    /// New renderers are wanted for `route`: a route change not yet sent.
    private var takeoverWanted = false
    /// The frame the takeover in flight is due at, and how far ahead the next is made.
    private var takeoverFrame: Int?
    private var takeoverLead = RoomSession.takeoverLead
    /// Renderers made for route changes, for `status`: a burst of changes makes few.
    private var renderersMade = 0
    private var renderersLate = 0
    private let running = Atomic<Bool>(false)
    /// Signalled by the pump thread as it ends.
    private let pumpEnded = DispatchSemaphore(value: 0)
    /// Sources that joined while the room plays, in the order they joined.
    private var joinedSources: [JoinedEntry] = [] { didSet { sourcePlaces = nil } }
    /// Where each source's entry is, by id: made again on the first look
    /// after the room or the joined sources change, so a game's tick that
    /// moves thousands finds each in constant time.
    private var sourcePlaces: [String: SourcePlace]?
    /// Scene sources removed: silenced at once, stopped once the fade has played.
    private var removals: [(slot: Int, frame: Int)] = []
    /// What `sink record` writes into, until the next `sink`, and why it stopped early if it did.
    private var recordingSink: RecordingSink?
    private var recordingStopped: String?
    /// A `set` changed how a source renders: new renderers are wanted for the same route.
    private var roomChanged = false

    /// Where a source's entry is: an index into `room.sources` or into `joinedSources`.
    private enum SourcePlace {
        case room(Int)
        case joined(Int)
    }

    private struct JoinedEntry {
        var description: SourceDescription
        let feed: SourceFeed
        /// The channels of its file, which with its entry decide how it renders.
        let fileChannels: Int
        var isStream: Bool { description.audioPath.isEmpty }
        var rendering: JoinedRendering { JoinedRendering(description, channels: fileChannels) }
        /// A point, which has a position to move.
        var hasPosition: Bool { description.shape(channels: fileChannels) == .point }
    }

    /// - Parameters:
    ///   - room: the room it plays first; `load` replaces it.
    ///   - devices: what the microphone and output are, for `aec: auto`.
    ///   - deviceRoute: the route the output device is classified as, if known.
    ///   - uplink: where the uplink goes; the daemon records it to a file when asked.
    ///   - budget: the decoded audio `add`, `load` and `setMicrophone` may bring the room to.
    ///   - voiceUplink: the voice network the uplink is sent to, if the room joins one.
    ///   - programOutputs: the files the program writes beside the session, which no `sink record` or `save` may name.
    public init(room: Room, devices: (microphoneIsCapture: Bool, outputIsPlayback: Bool), deviceRoute: OutputRoute?,
                uplink: AudioSink? = nil, budget: MemoryBudget = .standard, voiceUplink: VoiceUplink? = nil,
                programOutputs: [String] = []) throws {
        self.room = room
        self.programOutputs = programOutputs
        self.budget = budget
        uplinkSink = uplink
        self.voiceUplink = voiceUplink
        self.devices = devices
        self.deviceRoute = deviceRoute
        deviceMicrophone = PushedAudioSource(capacity: Room.sampleRate / 2, maximumQueued: Room.sampleRate / 10)
        route = Self.route(scene: room.requestedRoute, device: deviceRoute, forced: nil)
        renderedRoute = route
        echoMode = room.scene.voice?.echoCancellation ?? .auto
        controls = SessionControls(room: room)
        let engine = try Self.makeEngine(room: room, route: route, controls: controls, devices: devices, microphone: deviceMicrophone,
                                         uplink: uplinkSink, voice: (voiceUplink, remoteTalking), frame: 0)
        echoOn = engine.echoCancellation.on
        live = LiveRoom(engine: engine)
    }

    deinit { assert(!running.load(ordering: .relaxed), "a session that pumps itself is closed before it goes") }

    /// Pumps the render side's rings from a thread of its own every 10 ms,
    /// for a room rendered by a device or clock. A room rendered by hand
    /// (tests, offline) calls `pump` itself instead.
    public func startPumping() {
        guard !running.exchange(true, ordering: .relaxed) else { return }
        let thread = Thread { [weak self, ended = pumpEnded] in
            defer { ended.signal() }
            while let self, self.running.load(ordering: .relaxed) {
                self.pump()
                Thread.sleep(forTimeInterval: 0.01)
            }
        }
        thread.name = "room events"
        thread.start()
    }

    /// Renders the room's next `frames` frames into `output`, interleaved
    /// in `channelLayout`'s channels, on the calling thread, and pumps the
    /// rings: manual rendering, offline, into buffers and files. Not while
    /// a device renders the room.
    public func render(into output: UnsafeMutableBufferPointer<Float>, frames: Int) {
        let channels = channelLayout.channelCount
        precondition(output.count >= frames * channels, "output holds \(frames) frames of \(channels) channels")
        live.render(into: UnsafeMutableBufferPointer(rebasing: output[0..<(frames * channels)]), channels: channels)
        pump()
    }

    /// Stops the thread `startPumping` started and waits for it: it frees
    /// OpenAL objects, which must not happen while the process exits and
    /// OpenAL's own cleanup tears its locks down.
    public func close() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        pumpEnded.wait()
    }

    /// The channels the room renders now; an output follows `onLayoutChange`.
    public var channelLayout: ChannelLayout { lock.withLock { route.layout } }

    /// Streams the room's events: with `since`, first the kept ones after
    /// that `seq` (0 for all kept), then each new one; with `only`, just
    /// those kinds (`EngineEvent.names`). With `stream`, the name of the
    /// stream `since` counts in: another session's replays all that is kept.
    /// Throws for an unknown kind, or a `since` beyond the last event
    /// without a `stream`.
    public func subscribe(since: Int? = nil, stream: String? = nil, only: Set<String>? = nil) throws -> EventSubscription {
        try hub.subscribe(since: since, stream: stream, only: only)
    }

    /// How many of the last events the session keeps for `subscribe(since:)`.
    public static var keptEvents: Int { EventLog.keptEvents }

    /// Tells subscribers something the control side saw happen.
    public func post(_ kind: EngineEvent.Kind) { hub.publish(stamped(kind)) }

    /// `kind` at the frame the render side has reached, in the room it plays.
    private func stamped(_ kind: EngineEvent.Kind) -> EngineEvent {
        let now = live.stamp
        return EngineEvent(frame: now.frame, kind: kind, epoch: now.epoch)
    }

    /// The voice network the room joined, which `status`, `talkers`,
    /// `talker` and `ptt` reach; nil when it joined none.
    public var voiceNetwork: VoiceNetwork? {
        get { lock.withLock { network } }
        set { lock.withLock { network = newValue } }
    }

    /// A remote talker started or stopped talking: it ducks the scene as a
    /// participant does, and subscribers hear `speechStarted` or `speechEnded`.
    public func remoteTalker(_ id: String, session: Int, talking: Bool) {
        lock.withLock {
            if talking {
                guard speaking.insert(id).inserted else { return }
                remoteTalking.started()
            } else {
                guard speaking.remove(id) != nil else { return }
                remoteTalking.ended()
            }
        }
        post(talking ? .speechStarted(talker: id, session: session) : .speechEnded(talker: id, session: session))
    }

    /// The scenes loaded since the session started: what joined the room
    /// before a change of it has to join again.
    public var scenesLoaded: Int { lock.withLock { epoch } }

    /// Where the listener stands and looks now.
    public var listener: ListenerState { lock.withLock { controls.listenerState } }

    /// Whether the room has a voice section: a microphone, an uplink, ducking.
    public var hasVoiceSession: Bool { lock.withLock { room.scene.voice != nil } }

    /// How late the microphone hears the output, as the devices report it
    /// now; the echo reference follows it once it settles.
    public func reportEchoDelay(frames: Int) {
        lock.withLock {
            if let delay = referenceDelay.update(reading: frames) { live.setReferenceDelay(frames: delay) }
        }
    }

    // MARK: Verbs

    /// The room as the control side holds it: route, listener, every
    /// source (its gain, position and whether it plays), ducking, mute and
    /// the output's figures, as `scenectl status --json` prints it.
    public func status() -> [String: Any] {
        // Asked before taking the lock: the output's queue takes this lock too.
        let output = outputStatus()
        return lock.withLock {
            let frame = live.frame, now = Double(frame) / Double(Room.sampleRate)
            var sources: [[String: Any]] = []
            /// What `status` tells of one source; `point`: it has a position.
            /// `position`: where it is, for a source that has a position.
            func entry(_ description: SourceDescription, algorithm: String,
                       position: ((SourceState) -> Position)?) -> [String: Any] {
                let state = controls.state(of: description.id) ?? SourceState(description)
                var entry: [String: Any] = ["id": description.id, "mode": description.mode.rawValue,
                                            "category": description.category.rawValue,
                                            "gain": state.gainDecibels, "playing": state.playing, "algorithm": algorithm]
                if let position = position?(state) { entry["position"] = [position.x, position.y, position.z] }
                return entry
            }
            for source in room.sources {
                let position = { (state: SourceState) in Self.position(of: source.description, state, at: frame) }
                sources.append(entry(source.description, algorithm: Self.algorithm(of: source, on: route),
                                     position: source.isPoint ? position : nil))
            }
            for joined in joinedSources {
                let bus = joined.rendering.bus
                var joinedEntry = entry(joined.description, algorithm: bus.algorithm(on: route)?.rawValue ?? "\(bus)",
                                        position: joined.hasPosition ? { joined.feed.position(at: frame, $0) } : nil)
                joinedEntry["joined"] = true
                joinedEntry["stream"] = joined.isStream
                sources.append(joinedEntry)
            }
            let listenerState = controls.listenerState
            let listener = listenerState.orientation
            var result: [String: Any] = [
                "scene": room.scene.name, "file": room.scene.file, "time": (now * 1000).rounded() / 1000,
                "route": route.rawValue, "routeForced": forcedRoute != nil, "deviceRoute": deviceRoute?.rawValue ?? NSNull(),
                "channels": route.layout.channelCount, "algorithm": route.automaticAlgorithm.rawValue,
                "listener": ["position": [listenerState.position.x, listenerState.position.y, listenerState.position.z],
                             "yaw": listener.yaw, "pitch": listener.pitch, "roll": listener.roll],
                "renderersMade": renderersMade, "renderersLate": renderersLate, "epoch": epoch, "lastEventSeq": hub.lastPublished,
                "sources": sources, "promptStyle": promptStyle.rawValue,
                "microphone": microphoneFile ?? "default", "sink": recordingFile.map { "record \($0)" } ?? "default",
                "recordingStopped": recordingStopped ?? NSNull(),
                "decodedAudio": ["bytes": heldBytes, "budget": budget.bytes],
                "captureDevice": captureDevice ?? NSNull(), "captureSilenced": captureIsRoomOutput,
            ]
            if let voice = room.scene.voice {
                result["ducking"] = ["level": voice.duckingLevel.rawValue, "depth": voice.duckingDecibels, "advanced": voice.advancedDucking]
                result["muted"] = voice.muted
                result["aec"] = ["mode": echoMode.rawValue, "on": echoOn]
                result["talking"] = speaking.sorted()
            } else {
                result["voiceSession"] = false
            }
            for (key, value) in output { result[key] = value }
            if let network { result["network"] = network.status() }
            return result
        }
    }

    /// Replaces the room with the scene at `path`; a scene that fails validation leaves the room as it is.
    public func load(path: String) throws -> String {
        let next = try Room.load(path: path, budget: budget)
        return try lock.withLock {
            try refuseReading(next.inputFiles)
            let nextRoute = Self.route(scene: next.requestedRoute, device: deviceRoute, forced: forcedRoute)
            let nextControls = SessionControls(room: next)
            let engine = try Self.makeEngine(room: next, route: nextRoute, controls: nextControls, devices: currentDevices,
                                             microphone: deviceMicrophone, uplink: uplinkSink, voice: (voiceUplink, remoteTalking), frame: 0)
            engine.epoch = (epoch + 1) & LiveRoom.epochMask
            // Posted by the new engine, so it follows every event of the old room in the stream.
            engine.postFirst(.sceneLoaded(name: next.scene.name))
            // Where the old room ends, for what the control side tells of it.
            let ended = live.stamp
            live.adopt(engine)
            try send(.engine(engine))
            epoch = engine.epoch
            live.setMuted(engine.muted)
            referenceDelay.reset()
            let layoutChanged = nextRoute.layout != route.layout
            room = next
            controls = nextControls
            joinedSources = []
            positionsWhileUnplaced = [:]
            removals = []
            roomChanged = false
            route = nextRoute
            renderedRoute = nextRoute
            takeoverWanted = false
            takeoverFrame = nil
            echoMode = next.scene.voice?.echoCancellation ?? .auto
            echoOn = engine.echoCancellation.on
            microphoneFile = nil
            // The new room plays into the device: a recording of the old one ends here, its file whole.
            if let sink = recordingSink {
                endedRecordings.append(sink)
                hub.publish(EngineEvent(frame: ended.frame, kind: .recordingStopped(path: sink.path, reason: "another scene was loaded"),
                                        epoch: ended.epoch))
            }
            recordingFile = nil
            recordingSink = nil
            recordingStopped = nil
            speaking = []
            // The network joins its talkers to the new room afresh, and says again who talks.
            remoteTalking.reset()
            // The new room's engine tells its own style, if it has a voice session.
            promptStyle = .normal
            if layoutChanged { onLayoutChange(nextRoute.layout) }
            return next.scene.name
        }
    }

    /// The longest glide a move takes, in milliseconds: ten minutes.
    public static let longestGlideMilliseconds = 600_000.0

    /// Glides the source from where it is now to `position` over `overMilliseconds`.
    public func move(_ id: String, to position: Position, overMilliseconds: Double) throws {
        do {
            try move([id: position], overMilliseconds: overMilliseconds)
        } catch let refusal as MovesRefusal {
            throw refusal.problem
        }
    }

    /// Glides every source in `positions` from where it is now to its
    /// position over `overMilliseconds`, all from the same frame: a game's
    /// tick. All or nothing: when any id is unknown or names a source
    /// without a position, throws `MovesRefusal` and moves none; a glide
    /// time outside 0...`longestGlideMilliseconds` is refused first.
    public func move(_ positions: [String: Position], overMilliseconds: Double) throws {
        guard (0...Self.longestGlideMilliseconds).contains(overMilliseconds) else {
            throw SessionError.refused("a glide takes 0 to \(Int(Self.longestGlideMilliseconds)) ms, not \(overMilliseconds)")
        }
        try lock.withLock {
            var planned: [PlannedMove] = []
            planned.reserveCapacity(positions.count)
            var refused: [(id: String, problem: SessionError)] = []
            for (id, target) in positions {
                switch motion(of: id) {
                case .success(let motion): planned.append(PlannedMove(id: id, to: target, placement: motion.placement, origin: motion.origin))
                case .failure(let problem): refused.append((id, problem))
                }
            }
            // The first in id order, so the same request is always refused in the same words.
            if let first = refused.min(by: { $0.id < $1.id }) {
                throw MovesRefusal(id: first.id, problem: first.problem, othersRefused: refused.count - 1)
            }
            let frame = live.frame
            let endFrame = frame + Room.frame(atSeconds: overMilliseconds / 1000)
            for move in planned {
                controls.update(move.id) { state in
                    let from = state.glide?.position(at: frame)
                        ?? move.placement.position(at: Double(frame - move.origin) / Double(Room.sampleRate))
                    state.glide = Glide(from: from, to: move.to, startFrame: frame, endFrame: endFrame)
                }
            }
        }
    }

    /// Why a request to move many sources moved none: the first source, in
    /// id order, that cannot move, and how many others in it cannot either.
    public struct MovesRefusal: Error, CustomStringConvertible {
        /// The first source, in id order, that cannot move.
        public let id: String
        /// Why it cannot: unknown, or a source without a position.
        public let problem: SessionError
        /// How many more sources in the request cannot move.
        public let othersRefused: Int

        /// The refusal in the words the control socket answers with.
        public var description: String { "\(problem)" + Self.nothingMoved(othersRefused: othersRefused) }

        /// How a refusal to move many ends: how many more were refused, and that none moved.
        public static func nothingMoved(othersRefused: Int) -> String {
            (othersRefused > 0 ? " (and \(othersRefused) more refused)" : "") + "; nothing moved"
        }
    }

    /// A source to glide, checked, with the placement it follows until its first glide.
    private struct PlannedMove {
        let id: String
        let to: Position
        let placement: Placement
        /// The timeline frame `placement`'s time 0 falls on: when a joined source joined.
        let origin: Int
    }

    /// The placement source `id` follows until a live move takes over, and
    /// the frame its time 0 falls on; why it has none to move. Under the lock.
    private func motion(of id: String) -> Result<(placement: Placement, origin: Int), SessionError> {
        switch place(of: id) {
        case .room(let index)?:
            guard room.sources[index].isPoint else {
                return .failure(.refused("source \"\(id)\" is \(Self.kind(of: room.sources[index])): it has no position to move"))
            }
            return .success((room.sources[index].description.placement, 0))
        case .joined(let index)?:
            let joined = joinedSources[index]
            guard joined.hasPosition else {
                let kind = joined.feed.speakers == nil ? "played as it is (passthrough)" : "a bed"
                return .failure(.refused("source \"\(id)\" is \(kind): it has no position to move"))
            }
            return .success((joined.feed.placement, joined.feed.origin))
        case nil:
            return .failure(unknownSource(id))
        }
    }

    /// Sets a source's gain; it ramps over the block in which it is heard.
    public func setGain(_ id: String, decibels: Double) throws {
        try lock.withLock {
            _ = try source(id)
            controls.update(id) { $0.gain = Level.linear(fromDecibels: decibels) }
        }
    }

    /// Plays the source from its beginning, now.
    public func play(_ id: String) throws {
        try lock.withLock {
            _ = try source(id)
            let frame = live.frame
            controls.update(id) { state in
                state.playing = true
                state.startFrame = frame
            }
        }
    }

    /// Silences the source until it is played again.
    public func stop(_ id: String) throws {
        try lock.withLock {
            _ = try source(id)
            controls.update(id) { $0.playing = false }
        }
    }

    /// Moves and turns the listener; nil keeps what is.
    public func setListener(position: Position?, yaw: Double?, pitch: Double?, roll: Double?) throws {
        lock.withLock {
            controls.listener.update { listener in
                if let position { listener.position = position }
                if let yaw { listener.orientation.yaw = yaw }
                if let pitch { listener.orientation.pitch = pitch }
                if let roll { listener.orientation.roll = roll }
            }
        }
    }

    /// Sets how deep the scene ducks under voices, and whether it ducks
    /// only as far as the voices need (advanced); nil keeps what is.
    public func setDucking(level: DuckingLevel?, advanced: Bool?) throws {
        try lock.withLock {
            guard var voice = room.scene.voice else { throw SessionError.refused("the room has no voice session, so nothing ducks") }
            if let level { voice.duckingLevel = level }
            if let advanced { voice.advancedDucking = advanced }
            try send(.ducking(depthDecibels: voice.duckingDecibels, advanced: voice.advancedDucking))
            room.scene.voice = voice
        }
    }

    /// Mutes the microphone's uplink; detection goes on, to tell a muted talker.
    /// It takes effect at the render side's next block, whatever else waits.
    public func setMuted(_ muted: Bool) throws {
        try lock.withLock {
            guard room.scene.voice != nil else { throw SessionError.refused("the room has no voice session, so there is no microphone to mute") }
            live.setMuted(muted)
            room.scene.voice?.muted = muted
        }
    }

    /// Switches echo cancellation; `auto` decides from what the devices are.
    public func setEchoCancellation(_ mode: EchoCancellationMode) throws {
        try lock.withLock {
            guard room.scene.voice != nil else { throw SessionError.refused("the room has no voice session, so there is no uplink") }
            try resolveEchoCancellation(mode)
        }
    }

    /// Decides echo cancellation for `mode` from what the devices are now. Under the lock.
    private func resolveEchoCancellation(_ mode: EchoCancellationMode) throws {
        var resolved = mode.resolve(microphoneIsCapture: currentDevices.microphoneIsCapture && microphoneFile == nil,
                                    outputIsPlayback: devices.outputIsPlayback && recordingFile == nil)
        if mode == .auto && captureIsRoomOutput && microphoneFile == nil {
            resolved.reason = "auto: the capture is the room's own output monitor, which is silenced"
        }
        try send(.echoCancellation(resolved.on, reason: resolved.reason))
        room.scene.voice?.echoCancellation = mode
        echoMode = mode
        echoOn = resolved.on
    }

    /// What the devices are for `aec: auto` now: the room's own output
    /// monitor is no microphone.
    private var currentDevices: (microphoneIsCapture: Bool, outputIsPlayback: Bool) {
        (devices.microphoneIsCapture && !captureIsRoomOutput, devices.outputIsPlayback)
    }

    /// The output's word: the capture now records from `device`, which may
    /// be the room's own output monitor (the server's choice when the
    /// microphone goes away), silenced by the output. Says so in
    /// `microphoneChanged`, and decides `aec: auto` again.
    public func captureChanged(to device: String, isRoomOutputMonitor: Bool) {
        lock.withLock {
            guard device != captureDevice || isRoomOutputMonitor != captureIsRoomOutput else { return }
            captureDevice = device
            captureIsRoomOutput = isRoomOutputMonitor
            if room.scene.voice != nil { try? resolveEchoCancellation(echoMode) }
            hub.publish(stamped(.microphoneChanged(device: device, roomOutputMonitor: isRoomOutputMonitor)))
        }
    }

    /// Forces a route, or with nil follows the device again.
    public func forceRoute(_ forced: OutputRoute?) throws {
        try lock.withLock {
            forcedRoute = forced
            try follow()
        }
    }

    /// The route monitor's word: the default output is now `device`.
    public func deviceChanged(to device: OutputRoute) throws {
        try lock.withLock {
            deviceRoute = device
            try follow()
        }
    }

    /// Takes the microphone from a recording (looping), or with nil from the device again.
    public func setMicrophone(file path: String?) throws {
        let samples = try path.map { path in
            // The recording it replaces goes once this one plays.
            let byteLimit = try lock.withLock {
                try refuseReading([path])
                return try allowance(path: path, at: FieldLocation(file: "mic", line: nil, field: "file"),
                              replacing: microphoneSamples.map(MemoryBudget.bytes) ?? 0)
            }
            // As a scene's voice.mic: so the room saves as it plays, and loads again.
            let channels = try AudioFileReader.header(path: path).channels
            guard channels == 1 else {
                throw SessionError.refused("mic: file: \"\(path)\": a microphone recording has one channel; this file has \(channels)")
            }
            return try AudioFileReader.read(path: path, byteLimit: byteLimit, engineRate: Room.sampleRate).monoSamples(at: Room.sampleRate)
        }
        try lock.withLock {
            try send(.microphone(samples.map { FileAudioSource(samples: $0, loop: true) }))
            microphoneFile = path
            microphoneSamples = samples
        }
    }

    /// The files the room reads now: the scene's, those of the sources that
    /// joined since, and the microphone's recording. Under the lock.
    private var filesRead: [String] {
        room.inputFiles + joinedSources.map(\.description.audioPath).filter { !$0.isEmpty } + [microphoneFile].compactMap { $0 }
    }

    /// Refuses to read a file the room writes as it plays: it would play back its own recording,
    /// half written. Under the lock.
    private func refuseReading(_ paths: [String]) throws {
        let written = filesWritten
        for path in paths {
            if let output = written.first(where: { OutputFile.sameFile(path, $0) }) {
                throw SessionError.refused("cannot read \(path): the room writes \(output == path ? "it" : output) as it plays; choose another file")
            }
        }
    }

    /// The files written while the room plays: the program's and the recording `sink record` makes, unless it
    /// stopped. Under the lock.
    private var filesWritten: [String] { programOutputs + [recordingStopped == nil ? recordingFile : nil].compactMap { $0 } }

    /// Bytes of decoded audio the room holds, each buffer once however
    /// many sources play it. Under the lock.
    private var heldBytes: Int {
        var buffers = (room.sources + room.rejoinedTalkers).map(\.audio.samples) + room.prompts.flatMap { [$0.normal, $0.short] }
        buffers += [room.microphone, microphoneSamples].compactMap { $0 }
        for joined in joinedSources {
            if case .samples(let channels) = joined.feed.audio { buffers += channels }
        }
        return MemoryBudget.bytes(of: buffers)
    }

    /// What the file at `path` may decode to beside what the room holds
    /// (less `replacing` bytes it lets go for it); refused with the sizes at
    /// `field` when its header says it will not fit. Under the lock.
    private func allowance(path: String, at field: FieldLocation, replacing: Int = 0) throws -> Int {
        guard let demand = MemoryBudget.Demand(path: path, field: field) else { return budget.bytes }
        return try budget.admit([demand], held: heldBytes - replacing)[path]!
    }

    /// What `description`'s file may decode to beside what the room holds. Under the lock.
    private func allowance(for description: SourceDescription) throws -> Int {
        try allowance(path: description.audioPath, at: description.audioField)
    }

    /// `description`'s audio decoded from its file within the budget. Under the lock.
    private func decodeFeedWithinBudget(_ description: SourceDescription) throws -> FeedAudio {
        try Self.decodeFeed(description, byteLimit: allowance(for: description))
    }

    /// Plays the room into a WAV file instead of the device, or with nil on the device again.
    ///
    /// A new file, or an existing one with `force`; never a symlink, a
    /// device, a file the room reads (its scene, its sources' audio, the
    /// microphone's recording) or one it writes.
    public func setSink(recordTo path: String?, force: Bool = false) throws {
        try lock.withLock {
            let sink = try path.map {
                let file: OutputFile
                do {
                    file = try OutputFile($0, policy: .record(force: force), inputs: filesRead, outputs: filesWritten)
                } catch let error as OutputFileError {
                    throw SessionError.refused("cannot record to \(error)")
                }
                defer { try? file.commit() }
                let writer = try AudioFileWriter(output: file, format: .wavFloat, layout: route.layout, sampleRate: Room.sampleRate)
                let path = $0
                return RecordingSink(path: path, writer: writer) { [weak self] reason in self?.recordingFailed(path, reason) }
            }
            try send(.sink(sink))
            recordingFile = path
            recordingSink = sink
            recordingStopped = nil
        }
    }

    /// Closes the file `sink record` writes, its header final. Call only
    /// once the room no longer renders: when the program stops.
    public func finishRecording() {
        let sinks = lock.withLock {
            defer { recordingSink = nil; endedRecordings = [] }
            return endedRecordings + [recordingSink].compactMap { $0 }
        }
        for sink in sinks { sink.close() }
    }

    /// "1 channel", "6 channels".
    private static func channels(_ count: Int) -> String { count == 1 ? "1 channel" : "\(count) channels" }

    /// The recording at `path` stopped early: the room says so, and plays on.
    private func recordingFailed(_ path: String, _ reason: String) {
        lock.withLock { if recordingFile == path { recordingStopped = reason } }
        post(.recordingStopped(path: path, reason: reason))
    }

    /// Plays prompt `id` in the variant the prompt style allows, now or once it
    /// allows one; `promptDropped` says when it will not play.
    public func triggerPrompt(_ id: String) throws {
        try lock.withLock {
            guard let index = room.prompts.firstIndex(where: { $0.id == id }) else {
                throw SessionError.unknown(UnknownPromptError(id: id, known: room.prompts.map(\.id)).description)
            }
            try send(.prompt(index: index))
        }
    }

    // MARK: Sources that join, change and leave

    /// Adds a source given as one entry in the scene file's syntax (a YAML
    /// or JSON flow mapping), validated by the scene file's rules; relative
    /// paths resolve against `folder`. Returns its id. It is heard from the
    /// next block the room renders.
    @discardableResult
    public func add(entry: String, relativeTo folder: String) throws -> String {
        let description = try SceneLoader.parseSource(yaml: entry, origin: "add", baseDirectory: folder, inspectAudio: Room.inspectAudio)
        try add(description)
        return description.id
    }

    /// Adds the source `description` describes, from its file. An
    /// identical file the room already holds is shared, not decoded again.
    public func add(_ description: SourceDescription) throws {
        let channels = try Room.inspectAudio(description.audioPath).channels
        try Self.checkJoinable(description, channels: channels, origin: "add")
        // Decoded outside the lock, so the room's other requests and events go on meanwhile.
        let (shared, byteLimit) = try lock.withLock {
            try refuseReading([description.audioPath])
            return try held(description, fileChannels: channels).map { ($0, 0) } ?? (nil, allowance(for: description))
        }
        let audio = try shared ?? Self.decodeFeed(description, byteLimit: byteLimit)
        try lock.withLock {
            let frame = live.frame
            try join(description, feed: audio.feed(placement: description.placement, origin: frame), fileChannels: channels, at: frame)
        }
    }

    /// Adds a source that plays what the app pushes into the stream it
    /// returns: mono at 48 kHz, a remote talker by default.
    public func addStream(id: String, at position: Position, category: SourceCategory = .voice,
                          gainDecibels: Double = 0) throws -> SourceStream {
        let description = try SceneLoader.parseStream(id: id, position: position, gainDecibels: gainDecibels, category: category)
        try Self.checkJoinable(description, channels: 1, origin: "stream")
        let stream = SourceStream(id: id)
        try lock.withLock { try join(description, feed: stream.feed, fileChannels: 1, at: live.frame) }
        return stream
    }

    /// Takes a source out of the room: it fades out over a block and is gone.
    public func remove(_ id: String) throws {
        try lock.withLock {
            positionsWhileUnplaced[id] = nil
            if let index = joinedSources.firstIndex(where: { $0.description.id == id }) {
                controls.leave(id)
                joinedSources.remove(at: index)
            } else {
                guard room.sources.contains(where: { $0.description.id == id }) else { throw unknownSource(id) }
                detach(id)
            }
            room.rejoinedTalkers.removeAll { $0.description.id == id }
            if var voice = room.scene.voice { voice.participants.removeAll { $0.id == id }; room.scene.voice = voice }
        }
    }

    /// Takes one of the room's own sources out of its books: its voice fades
    /// out over a block, silent in the renderers until the next rebuilds
    /// without it, and its id is free for a source that joins.
    private func detach(_ id: String) {
        if let slot = controls.detach(id) { removals.append((slot, live.frame + 2 * RoomEngine.blockFrames)) }
        room.sources.removeAll { $0.description.id == id }
        room.scene.sources.removeAll { $0.id == id }
    }

    /// Sets one property a scene file can give a source (`reverbBlend`,
    /// `obstruction`, `occlusion`, `rate`, `loop`, `algorithm`, `mode`,
    /// `inHead`, `gain`, `playing`), `value` being YAML text validated as
    /// the scene file's entry would be. It is heard from the next block.
    ///
    /// Paths, rate and loop change in place on sources OpenAL renders as
    /// voices of their own, and on every source that joined. A source that
    /// renders another way (another algorithm, mode or in-head rule) moves
    /// to the part every renderer keeps for joined sources: a voice on each
    /// OpenAL bus, a place in the sound field, the output as it is. One of
    /// the room's own sources first takes a place of its own for that.
    /// Only a source whose mix has no place free still gets new renderers,
    /// crossfaded in as for a route change.
    public func set(_ id: String, key: String, value: String) throws {
        try lock.withLock {
            let source = try self.source(id)
            let before = description(of: id)!
            let frame = live.frame
            let now = joinedSources.first { $0.description.id == id }.map { joined in
                controls.state(of: id).map { joined.feed.position(at: frame, $0) } ?? .zero
            } ?? controls.state(of: id).map { Self.position(of: before, $0, at: frame) }
            // A source made a bed or played as it is has no position; placed again, it stands where it stood.
            let edited = try SceneLoader.editSource(before, key: key, value: value, origin: "set",
                                                    position: before.isPlaced ? now : positionsWhileUnplaced[id] ?? now)
            if edited.isPlaced {
                positionsWhileUnplaced[id] = nil
            } else if before.isPlaced, let now {
                positionsWhileUnplaced[id] = now
            }
            if let index = joinedSources.firstIndex(where: { $0.description.id == id }) {
                try change(joined: index, to: edited)
            }
            let inPlace = source?.rendersInPlace ?? true
            let renderingChanged = edited.mode != before.mode || edited.algorithm != before.algorithm || edited.inHead != before.inHead
                || (!inPlace && (edited.paths != before.paths || edited.rate != before.rate || edited.loop != before.loop))
            var rebuild = false
            if renderingChanged, let source {
                let rejoined = try Self.joinProblem(edited, channels: source.fileChannels, origin: "set") == nil
                    && rejoin(source, as: edited)
                if !rejoined, let index = room.sources.firstIndex(where: { $0.description.id == id }) {
                    // A point's audio is the file downmixed; a bed or passthrough needs the file's own channels.
                    let sameAudio = switch (edited.rendering(channels: source.fileChannels), source.rendering) {
                    case (.point, .point), (.bed, .bed), (.passthrough, .passthrough): true
                    default: false
                    }
                    room.sources[index] = sameAudio
                        ? RoomSource(edited, audio: source.audio, fileChannels: source.fileChannels, fileSampleRate: source.fileSampleRate)
                        : try Self.decode(edited, byteLimit: allowance(for: edited))
                    rebuild = true
                }
            }
            controls.update(id) { state in
                state.paths = edited.paths
                state.rate = edited.rate
                state.loop = edited.loop
                // Placed again: where it stood, not where a source with no position is taken to be.
                if !before.isPlaced, edited.isPlaced, case .fixed(let position) = edited.placement {
                    state.glide = Glide(from: position, to: position, startFrame: 0, endFrame: 0)
                }
                // The entry's gain and playing are where the source started; what is set now is the state's.
                if key == "gain" { state.gain = Level.linear(fromDecibels: edited.gainDecibels) }
                if key == "playing" {
                    state.playing = edited.playing
                    if edited.playing { state.startFrame = live.frame }
                }
            }
            if !renderingChanged, let index = room.sources.firstIndex(where: { $0.description.id == id }) {
                room.sources[index].description = edited
            }
            if let index = room.scene.sources.firstIndex(where: { $0.id == id }) { room.scene.sources[index] = edited }
            if let index = joinedSources.firstIndex(where: { $0.description.id == id }) { joinedSources[index].description = edited }
            if rebuild {
                roomChanged = true
                takeoverWanted = true
                try takeOverIfDue()
            }
        }
    }

    /// Renders joined source `index` as `edited` says from the next block:
    /// it moves to another part of the renderers, or, when it needs its
    /// file another way (downmixed to a point, as it is, as a bed's
    /// speakers), takes another place with that audio and goes on where it was.
    private func change(joined index: Int, to edited: SourceDescription) throws {
        let entry = joinedSources[index]
        try Self.checkJoinable(edited, channels: entry.fileChannels, origin: "set", isStream: entry.isStream)
        let rendering = JoinedRendering(edited, channels: entry.fileChannels)
        guard rendering != entry.rendering else { return }
        if entry.isStream || Self.feedForm(edited, fileChannels: entry.fileChannels) == Self.feedForm(entry.description, fileChannels: entry.fileChannels) {
            controls.move(edited.id, to: rendering)
            return
        }
        guard controls.hasPlace(for: edited.category), let state = controls.state(of: edited.id) else {
            throw SessionError.refused("source \"\(edited.id)\" needs another place to render so, and its mix has none free")
        }
        let audio = try held(edited, fileChannels: entry.fileChannels) ?? decodeFeedWithinBudget(edited)
        controls.leave(edited.id)
        joinedSources.remove(at: index)
        try join(edited, feed: audio.feed(placement: entry.feed.placement, origin: entry.feed.origin),
                 fileChannels: entry.fileChannels, state: state)
    }

    /// What a source that joins a playing room may be: anything a scene
    /// file may hold, the same file's channels permitting, except that a
    /// stream plays at the rate it is pushed.
    ///
    /// - Parameter channels: the channels of the source's audio, which decide
    ///   whether a multichannel file plays as a point.
    static func checkJoinable(_ description: SourceDescription, channels: Int, origin: String, isStream: Bool = false) throws {
        if let problem = joinProblem(description, channels: channels, origin: origin, isStream: isStream) { throw problem }
    }

    static func joinProblem(_ description: SourceDescription, channels: Int, origin: String,
                            isStream: Bool = false) -> SceneValidationError? {
        func refuse(_ field: String, _ value: String, _ reason: String) -> SceneValidationError {
            SceneValidationError(issues: [SceneIssue(file: origin, line: nil, field: "\(description.id).\(field)", value: value,
                                                     reason: reason)])
        }
        if let problem = description.channelProblem(channels) { return refuse("mode", description.mode.rawValue, problem) }
        if isStream && description.rate != 1 {
            return refuse("rate", "\(description.rate)", "a stream plays at the rate it is pushed")
        }
        return nil
    }

    /// How a joining source's feed holds its file: the channels it keeps
    /// (one for a point, the file's own as it is: the same for a mono
    /// file), or a bed's speaker feeds.
    enum FeedForm: Equatable {
        case channels(Int)
        case speakers
    }

    static func feedForm(_ description: SourceDescription, fileChannels: Int) -> FeedForm {
        switch description.shape(channels: fileChannels) {
        case .point: .channels(1)
        case .passthrough: .channels(fileChannels)
        case .bed: .speakers
        }
    }

    /// A joining source's audio, a channel apiece at the engine's rate:
    /// mono for a point, the file's own channels as it is, a bed's speaker
    /// feeds with their directions in the world.
    struct FeedAudio {
        var channels: [[Float]]
        var speakers: [SIMD3<Double>]?

        init(channels: [[Float]], speakers: [SIMD3<Double>]? = nil) {
            self.channels = channels
            self.speakers = speakers
        }

        /// What `source` plays, as its rendering has it.
        init(_ source: RoomSource) {
            if case .bed = source.rendering {
                let (feeds, directions) = source.speakerFeeds()
                let rotation = source.description.orientation.rotation
                channels = feeds
                speakers = directions.map { rotation * $0 }
            } else {
                channels = (0..<source.audio.channelCount).map(source.audio.channel)
            }
        }

        func feed(placement: Placement, origin: Int) -> SourceFeed {
            SourceFeed(.samples(channels), placement: placement, origin: origin, speakers: speakers)
        }
    }

    /// A joining source's audio decoded from its file, refused if it comes to more than `byteLimit`.
    static func decodeFeed(_ description: SourceDescription, byteLimit: Int) throws -> FeedAudio {
        try FeedAudio(decode(description, byteLimit: byteLimit))
    }

    /// `description`'s audio decoded from its file; what the file refuses is an issue at its field.
    static func decode(_ description: SourceDescription, byteLimit: Int) throws -> RoomSource {
        do {
            let file = try AudioFileReader.read(path: description.audioPath, byteLimit: byteLimit, engineRate: Room.sampleRate)
            return try RoomSource(description, decoded: file)
        } catch let issue as SceneIssue {
            throw SceneValidationError(issues: [issue])
        } catch {
            throw SceneValidationError(issues: [description.audioField.issue(value: description.audioPath, Room.refusal(error))])
        }
    }

    /// The audio `description` plays that the room already holds, shared
    /// rather than decoded again; a bed's speaker feeds are its own. Under the lock.
    private func held(_ description: SourceDescription, fileChannels: Int) -> FeedAudio? {
        let path = description.audioPath
        guard case .channels(let channels) = Self.feedForm(description, fileChannels: fileChannels) else { return nil }
        // A point's audio is always mono, any other the file's channels.
        if let source = room.sources.first(where: { $0.description.audioPath == path && $0.audio.channelCount == channels }) {
            return FeedAudio(channels: (0..<channels).map(source.audio.channel))
        }
        for joined in joinedSources where joined.description.audioPath == path && joined.feed.channelCount == channels
            && joined.feed.speakers == nil {
            if case .samples(let samples) = joined.feed.audio { return FeedAudio(channels: samples) }
        }
        return nil
    }

    /// Gives a source that joins at timeline frame `frame` a place: its
    /// entry's start and keyframes count from then.
    private func join(_ description: SourceDescription, feed: SourceFeed, fileChannels: Int, at frame: Int) throws {
        let id = description.id
        guard self.description(of: id) == nil else {
            throw SceneValidationError(issues: [SceneIssue(file: "add", line: nil, field: "\(id).id", value: id, reason: "id already used by a source of the room")])
        }
        var state = SourceState(description)
        state.startFrame += frame
        if case .fixed(let position) = description.placement {
            state.glide = Glide(from: position, to: position, startFrame: frame, endFrame: frame)
        }
        try join(description, feed: feed, fileChannels: fileChannels, state: state)
    }

    private func join(_ description: SourceDescription, feed: SourceFeed, fileChannels: Int, state: SourceState) throws {
        guard controls.join(description.id, feed: feed, category: description.category, state: state,
                            rendering: JoinedRendering(description, channels: fileChannels)) != nil else {
            let held = controls.leavingCount
            let mix = description.category == .scene ? "scene" : "talkers"
            throw SessionError.refused("the room's \(mix) mix takes \(SessionControls.joinCapacityPerMix) sources added while it plays "
                                       + "and has no place free"
                                       + (held > 0 ? " (\(held) removed ones wait for the render side to let them go)" : ""))
        }
        joinedSources.append(JoinedEntry(description: description, feed: feed, fileChannels: fileChannels))
    }

    /// Moves one of the room's own sources into a place for joined sources,
    /// rendered as `edited` says from the next block: the source goes on
    /// where it was on the timeline, and its old voice fades out. False,
    /// changing nothing, when no place is free.
    private func rejoin(_ source: RoomSource, as edited: SourceDescription) throws -> Bool {
        let id = edited.id
        guard controls.hasPlace(for: edited.category), var state = controls.state(of: id) else { return false }
        let audio = try held(edited, fileChannels: source.fileChannels) ?? decodeFeedWithinBudget(edited)
        if state.glide == nil, case .fixed(let position) = edited.placement {
            state.glide = Glide(from: position, to: position, startFrame: 0, endFrame: 0)
        }
        if room.scene.voice?.participants.contains(where: { $0.id == id }) ?? false { room.rejoinedTalkers.append(source) }
        detach(id)
        try join(edited, feed: audio.feed(placement: edited.placement, origin: 0), fileChannels: source.fileChannels, state: state)
        return true
    }

    /// Stops the removed scene sources whose fade has played.
    private func finishRemovals() {
        let frame = live.frame
        removals.removeAll { removal in
            guard removal.frame <= frame else { return false }
            controls.stop(slot: removal.slot)
            return true
        }
    }

    /// The room as it is now, as a scene: a source that glided stands where
    /// it is, the rest of a glide under way becomes keyframes from time 0,
    /// gains, playing, the listener, a forced route and a microphone
    /// recording are as last set.
    public func scene() -> SceneDescription {
        lock.withLock {
            let frame = live.frame
            var scene = room.scene
            let listener = controls.listenerState
            scene.listenerPosition = listener.position
            scene.listenerOrientation = listener.orientation
            if let forcedRoute { scene.route = RouteName(forcedRoute) }
            if let microphoneFile { scene.voice?.microphone = .file(path: microphoneFile) }
            /// A source's entry as it plays now; `origin`: the frame its keyframes and start count from.
            func current(_ entry: SourceDescription, origin: Int = 0) -> SourceDescription {
                var description = entry
                guard let state = controls.state(of: description.id) else { return description }
                description.gainDecibels = state.gainDecibels
                description.playing = state.playing
                if state.startFrame != SourceState(entry).startFrame + origin {
                    // Played again since: it plays from the saved room's start.
                    description.start = 0
                } else {
                    // On the room's timeline, as its keyframes are: one that joined later counts from then.
                    description.start = entry.start + Double(origin) / Double(Room.sampleRate)
                }
                if let glide = state.glide {
                    description.placement = glide.remainder(from: frame)
                } else if case .moving(var path) = entry.placement {
                    // The room's keyframes count from its start: those of a source that joined later, from then.
                    let delay = Double(origin) / Double(Room.sampleRate)
                    for index in path.keyframes.indices { path.keyframes[index].time += delay }
                    description.placement = .moving(path)
                }
                return description
            }
            // A stream has no file to name: it is the app's to add again.
            scene.sources = room.sources.map { current($0.description) }
                + joinedSources.filter { !$0.isStream }.map { current($0.description, origin: $0.feed.origin) }
            return scene
        }
    }

    /// Writes the room as it is now as a scene file.
    ///
    /// An existing file is replaced only with `force`; a symlink, a device,
    /// a folder, a file the room reads or one it writes never is. The file is
    /// written whole under a temporary name and renamed into place.
    public func save(to path: String, force: Bool = false) throws {
        let text = SceneWriter.yaml(scene(), savedAt: path)
        do {
            let (read, written) = lock.withLock { (filesRead, filesWritten) }
            let file = try OutputFile(path, policy: .document(force: force), inputs: read, outputs: written)
            try file.write(text)
            try file.commit()
        } catch let error as OutputFileError {
            throw SessionError.refused("cannot save to \(error)")
        }
    }

    /// Drains the render side's rings once: events to subscribers, finished
    /// objects freed here, and sends new renderers for a route change when
    /// the takeover in flight has arrived.
    public func pump() {
        while let event = live.events.receive() {
            lock.withLock { if event.epoch == epoch { track(event) } }
            hub.publish(event)
        }
        for sink in lock.withLock({ () -> [RecordingSink] in defer { endedRecordings = [] }; return endedRecordings }) { sink.close() }
        while let item = live.returned.receive() {
            // A recording the room no longer plays into finishes its file.
            if case .sink(let old as RecordingSink) = item { old.close() }
            if case .late(_, let change) = item {
                // The render side passed their frame before they arrived:
                // what they carried did not happen. Make them again, further ahead.
                lock.withLock {
                    if let change { renderedRoute = change.from }
                    roomChanged = true
                    renderersLate += 1
                    takeoverFrame = nil
                    takeoverWanted = true
                    takeoverLead = min(2 * takeoverLead, 1)
                }
            }
        }
        lock.withLock {
            try? takeOverIfDue()
            finishRemovals()
        }
        controls.collect()
    }

    // MARK: Inside

    /// The room's own source `id`, or nil for one that joined; throws for an id the room does not have.
    private func source(_ id: String) throws -> RoomSource? {
        switch place(of: id) {
        case .room(let index)?: return room.sources[index]
        case .joined?: return nil
        case nil: throw unknownSource(id)
        }
    }

    /// The most ids an unknown id's error lists; a bigger room is counted instead.
    private static let listedIDs = 16

    private func unknownSource(_ id: String) -> SessionError {
        let count = room.sources.count + joinedSources.count
        guard count <= Self.listedIDs else {
            return SessionError.unknown("no source \"\(id)\" in this room of \(count) sources (status lists them)")
        }
        let known = room.sources.map(\.description.id) + joinedSources.map(\.description.id)
        return SessionError.unknown("no source \"\(id)\" in this room; it has \(known.isEmpty ? "none" : known.joined(separator: ", "))")
    }

    /// A source's entry as the session holds it now.
    private func description(of id: String) -> SourceDescription? {
        switch place(of: id) {
        case .room(let index)?: room.sources[index].description
        case .joined(let index)?: joinedSources[index].description
        case nil: nil
        }
    }

    /// Where source `id`'s entry is; the room's own first, as ids are unique. Under the lock.
    private func place(of id: String) -> SourcePlace? {
        if let places = sourcePlaces { return places[id] }
        var places = [String: SourcePlace](minimumCapacity: room.sources.count + joinedSources.count)
        for (index, joined) in joinedSources.enumerated() { places[joined.description.id] = .joined(index) }
        for (index, source) in room.sources.enumerated().reversed() { places[source.description.id] = .room(index) }
        sourcePlaces = places
        return places[id]
    }

    /// Where a source with `state` is at `frame`.
    static func position(of description: SourceDescription, _ state: SourceState, at frame: Int) -> Position {
        SourceMotion(placement: description.placement, glide: state.glide).position(at: frame)
    }

    /// Plays on the route the scene, the device and the app together choose.
    private func follow() throws {
        let next = Self.route(scene: room.requestedRoute, device: deviceRoute, forced: forcedRoute)
        guard next != route else { return }
        let previous = route
        route = next
        if next.layout == renderedRoute.layout {
            takeoverWanted = true
            try takeOverIfDue()
        } else {
            // Other channels need another engine and another stream: the room
            // picks up where it is, and its uplink learns the new echo path.
            let frame = live.frame
            let engine = try Self.makeEngine(room: room, route: next, controls: controls, devices: currentDevices, microphone: deviceMicrophone,
                                             uplink: uplinkSink, voice: (voiceUplink, remoteTalking), frame: frame)
            engine.epoch = epoch
            live.adopt(engine)
            try send(.engine(engine))
            renderedRoute = next
            takeoverWanted = false
            takeoverFrame = nil
            referenceDelay.reset()
            onLayoutChange(next.layout)
            hub.publish(EngineEvent(frame: frame, kind: .routeChanged(from: previous, to: next, algorithm: next.automaticAlgorithm), epoch: epoch))
            // A WAV keeps the channels it began with: the recording ends here, its file whole, and the room plays on the device.
            if let sink = recordingSink {
                endedRecordings.append(sink)
                let reason = "the route now has \(Self.channels(next.layout.channelCount)) and the recording \(Self.channels(previous.layout.channelCount))"
                hub.publish(EngineEvent(frame: frame, kind: .recordingStopped(path: sink.path, reason: reason), epoch: epoch))
                recordingFile = nil
                recordingSink = nil
                recordingStopped = reason
            }
        }
    }

    /// New renderers for the route wanted, crossfaded in a little ahead of
    /// the render thread, once the takeover in flight has arrived: however
    /// many route changes come meanwhile, one set is made for the last.
    private func takeOverIfDue() throws {
        guard takeoverWanted else { return }
        if let due = takeoverFrame, live.frame < due { return }
        takeoverFrame = nil
        guard route != renderedRoute || roomChanged else {
            takeoverWanted = false
            return
        }
        roomChanged = false
        let block = RoomEngine.blockFrames
        let frame = (live.frame + Int(takeoverLead * Double(Room.sampleRate)) + block - 1) / block * block
        let renderers = try RoomEngine.makeRenderers(for: room, route: route, controls: controls, startingAt: frame)
        renderersMade += 1
        try send(.crossfade(renderers, atFrame: frame, routeChange: route != renderedRoute ? (renderedRoute, route) : nil))
        renderedRoute = route
        takeoverFrame = frame
        takeoverWanted = false
    }

    /// Hands `command` to the render side, waiting a bounded time for room
    /// in its ring; a ring still full means the room is not rendering, and
    /// the change is refused rather than answered for and lost.
    private func send(_ command: LiveRoom.Command) throws {
        var command = Optional(command)
        let deadline = Date(timeIntervalSinceNow: Self.commandWait)
        while let pending = command.take() {
            guard let refused = live.commands.send(pending) else { return }
            guard Date() < deadline else {
                throw SessionError.notRendering("the room is not rendering: its command queue has been full for \(Self.commandWait) s; nothing changed")
            }
            command = refused
            Thread.sleep(forTimeInterval: 0.005)
        }
    }

    private func track(_ event: EngineEvent) {
        switch event.kind {
        case .promptStyleChanged(let style): promptStyle = style
        case .speechStarted(let talker, _): speaking.insert(talker)
        case .speechEnded(let talker, _): speaking.remove(talker)
        case .echoCancellation(let on, _): echoOn = on
        default: break
        }
    }

    static func route(scene: OutputRoute, device: OutputRoute?, forced: OutputRoute?) -> OutputRoute {
        (forced ?? (scene == .auto ? device : scene) ?? .auto).resolved()
    }

    static func makeEngine(room: Room, route: OutputRoute, controls: SessionControls,
                           devices: (microphoneIsCapture: Bool, outputIsPlayback: Bool),
                           microphone: PushedAudioSource, uplink: AudioSink?,
                           voice: (uplink: VoiceUplink?, talking: RemoteTalking), frame: Int) throws -> RoomEngine {
        var source: AudioSource?
        var capture = false
        switch room.scene.voice?.microphone {
        case .device?:
            source = microphone
            capture = devices.microphoneIsCapture
        case .file?: source = room.microphone.map { FileAudioSource(samples: $0, loop: true) }
        case .none?, nil: source = nil
        }
        let engine = try RoomEngine(room: room, route: route, microphone: source, sink: NullAudioSink(),
                                    microphoneIsCapture: capture, outputIsPlayback: devices.outputIsPlayback,
                                    controls: controls, startingAt: frame)
        engine.uplinkSink = uplink
        engine.voiceUplink = voice.uplink
        engine.remoteTalking = voice.talking
        return engine
    }

    static func kind(of source: RoomSource) -> String {
        switch source.rendering {
        case .bed: "a bed"
        case .passthrough: "played as it is (passthrough)"
        case .point: "a point"
        }
    }

    static func algorithm(of source: RoomSource, on route: OutputRoute) -> String {
        switch source.rendering {
        case .passthrough: "passthrough"
        case .point(let requested?), .bed(let requested?): requested.rawValue
        case .point(nil), .bed(nil): route.automaticAlgorithm.rawValue
        }
    }
}

/// A change the room cannot take; the room stays as it was.
public enum SessionError: Error, CustomStringConvertible {
    /// Names something the room does not have.
    case unknown(String)
    /// Asks for something the room cannot do.
    case refused(String)
    /// The render side has stopped taking changes.
    case notRendering(String)

    /// The message for the client, as the control socket sends it.
    public var description: String {
        switch self {
        case .unknown(let text), .refused(let text), .notRendering(let text): text
        }
    }
}
