import AudioCore
import Devices
import Engine
import Foundation
import Scene
import Spatial
import Synchronization
import Voice

/// The running room as the control side sees it: it validates every
/// command, keeps the room's state (what `status` reports and `save`
/// writes), and tells the render side through its ring. A change the
/// playing renderers take in place is sent as it is; any other is made
/// into new renderers here and crossfaded in, so the render thread never
/// opens a device or allocates.
public final class RoomController: @unchecked Sendable {
    /// How far ahead new renderers are made to take over: longer than making them takes.
    static let takeoverLead = 0.25

    public let live: LiveRoom
    /// Where the room's state goes when its output changes channels: the
    /// driver opens a stream of as many.
    public var onLayoutChange: (ChannelLayout) -> Void = { _ in }
    /// What the output reports of itself for `status`: latency, underruns, server.
    public var outputStatus: () -> [String: Any] = { [:] }
    /// Whether the microphone is a capture device and the output a playback device, for `aec: auto`.
    public let devices: (microphoneIsCapture: Bool, outputIsPlayback: Bool)

    private let lock = NSLock()
    private var room: Room
    /// The microphone the device feeds; the engine reads it on the render thread.
    public let deviceMicrophone: PushedAudioSource
    private var deviceRoute: OutputRoute?
    private var forcedRoute: OutputRoute?
    /// The route the room plays on now.
    private var route: OutputRoute
    private var echoMode: EchoCancellationMode
    private var echoOn: Bool
    private var microphoneFile: String?
    private var recordingFile: String?
    private var promptStyle = PromptStyle.normal
    private var speaking: Set<String> = []
    private let hub = EventHub()
    private let uplinkSink: AudioSink?
    private var referenceDelay = ReferenceDelayEstimate()
    private var drainThread: Thread?
    private let running = Atomic<Bool>(true)

    /// - Parameters:
    ///   - devices: what the microphone and output are, for `aec: auto`.
    ///   - deviceRoute: the route the output device is classified as, if known.
    ///   - uplink: where the uplink goes; the daemon records it to a file when asked.
    public init(room: Room, devices: (microphoneIsCapture: Bool, outputIsPlayback: Bool), deviceRoute: OutputRoute?,
                uplink: AudioSink? = nil) throws {
        self.room = room
        uplinkSink = uplink
        self.devices = devices
        self.deviceRoute = deviceRoute
        deviceMicrophone = PushedAudioSource(capacity: Room.sampleRate / 2, maximumQueued: Room.sampleRate / 10)
        route = Self.route(scene: room.scene.route, device: deviceRoute, forced: nil)
        echoMode = room.scene.voice?.echoCancellation ?? .auto
        let engine = try Self.makeEngine(room: room, route: route, devices: devices, microphone: deviceMicrophone, uplink: uplinkSink, frame: 0)
        echoOn = engine.echoCancellation.on
        live = LiveRoom(engine: engine)
        let thread = Thread { [weak self] in self?.drainLoop() }
        thread.name = "room events"
        drainThread = thread
        thread.start()
    }

    deinit { running.store(false, ordering: .relaxed) }

    public func stop() { running.store(false, ordering: .relaxed) }

    public var channelLayout: ChannelLayout { lock.withLock { route.layout } }

    /// Streams the room's events from now on; the stream ends when the subscriber stops listening.
    public func subscribe() -> AsyncStream<EngineEvent> { hub.subscribe() }

    /// Tells subscribers something the control side saw happen.
    public func post(_ kind: EngineEvent.Kind) { hub.publish(EngineEvent(frame: live.frame, kind: kind)) }

    public var hasVoiceSession: Bool { lock.withLock { room.scene.voice != nil } }

    /// How late the microphone hears the output, as the devices report it
    /// now; the echo reference follows it once it settles.
    public func reportEchoDelay(frames: Int) {
        lock.withLock {
            if let delay = referenceDelay.update(reading: frames) { send(.referenceDelay(frames: delay)) }
        }
    }

    // MARK: Verbs

    public func status() -> [String: Any] {
        // Asked before taking the lock: the output's queue takes this lock too.
        let output = outputStatus()
        return lock.withLock {
            let now = Double(live.frame) / Double(Room.sampleRate)
            var sources: [[String: Any]] = []
            for source in room.sources {
                let description = source.description
                var entry: [String: Any] = ["id": description.id, "mode": description.mode.rawValue,
                                            "category": description.category.rawValue,
                                            "gain": description.gainDecibels, "playing": description.playing,
                                            "algorithm": Self.algorithm(of: source, on: route)]
                if case .point = source.rendering {
                    let position = description.placement.position(at: now)
                    entry["position"] = [position.x, position.y, position.z]
                }
                sources.append(entry)
            }
            let listener = room.scene.listenerOrientation
            var result: [String: Any] = [
                "scene": room.scene.name, "file": room.scene.file, "time": (now * 1000).rounded() / 1000,
                "route": route.rawValue, "routeForced": forcedRoute != nil, "deviceRoute": deviceRoute?.rawValue ?? NSNull(),
                "channels": route.layout.channelCount, "algorithm": route.automaticAlgorithm.rawValue,
                "listener": ["position": [room.scene.listenerPosition.x, room.scene.listenerPosition.y, room.scene.listenerPosition.z],
                             "yaw": listener.yaw, "pitch": listener.pitch, "roll": listener.roll],
                "sources": sources, "promptStyle": promptStyle.rawValue,
                "microphone": microphoneFile ?? "default", "sink": recordingFile.map { "record \($0)" } ?? "default",
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
            return result
        }
    }

    /// Replaces the room with the scene at `path`; a scene that fails validation leaves the room as it is.
    public func load(path: String) throws -> String {
        let next = try Room.load(path: path)
        return try lock.withLock {
            let nextRoute = Self.route(scene: next.scene.route, device: deviceRoute, forced: forcedRoute)
            let engine = try Self.makeEngine(room: next, route: nextRoute, devices: devices, microphone: deviceMicrophone, uplink: uplinkSink, frame: 0)
            live.adopt(engine)
            send(.engine(engine))
            referenceDelay.reset()
            let layoutChanged = nextRoute.layout != route.layout
            room = next
            route = nextRoute
            echoMode = next.scene.voice?.echoCancellation ?? .auto
            echoOn = engine.echoCancellation.on
            microphoneFile = nil
            recordingFile = nil
            speaking = []
            if layoutChanged { onLayoutChange(nextRoute.layout) }
            hub.publish(EngineEvent(frame: 0, kind: .sceneLoaded(name: next.scene.name)))
            return next.scene.name
        }
    }

    public func move(_ id: String, to position: Position, overMilliseconds: Double) throws {
        try lock.withLock {
            let index = try sourceIndex(id)
            guard case .point = room.sources[index].rendering else {
                throw ControlError.refused("source \"\(id)\" is \(Self.kind(of: room.sources[index])): it has no position to move")
            }
            let frame = live.frame
            let from = room.sources[index].description.placement.position(at: Double(frame) / Double(Room.sampleRate))
            let glide = Glide(from: from, to: position, startFrame: frame,
                              endFrame: frame + Int((overMilliseconds / 1000 * Double(Room.sampleRate)).rounded()))
            room.sources[index].description.placement = glide.placement
            try change(source: index) { .glide($0, glide) }
        }
    }

    public func setGain(_ id: String, decibels: Double) throws {
        try lock.withLock {
            let index = try sourceIndex(id)
            room.sources[index].description.gainDecibels = decibels
            try change(source: index) { .gain($0, linear: Level.linear(fromDecibels: decibels)) }
        }
    }

    public func play(_ id: String) throws {
        try lock.withLock {
            let index = try sourceIndex(id)
            room.sources[index].description.playing = true
            // From its beginning, now: later renderers start it where it is.
            room.sources[index].description.start = Double(live.frame) / Double(Room.sampleRate)
            try change(source: index) { .play($0) }
        }
    }

    public func stop(_ id: String) throws {
        try lock.withLock {
            let index = try sourceIndex(id)
            room.sources[index].description.playing = false
            try change(source: index) { .stop($0) }
        }
    }

    /// Moves and turns the listener; nil keeps what is.
    public func setListener(position: Position?, yaw: Double?, pitch: Double?, roll: Double?) throws {
        try lock.withLock {
            var scene = room.scene
            if let position { scene.listenerPosition = position }
            if let yaw { scene.listenerOrientation.yaw = yaw }
            if let pitch { scene.listenerOrientation.pitch = pitch }
            if let roll { scene.listenerOrientation.roll = roll }
            room.scene = scene
            if RoomEngine.turnsInPlace(room: room) {
                send(.listener(scene.listenerPosition, scene.listenerOrientation))
            } else {
                try takeOver(routeChange: nil)
            }
        }
    }

    public func setDucking(level: DuckingLevel?, advanced: Bool?) throws {
        try lock.withLock {
            guard var voice = room.scene.voice else { throw ControlError.refused("the room has no voice session, so nothing ducks") }
            if let level { voice.duckingLevel = level }
            if let advanced { voice.advancedDucking = advanced }
            room.scene.voice = voice
            send(.ducking(depthDecibels: voice.duckingDecibels, advanced: voice.advancedDucking))
        }
    }

    public func setMuted(_ muted: Bool) throws {
        try lock.withLock {
            guard room.scene.voice != nil else { throw ControlError.refused("the room has no voice session, so there is no microphone to mute") }
            room.scene.voice?.muted = muted
            send(.mute(muted))
        }
    }

    public func setEchoCancellation(_ mode: EchoCancellationMode) throws {
        try lock.withLock {
            guard room.scene.voice != nil else { throw ControlError.refused("the room has no voice session, so there is no uplink") }
            room.scene.voice?.echoCancellation = mode
            echoMode = mode
            let resolved = mode.resolve(microphoneIsCapture: devices.microphoneIsCapture && microphoneFile == nil,
                                        outputIsPlayback: devices.outputIsPlayback && recordingFile == nil)
            echoOn = resolved.on
            send(.echoCancellation(resolved.on, reason: resolved.reason))
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
        let source = try path.map { FileAudioSource(samples: try AudioFileReader.read(path: $0).monoSamples(at: Room.sampleRate), loop: true) }
        lock.withLock {
            microphoneFile = path
            send(.microphone(source))
        }
    }

    /// Plays the room into a WAV file instead of the device, or with nil on the device again.
    public func setSink(recordTo path: String?) throws {
        try lock.withLock {
            let sink = try path.map {
                FileRecorderSink(writer: try AudioFileWriter(path: $0, format: .wavFloat, layout: route.layout, sampleRate: Room.sampleRate))
            }
            recordingFile = path
            send(.sink(sink))
        }
    }

    public func triggerPrompt(_ id: String) throws {
        try lock.withLock {
            guard let index = room.prompts.firstIndex(where: { $0.id == id }) else {
                throw ControlError.unknown(UnknownPromptError(id: id, known: room.prompts.map(\.id)).description)
            }
            send(.prompt(index: index))
        }
    }

    /// Writes the room as it is now as a scene file.
    public func save(to path: String) throws {
        let text = lock.withLock {
            var scene = room.scene
            scene.sources = room.sources.map(\.description)
            return SceneWriter.yaml(scene, savedAt: path)
        }
        do {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
        } catch {
            throw ControlError.refused("cannot write \(path): \(error.localizedDescription)")
        }
    }

    // MARK: Inside

    private func sourceIndex(_ id: String) throws -> Int {
        guard let index = room.sources.firstIndex(where: { $0.description.id == id }) else {
            let known = room.sources.map(\.description.id)
            throw ControlError.unknown("no source \"\(id)\" in this room; it has \(known.isEmpty ? "none" : known.joined(separator: ", "))")
        }
        return index
    }

    /// Sends a change to one source in place, or makes new renderers for it.
    private func change(source index: Int, _ command: (RoomEngine.SourceAddress) -> LiveRoom.Command) throws {
        if let address = RoomEngine.inPlaceAddress(of: room.sources[index].description.id, in: room) {
            send(command(address))
        } else {
            try takeOver(routeChange: nil)
        }
    }

    /// Plays on the route the scene, the device and the app together choose.
    private func follow() throws {
        let next = Self.route(scene: room.scene.route, device: deviceRoute, forced: forcedRoute)
        guard next != route else { return }
        let previous = route
        route = next
        if next.layout == previous.layout {
            try takeOver(routeChange: (previous, next))
        } else {
            // Other channels need another engine and another stream: the room
            // picks up where it is, and its uplink learns the new echo path.
            let frame = live.frame
            let engine = try Self.makeEngine(room: room, route: next, devices: devices, microphone: deviceMicrophone, uplink: uplinkSink, frame: frame)
            live.adopt(engine)
            send(.engine(engine))
            referenceDelay.reset()
            onLayoutChange(next.layout)
            hub.publish(EngineEvent(frame: frame, kind: .routeChanged(from: previous, to: next, algorithm: next.automaticAlgorithm)))
        }
    }

    /// New renderers for the room as it is, crossfaded in a little ahead of the render thread.
    private func takeOver(routeChange: (from: OutputRoute, to: OutputRoute)?, lead: Double = takeoverLead) throws {
        let block = RoomEngine.blockFrames
        let ahead = Int(lead * Double(Room.sampleRate))
        let frame = (live.frame + ahead + block - 1) / block * block
        let renderers = try RoomEngine.makeRenderers(for: room, route: route, startingAt: frame)
        send(.crossfade(renderers, atFrame: frame, routeChange: routeChange))
    }

    private func send(_ command: LiveRoom.Command) {
        // The ring holds 256: more waiting than that means the render side stopped; wait for it briefly.
        var command = Optional(command)
        for _ in 0..<100 {
            guard let pending = command.take() else { return }
            if live.commands.send(pending) { return }
            command = nil
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    /// Drains the render side's rings: events to subscribers, finished objects freed here.
    private func drainLoop() {
        while running.load(ordering: .relaxed) {
            while let event = live.events.receive() {
                lock.withLock { track(event) }
                hub.publish(event)
            }
            while let item = live.returned.receive() {
                if case .late = item {
                    // The render side passed their frame before they arrived: make them again, further ahead.
                    lock.withLock { try? takeOver(routeChange: nil, lead: 2 * Self.takeoverLead) }
                }
            }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }

    private func track(_ event: EngineEvent) {
        switch event.kind {
        case .promptStyleChanged(let style): promptStyle = style
        case .speechStarted(let talker): speaking.insert(talker)
        case .speechEnded(let talker): speaking.remove(talker)
        case .echoCancellation(let on, _): echoOn = on
        default: break
        }
    }

    static func route(scene: OutputRoute, device: OutputRoute?, forced: OutputRoute?) -> OutputRoute {
        (forced ?? (scene == .auto ? device : scene) ?? .auto).resolved()
    }

    static func makeEngine(room: Room, route: OutputRoute, devices: (microphoneIsCapture: Bool, outputIsPlayback: Bool),
                           microphone: PushedAudioSource, uplink: AudioSink?, frame: Int) throws -> RoomEngine {
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
                                    microphoneIsCapture: capture, outputIsPlayback: devices.outputIsPlayback, startingAt: frame)
        engine.uplinkSink = uplink
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

/// A command the room cannot take; the room stays as it was.
public enum ControlError: Error, CustomStringConvertible {
    /// Names something the room does not have.
    case unknown(String)
    /// Asks for something the room cannot do.
    case refused(String)

    public var description: String {
        switch self {
        case .unknown(let text), .refused(let text): text
        }
    }
}

/// Hands the room's events to every subscriber. A subscriber that falls
/// behind loses its oldest events, never the daemon's memory.
final class EventHub: @unchecked Sendable {
    private let lock = NSLock()
    private var subscribers: [UUID: AsyncStream<EngineEvent>.Continuation] = [:]

    func subscribe() -> AsyncStream<EngineEvent> {
        let (stream, continuation) = AsyncStream<EngineEvent>.makeStream(bufferingPolicy: .bufferingNewest(1_024))
        let id = UUID()
        continuation.onTermination = { [weak self] _ in self?.lock.withLock { _ = self?.subscribers.removeValue(forKey: id) } }
        lock.withLock { subscribers[id] = continuation }
        return stream
    }

    func publish(_ event: EngineEvent) {
        for continuation in lock.withLock({ Array(subscribers.values) }) { continuation.yield(event) }
    }
}
