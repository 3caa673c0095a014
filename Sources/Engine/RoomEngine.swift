import AudioCore
import Devices
import Scene
import Spatial
import Voice

/// A room playing, one 10 ms block at a time: the scene and its talkers
/// rendered, the scene ducked under voice, prompts, the microphone's uplink
/// and the events that come of it.
///
/// The scene file's own sources and its talkers (participants, voice and
/// prompt sources) render in two mixes, so ducking lowers the scene and
/// never a voice. Sources that join while the room plays, remote talkers
/// among them, play in the scene's renderer, sharing its buses and reverb:
/// its ducking is OpenAL's listener gain, against which the talkers' gains
/// rise. The master block goes to the sink and is the echo canceller's
/// reference, unless a sink that mixes in audio of its own reports what it
/// played instead.
public final class RoomEngine {
    /// The engine's block: 10 ms at 48 kHz.
    public static let blockFrames = RoomRenderer.blockFrames
    /// How long after it is asked for a prompt may still start: one that the
    /// style keeps waiting past it (someone talks) is dropped.
    public static let promptTimeoutSeconds = 5.0

    /// The room it plays.
    public let room: Room
    /// What the room is told while it plays: every renderer of both mixes reads it.
    public let controls: SessionControls
    /// Whether the uplink cancels echo, and why.
    @exclusivity(unchecked) public private(set) var echoCancellation: (on: Bool, reason: String)
    /// Frames rendered since the room's start: the engine's timeline.
    @exclusivity(unchecked) public private(set) var framesRendered = 0
    /// Which room of a live session this engine plays (see `EngineEvent.epoch`);
    /// set by the session before the engine is sent to the render side.
    @exclusivity(unchecked) public internal(set) var epoch = 0
    /// The output's channels.
    public var channelCount: Int { scene.channelCount }
    /// The scene mix's renderer playing now.
    public var renderer: RoomRenderer { scene.renderer }
    /// Each source's rendering, in the room's source order.
    public var choices: [RenderChoice] {
        // By id, the first mix's first: a room may have thousands of sources.
        let pairs = zip(scene.room.sources, scene.renderer.choices).map { ($0.description.id, $1) }
            + zip(talkers.room.sources, talkers.renderer.choices).map { ($0.description.id, $1) }
        let byID = Dictionary(pairs, uniquingKeysWith: { first, _ in first })
        return room.sources.map { byID[$0.description.id]! }
    }

    /// A voice session is active: the room has a `voice` section, or the app says so.
    @exclusivity(unchecked) public var sessionActive: Bool
    /// Whether the uplink sends silence; detection runs either way.
    public var muted: Bool {
        didSet { uplink?.muted = muted }
    }
    /// The scene's ducking under voices.
    @exclusivity(unchecked) public var ducker: Ducker
    /// How verbose voice prompts may be now.
    public var promptStyle: PromptStyle { advisor.style }
    /// The uplink's last block, 48 kHz mono.
    public var uplinkBlock: UnsafeBufferPointer<Float> { UnsafeBufferPointer(uplinkSamples) }
    /// Where each uplink block goes besides `uplinkBlock`.
    @exclusivity(unchecked) public var uplinkSink: AudioSink?
    /// The voice network the uplink goes to, with the talking state it needs.
    @exclusivity(unchecked) public var voiceUplink: VoiceUplink?
    /// How many remote talkers talk: they duck the scene as participants do.
    @exclusivity(unchecked) public var remoteTalking: RemoteTalking?

    private let scene: RoomPlayer
    private let talkers: RoomPlayer
    private let uplink: MicrophoneUplink?
    private let echoPath: EchoPath?
    @exclusivity(unchecked) private var advisor = PromptStyleAdvisor(sampleRate: Room.sampleRate)
    private let deviceSource: AudioSource?
    private let deviceSink: AudioSink
    @exclusivity(unchecked) private var customSource: AudioSource?
    @exclusivity(unchecked) private var customSink: AudioSink?
    private let externalReference = SampleRing(capacity: Room.sampleRate)
    @exclusivity(unchecked) private var referenceIsExternal = false
    @exclusivity(unchecked) private var participants: [ParticipantListener]
    @exclusivity(unchecked) private var localTalker = LocalTalker()
    @exclusivity(unchecked) private var pendingRouteChange: (frame: Int, route: OutputRoute)?
    /// The joins and leaves counted before the last block, reported after this one.
    @exclusivity(unchecked) private var joinsBeforeLastBlock = 0

    @exclusivity(unchecked) private var prompts: [RoomPrompt]
    @exclusivity(unchecked) private var promptQueue: [(prompt: Int, frame: Int)] = []
    @exclusivity(unchecked) private var playing: (samples: [Float], position: Int)?
    private let promptTaps: [ChannelTap]

    @exclusivity(unchecked) private var events: [EngineEvent] = []
    /// What the output played, mono, for the echo reference: live, the
    /// microphone hears it only after the playback and capture latencies.
    private let playedDelay: SampleDelay
    private let storage = RealTimeStorage()
    private let master: UnsafeMutableBufferPointer<Float>
    private let talkerMix: UnsafeMutableBufferPointer<Float>
    private let mono: UnsafeMutableBufferPointer<Float>
    private let reference: UnsafeMutableBufferPointer<Float>
    private let mic: UnsafeMutableBufferPointer<Float>
    private let uplinkSamples: UnsafeMutableBufferPointer<Float>

    /// - Parameters:
    ///   - room: the room it plays.
    ///   - route: the route to render for; nil takes the scene's.
    ///   - microphone: the device microphone; nil hears silence.
    ///   - sink: the device the output plays on, or the file it is written to.
    ///   - echoPath: an impulse response at 48 kHz through which the output
    ///     reaches the microphone, as a room would carry it.
    ///   - microphoneIsCapture: whether the microphone is a capture device, for
    ///     the `auto` echo-cancellation mode.
    ///   - outputIsPlayback: whether the output is a playback device the
    ///     microphone may hear.
    ///   - levelOfDetail: when a crowd of sources renders partly in the field.
    ///   - controls: the room's parameter plane; by default one of its own.
    ///   - frame: where on the room's timeline to begin.
    public init(room: Room, route: OutputRoute? = nil, microphone: AudioSource?, sink: AudioSink,
                echoPath: [Float]? = nil, microphoneIsCapture: Bool, outputIsPlayback: Bool,
                levelOfDetail: LevelOfDetail = .standard, controls: SessionControls? = nil, startingAt frame: Int = 0) throws {
        self.room = room
        try SoundFieldBus.measureHeadphoneResponses()
        let controls = controls ?? SessionControls(room: room)
        self.controls = controls
        let voice = room.scene.voice
        scene = try RoomPlayer(room: room.only([.scene]), route: route, controls: controls, startingAt: frame, levelOfDetail: levelOfDetail)
        // The scene file's talkers: sources that join later, talkers too, play in the scene's renderer.
        talkers = try RoomPlayer(room: room.only([.voice, .prompt]), route: route, controls: controls, startingAt: frame,
                                 levelOfDetail: levelOfDetail, mix: .talkers)
        framesRendered = frame
        sessionActive = voice != nil
        muted = voice?.muted ?? false
        ducker = Ducker(depthDecibels: voice?.duckingDecibels ?? DuckingLevels()[.default], advanced: voice?.advancedDucking ?? false,
                        sampleRate: Room.sampleRate)
        echoCancellation = (voice?.echoCancellation ?? .auto).resolve(microphoneIsCapture: microphoneIsCapture,
                                                                       outputIsPlayback: outputIsPlayback)
        if voice != nil {
            let uplink = try MicrophoneUplink(echoCancellation: echoCancellation.on)
            uplink.muted = muted
            self.uplink = uplink
        } else {
            uplink = nil
        }
        self.echoPath = echoPath.map(EchoPath.init)
        deviceSource = microphone
        deviceSink = sink
        participants = try (voice?.participants ?? []).map { participant in
            guard let source = (room.sources + room.rejoinedTalkers).first(where: { $0.description.id == participant.id }) else {
                throw MissingParticipantError(id: participant.id)
            }
            return try ParticipantListener(id: participant.id, samples: source.audio.samples, loop: source.description.loop)
        }
        prompts = room.prompts
        promptQueue.reserveCapacity(Self.promptQueueCapacity)
        promptTaps = ChannelTap.passthrough(channels: 1, to: scene.renderer.layout)
        events.reserveCapacity(1_024)

        let channels = scene.channelCount, block = Self.blockFrames
        master = storage.zeroed(block * channels)
        talkerMix = storage.zeroed(block * channels)
        mono = storage.zeroed(block)
        reference = storage.zeroed(block)
        mic = storage.zeroed(block)
        uplinkSamples = storage.zeroed(block)
        playedDelay = SampleDelay(maximum: Room.sampleRate, storage: storage)
        if voice != nil {
            events.append(EngineEvent(frame: frame, kind: .echoCancellation(on: echoCancellation.on, reason: echoCancellation.reason)))
        }
    }

    // MARK: Custom source and sink

    /// Takes the microphone from `source` instead of the device.
    public func setAudioSource(_ source: AudioSource) { customSource = source }
    /// Returns to the device microphone.
    public func resetAudioSource() { customSource = nil }
    /// Plays the output on `sink` instead of the device.
    public func setAudioSink(_ sink: AudioSink) { customSink = sink }
    /// Returns to the device.
    public func resetAudioSink() {
        customSink = nil
        stopEchoReference()
    }

    /// From now on, the echo reference is what `putEchoReference` reports,
    /// for a sink that mixes audio of its own into what it plays.
    public func startEchoReference() {
        externalReference.clear()
        referenceIsExternal = true
    }

    /// What the sink played, mono at 48 kHz, in the order it played it.
    public func putEchoReference(_ block: UnsafeBufferPointer<Float>) {
        externalReference.write(block)
    }

    /// The reference is the engine's master block again.
    public func stopEchoReference() {
        referenceIsExternal = false
    }

    // MARK: Control

    /// Switches to `route` at `frame` of the room's timeline (now, by default), crossfading.
    public func changeRoute(to route: OutputRoute, atFrame frame: Int? = nil) throws {
        guard route.layout == scene.renderer.layout else {
            throw RouteChangeError(from: scene.renderer.route, to: route)
        }
        pendingRouteChange = (max(frame ?? framesRendered, framesRendered), route)
    }

    /// Plays prompt `id` in the variant the prompt style allows, now or once
    /// it allows one: dropped at once when `promptQueueCapacity` wait, or
    /// once `promptTimeoutSeconds` have passed while someone talks.
    public func triggerPrompt(_ id: String) throws {
        guard let index = prompts.firstIndex(where: { $0.id == id }) else {
            throw UnknownPromptError(id: id, known: prompts.map(\.id))
        }
        triggerPrompt(index: index)
    }

    /// The prompts still waiting to play and how long each had waited at
    /// `frame`, oldest first. Only where nothing else renders this engine
    /// (offline); it allocates.
    public func waitingPrompts(at frame: Int) -> [(id: String, waited: Double)] {
        promptQueue.map { (prompts[$0.prompt].id, Double(max(frame - $0.frame, 0)) / Double(Room.sampleRate)) }
    }

    // MARK: Live control, on the render thread

    /// Prompts that may wait to start; one more is dropped at once.
    public static let promptQueueCapacity = 16

    /// The renderers of both mixes, to crossfade into.
    public struct Renderers {
        /// Renders the scene's sources, which are ducked.
        public let scene: RoomRenderer
        /// Renders the voices, which are never ducked.
        public let talkers: RoomRenderer
    }

    /// Makes renderers for `room` on `route`, reading `controls`, to take
    /// over at `frame`; off the render thread, since opening OpenAL devices allocates.
    public static func makeRenderers(for room: Room, route: OutputRoute, controls: SessionControls, startingAt frame: Int,
                                     levelOfDetail: LevelOfDetail = .standard) throws -> Renderers {
        Renderers(scene: try RoomRenderer(room: room.only([.scene]), route: route, controls: controls, startingAt: frame,
                                          levelOfDetail: levelOfDetail),
                  talkers: try RoomRenderer(room: room.only([.voice, .prompt]), route: route, controls: controls, startingAt: frame,
                                            levelOfDetail: levelOfDetail, mix: .talkers))
    }

    /// Crossfades both mixes into `renderers`, made for this frame.
    public func crossfade(to renderers: Renderers) {
        scene.crossfade(to: renderers.scene)
        talkers.crossfade(to: renderers.talkers)
    }

    /// Takes the renderers the mixes are done with, so they are freed elsewhere.
    public var retire: (RoomRenderer) -> Void = { _ in } {
        didSet {
            scene.retire = retire
            talkers.retire = retire
        }
    }

    /// How late the microphone hears what the output plays, in frames: the
    /// echo reference is delayed by as much, up to one second.
    public var referenceDelayFrames: Int {
        get { playedDelay.delay }
        set { playedDelay.delay = newValue }
    }

    /// Switches echo cancellation; when it comes on, it learns the echo path anew.
    public func setEchoCancellation(_ on: Bool, reason: String) {
        uplink?.chain.cancelsEcho = on
        echoCancellation = (on, reason)
        events.append(EngineEvent(frame: framesRendered, kind: .echoCancellation(on: on, reason: reason)))
    }

    /// Sets the custom microphone (nil: the device's) and returns the one it replaces.
    public func swapAudioSource(_ source: AudioSource?) -> AudioSource? {
        defer { customSource = source }
        return customSource
    }

    /// Sets the custom sink (nil: the device) and returns the one it replaces.
    public func swapAudioSink(_ sink: AudioSink?) -> AudioSink? {
        defer { customSink = sink }
        return customSink
    }

    /// Whether the room's uplink runs: it has a voice session.
    public var hasUplink: Bool { uplink != nil }

    /// Plays prompt number `index` of the room, or drops it at once, and
    /// says so, when `promptQueueCapacity` already wait.
    public func triggerPrompt(index: Int) {
        guard promptQueue.count < Self.promptQueueCapacity else {
            post(.promptDropped(id: prompts[index].id, waited: 0))
            return
        }
        promptQueue.append((index, framesRendered))
    }

    /// Hands each event since the last call to `body`, oldest first, without allocating.
    public func drainEvents(_ body: (EngineEvent) -> Void) {
        for event in events { body(event) }
        events.removeAll(keepingCapacity: true)
    }

    /// Puts an event ahead of every one the engine has posted so far, such as
    /// `sceneLoaded` ahead of the new room's first decisions.
    public func postFirst(_ kind: EngineEvent.Kind) {
        events.insert(EngineEvent(frame: framesRendered, kind: kind), at: 0)
    }

    /// Adds an event of the live room's own to the engine's stream.
    public func post(_ kind: EngineEvent.Kind) {
        if events.count < events.capacity { events.append(EngineEvent(frame: framesRendered, kind: kind)) }
    }

    /// The events since the last call, oldest first.
    public func takeEvents() -> [EngineEvent] {
        defer { events.removeAll(keepingCapacity: true) }
        return events
    }

    // MARK: Rendering

    /// Renders the next block, plays it on the sink, runs the uplink, and
    /// returns the master block (valid until the next call).
    @discardableResult
    public func renderBlock() throws -> UnsafeBufferPointer<Float> {
        let block = Self.blockFrames, channels = channelCount
        // Read before any renderer reads its places, reported a block after
        // all have rendered: every renderer has then let go of what left by
        // this count, the field's chunk that may trail a block included.
        let joins = controls.changeCount()
        startPrompts()
        scene.setDucking(ducker.advance(frames: block))
        var done = 0
        while done < block {
            var part = block - done
            if let change = pendingRouteChange {
                if change.frame <= framesRendered + done {
                    try scene.changeRoute(to: change.route)
                    try talkers.changeRoute(to: change.route)
                    pendingRouteChange = nil
                } else {
                    part = min(part, change.frame - framesRendered - done)
                }
            }
            let range = (done * channels)..<((done + part) * channels)
            let sceneSlice = UnsafeMutableBufferPointer(rebasing: master[range])
            try scene.render(into: sceneSlice, frameCount: part)
            let talkerSlice = UnsafeMutableBufferPointer(rebasing: talkerMix[range])
            try talkers.render(into: talkerSlice, frameCount: part)
            for index in range { master[index] += talkerMix[index] }
            done += part
        }
        mixPrompt()
        OutputGuard.sanitize(master)
        try (customSink ?? deviceSink).play(UnsafeBufferPointer(master), channels: channels)
        try listen()
        controls.rendered(through: joinsBeforeLastBlock)
        joinsBeforeLastBlock = joins
        framesRendered += block
        return UnsafeBufferPointer(master)
    }

    /// Runs the uplink and the talkers' voice activity for the block just
    /// played, and sets the ducking and prompt style for the next.
    private func listen() throws {
        let block = Self.blockFrames, channels = channelCount
        let frame = framesRendered
        if referenceIsExternal {
            let got = externalReference.read(into: reference)
            for index in got..<block { reference[index] = 0 }
        } else {
            for index in 0..<block {
                var sum: Float = 0
                for channel in 0..<channels { sum += master[index * channels + channel] }
                reference[index] = sum / Float(channels)
            }
            playedDelay.process(reference)
        }
        var anyoneTalking = false
        if let uplink {
            if let source = customSource ?? deviceSource {
                source.read(into: mic)
            } else {
                mic.update(repeating: 0)
            }
            echoPath?.process(played: UnsafeBufferPointer(reference), addingTo: mic)
            let result = uplink.process(mic: UnsafeBufferPointer(mic), reference: UnsafeBufferPointer(reference), uplink: uplinkSamples)
            try uplinkSink?.play(UnsafeBufferPointer(uplinkSamples), channels: 1)
            localTalker.hear(result, muted: muted, at: frame) { events.append($0) }
            voiceUplink?.send(UnsafeBufferPointer(uplinkSamples), talking: result.speech, muted: muted)
            anyoneTalking = localTalker.speaking
        }
        if let remoteTalking, remoteTalking.talking > 0 { anyoneTalking = true }
        for index in participants.indices {
            let change = participants[index].listen(at: frame)
            if let speaking = change {
                let id = participants[index].id
                events.append(EngineEvent(frame: frame, kind: speaking ? .speechStarted(talker: id) : .speechEnded(talker: id)))
            }
            anyoneTalking = anyoneTalking || participants[index].speaking
        }
        let target = ducker.targetDecibels
        ducker.update(sessionActive: sessionActive, anyoneTalking: anyoneTalking, frames: block)
        if ducker.targetDecibels != target {
            events.append(EngineEvent(frame: frame + block, kind: .duckingChanged(targetDecibels: ducker.targetDecibels)))
        }
        if let style = advisor.update(sessionActive: sessionActive, anyoneTalking: anyoneTalking, frames: block) {
            events.append(EngineEvent(frame: frame + block, kind: .promptStyleChanged(style)))
        }
    }

    /// Starts the oldest waiting prompt if the style lets it play, or,
    /// while it does not, drops every one that has waited too long.
    private func startPrompts() {
        while playing == nil, let (index, triggered) = promptQueue.first {
            let waited = Double(framesRendered - triggered) / Double(Room.sampleRate)
            switch advisor.style {
            case .normal, .short:
                let variant = advisor.style
                playing = (variant == .normal ? prompts[index].normal : prompts[index].short, 0)
                post(.promptPlayed(id: prompts[index].id, variant: variant, waited: waited))
                promptQueue.removeFirst()
            case .none:
                guard waited >= Self.promptTimeoutSeconds else { return }
                post(.promptDropped(id: prompts[index].id, waited: waited))
                promptQueue.removeFirst()
            }
        }
    }

    private func mixPrompt() {
        guard let (samples, position) = playing else { return }
        let channels = channelCount, count = min(Self.blockFrames, samples.count - position)
        for offset in 0..<count {
            for tap in promptTaps { master[offset * channels + tap.output] += samples[position + offset] * tap.gain }
        }
        playing = position + count < samples.count ? (samples, position + count) : nil
    }
}

/// A prompt id the room does not have.
public struct UnknownPromptError: Error, Sendable, CustomStringConvertible {
    /// The id asked for.
    public let id: String
    /// The ids the room has.
    public let known: [String]

    /// Prompt `id` asked for in a room whose prompts are `known`.
    public init(id: String, known: [String]) {
        self.id = id
        self.known = known
    }

    /// The prompt asked for and the prompts the room has.
    public var description: String {
        "no prompt \"\(id)\" in this room" + (known.isEmpty ? "; it has none" : "; it has \(known.joined(separator: ", "))")
    }
}

/// A participant the room's voice section names but whose audio the room did not load.
public struct MissingParticipantError: Error, Sendable, CustomStringConvertible {
    /// The participant's id.
    public let id: String

    /// The participant and why it has no source.
    public var description: String { "participant \"\(id)\" has no source in the room: load rooms with Room.load" }
}

/// A remote talker's voice activity, from their own signal before it
/// reaches the room: their client would send it alongside their voice.
struct ParticipantListener {
    let id: String
    private let samples: [Float]
    /// Whether their audio starts over when it ends, as the room plays it.
    private let loop: Bool
    private let resampler: StreamingResampler
    private let detector = VoiceActivityDetector()
    private var block = [Float](repeating: 0, count: RoomRenderer.blockFrames)
    private var frame = [Float](repeating: 0, count: VoiceActivityDetector.frameSize)
    private(set) var speaking = false

    init(id: String, samples: [Float], loop: Bool) throws {
        self.id = id
        self.samples = samples
        self.loop = loop
        resampler = try StreamingResampler(from: Room.sampleRate, to: UplinkChain.sampleRate)
    }

    /// Listens to the block that starts at `start` on the room's timeline;
    /// returns the new state when it changes.
    mutating func listen(at start: Int) -> Bool? {
        for index in block.indices {
            let position = start + index
            block[index] = position < samples.count ? samples[position] : loop && !samples.isEmpty ? samples[position % samples.count] : 0
        }
        let decision = block.withUnsafeBufferPointer { block in
            frame.withUnsafeMutableBufferPointer { frame in
                _ = resampler.process(block, into: frame)
                return detector.process(UnsafeBufferPointer(frame))
            }
        }
        guard decision.speech != speaking else { return nil }
        speaking = decision.speech
        return speaking
    }
}
