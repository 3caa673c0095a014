import AudioCore
import Scene
import Spatial

#if canImport(Glibc)
import Glibc
#endif

/// Renders a room on the engine's own clock.
///
/// Each rendering algorithm in use has its own OpenAL Soft loopback device
/// (a bus), all sharing the listener, the distance model, the reverb preset
/// and the clock; passthrough sources are mixed by the engine itself,
/// delayed by OpenAL's own latency so every bus stays sample-aligned.
///
/// The clock is the count of frames rendered. Sources start on the exact
/// frame their start time names: a block that contains a start is rendered
/// in two parts around it. Moving sources take their position at the start
/// of each call, so callers render in 10 ms blocks to move smoothly.
public final class RoomRenderer {
    /// The engine's block: 10 ms at 48 kHz.
    public static let blockFrames = 480
    /// The most frames one call renders.
    public static let maximumCallFrames = 4_800

    /// The room it renders.
    public let room: Room
    /// The route it renders for, resolved: never `auto`.
    public let route: OutputRoute
    /// What the room is told while it plays, which this renderer reads each call.
    public let controls: SessionControls
    /// Which mix of the room it plays: the scene's renderer also plays every source that joins while the room plays.
    public let mix: SourceMix
    /// The route's own algorithm, which sources asking for none get.
    public var algorithm: RenderAlgorithm { route.automaticAlgorithm }
    /// The output's channel layout and count, from the route.
    public var layout: ChannelLayout { route.layout }
    /// The output's channel count.
    public var channelCount: Int { layout.channelCount }
    /// The HRTF data set OpenAL loaded, if a bus renders binaurally.
    public var hrtfName: String? { buses.lazy.compactMap(\.mixer.hrtfName).first }
    /// The OpenAL buffers of mono audio each bus holds: one per file its points play.
    package var monoBufferCounts: [RenderAlgorithm: Int] {
        Dictionary(uniqueKeysWithValues: buses.map { ($0.mixer.algorithm, $0.mixer.monoBufferCount) })
    }
    /// The engine's rate.
    public var sampleRate: Int { Room.sampleRate }
    /// Frames rendered since the room's start: where it is on the timeline.
    @exclusivity(unchecked) public private(set) var framesRendered = 0
    /// Frames every bus delays its sources by: OpenAL's limiter look-ahead,
    /// which passthrough follows to stay aligned.
    public let latencyFrames: Int
    /// How each source is rendered and why, in the room's source order.
    public let choices: [RenderChoice]

    private let buses: [Bus]
    private let voices: [Voice]
    /// Each source of the room: its slot, the state last applied, and what renders it.
    @exclusivity(unchecked) private var sources: [LiveSource]
    @exclusivity(unchecked) private var listener: ListenerState
    private let passthrough: [PassthroughVoice]
    /// Sources the engine pans into a third-order field itself: those that
    /// ask for `soundField`, a crowd's, and those that join so. Idle while none sounds.
    private let field: SoundFieldBus
    /// Sources rendered alone or in the field by loudness; nil when the room has no crowd.
    private let crowd: Crowd?
    private let bypasses: [InHeadBypass]
    /// Voices for the sources that join while the room plays: all of them in the scene's renderer, none in the talkers'.
    private let joined: JoinedVoices
    private let standbyTailFrames: Int
    /// The voices' starts as the renderer was made, in order; `nextStart` is the first not yet due.
    private let schedule: [(voice: Int, frame: Int)]
    @exclusivity(unchecked) private var nextStart = 0
    /// OpenAL ramps a gain change across the first mix of a render after
    /// it, which is at most this long (BUFFERSIZE in OpenAL Soft 1.19).
    private static let openALRampFrames = 2_048
    /// The scene's ducking (linear) as set for the next render, as the last
    /// render left what the engine mixes itself, and as the buses have it.
    @exclusivity(unchecked) private var ducking = 1.0
    @exclusivity(unchecked) private var duckingApplied = 1.0
    @exclusivity(unchecked) private var busDucking = 1.0
    /// What the engine mixes itself for the scene, before it takes the ducking.
    private let engineMixed: UnsafeMutableBufferPointer<Float>

    private final class Bus {
        let mixer: SpatialMixer
        /// How its channels reach the output; nil when they are the output's.
        let taps: [ChannelTap]?
        var scratch: [Float]
        /// Only joined sources play on it: it renders only while one of them
        /// sounds, and for the tail after, so an idle bus costs nothing.
        var standsBy = false
        /// The timeline frame a standby bus renders until.
        @exclusivity(unchecked) var awakeUntil = 0

        func renders(at frame: Int) -> Bool { !standsBy || frame < awakeUntil }

        init(mixer: SpatialMixer, output: ChannelLayout) {
            self.mixer = mixer
            taps = ChannelTap.bus(mixer.layout, to: output)
            scratch = [Float](repeating: 0, count: RoomRenderer.maximumCallFrames * mixer.channelCount)
        }
    }

    private struct Voice {
        let sound: any TimelineVoice
        /// Its source, in `sources`, whose state says where it is, whether it plays and from when.
        let source: Int
        /// The voice as a point in the world, and the path it follows when it moves.
        let point: PointSource?
        let path: MotionPath?
        /// A copy that feeds the room's reverb only, for a source the engine renders itself.
        let send: Bool
        /// Length of its audio in frames.
        let frames: Int

        /// Plays from where audio starting at `state.startFrame` would be at
        /// `frame` of the room's timeline; a voice that would have ended by
        /// then stays silent.
        func resume(at frame: Int, _ state: SourceState) throws {
            guard let offset = playbackOffset(at: frame, startFrame: state.startFrame, rate: state.rate, frames: frames,
                                              loop: state.loop) else { return }
            try sound.setPlaybackOffset(frames: offset)
            try sound.play()
        }
    }

    /// A source of the room and the parts that render it.
    private struct LiveSource {
        let slot: Int
        var applied: SourceState
        /// Its OpenAL voice: the point or bed itself, or a reverb send; either takes the source's gain.
        var voice: Int?
        var emitter: Int?
        var bedEmitters: Range<Int>?
        var crowdMember: Int?
        var bypass: Int?
        var passthrough: Int?
    }

    /// - Parameters:
    ///   - room: the room it renders.
    ///   - route: overrides the scene's route when given.
    ///   - controls: the room's parameter plane, shared with every other
    ///     renderer of the room; by default one of its own.
    ///   - frame: where on the room's timeline to begin; sources already
    ///     started by then play from where they would be.
    ///   - levelOfDetail: when a crowd of sources renders partly in the field.
    ///   - mix: which of the room's sources it plays; the scene's renderer also plays every source that joins later.
    public init(room: Room, route: OutputRoute? = nil, controls: SessionControls? = nil, startingAt frame: Int = 0,
                levelOfDetail: LevelOfDetail = .standard, mix: SourceMix = .scene) throws {
        self.room = room
        let controls = controls ?? SessionControls(room: room)
        self.controls = controls
        self.mix = mix
        let scene = room.scene
        let route = (route ?? room.requestedRoute).resolved()
        let distance = room.distanceModel
        self.route = route
        let listener = controls.listenerState
        self.listener = listener

        var buses: [RenderAlgorithm: Bus] = [:]
        /// The buses the room's own sources play on.
        var used = Set<RenderAlgorithm>()
        func bus(_ algorithm: RenderAlgorithm) throws -> Bus {
            used.insert(algorithm)
            if let bus = buses[algorithm] { return bus }
            let mixer = try SpatialMixer(algorithm: algorithm, layout: algorithm == .hrtf ? .stereo : route.layout,
                                         sampleRate: Room.sampleRate,
                                         sources: max(256, 2 * room.sources.count + 64) + SessionControls.joinCapacity
                                            + 1, // the sound field's stream
                                         voices: room.playingVoices(levelOfDetail, joinPlaces: mix.playedPlaces.count))
            try mixer.setDistanceModel(distance)
            try mixer.setListener(position: listener.position, orientation: listener.orientation)
            if let reverb = scene.reverb { try mixer.setReverb(ReverbPreset(reverb.preset), levelDecibels: reverb.levelDecibels) }
            let bus = Bus(mixer: mixer, output: route.layout)
            buses[algorithm] = bus
            return bus
        }
        // The route's own bus always exists: it sets the latency passthrough follows.
        let latency = try bus(route.automaticAlgorithm).mixer.latencyFrames
        used = []

        // The field plays on the route's bus; the room's sources that use it keep that bus awake.
        let field = try SoundFieldBus(mixer: buses[route.automaticAlgorithm]!.mixer, listenerPosition: listener.position,
                                      listenerOrientation: listener.orientation, distance: distance,
                                      joinPlaces: mix.playedPlaces.count, heldAboveDucking: mix.talkerPlaces, startingAt: frame)
        func soundField() throws -> SoundFieldBus {
            used.insert(route.automaticAlgorithm)
            return field
        }
        let reverberant = scene.reverb != nil
        // What the engine renders itself reaches the room's reverb through
        // a copy in the route's bus that feeds the reverb only.
        func reverbSend(_ mono: [Float], paths: RoomPaths) throws -> PointSource? {
            guard reverberant, paths.reverbBlend > 0 else { return nil }
            let send = try bus(route.automaticAlgorithm).mixer.makePointSource(mono: mono, distance: distance)
            try send.setReverbOnly(reverbBlend: paths.reverbBlend, occlusion: paths.occlusion)
            return send
        }

        // Point sources that leave the algorithm to the route form a crowd when there are enough of them.
        let crowdSources = room.sources.filter(\.isCrowdCandidate).count
        var crowd: Crowd?
        if room.hasCrowd(levelOfDetail) {
            crowd = try Crowd(field: soundField(), listenerPosition: listener.position, distance: distance,
                              voices: min(levelOfDetail.perSourceVoices, crowdSources))
        }

        var voices: [Voice] = []
        var sources: [LiveSource] = []
        var passthrough: [PassthroughVoice] = []
        var bypasses: [InHeadBypass] = []
        var choices: [RenderChoice] = []
        for source in room.sources {
            let description = source.description
            guard let slot = controls.slot(of: description.id) else { throw UncontrolledSourceError(id: description.id) }
            let state = controls.initial(slot: slot)
            var live = LiveSource(slot: slot, applied: state)
            defer { sources.append(live) }
            let gain = state.gain
            let motion = SourceMotion(placement: description.placement, glide: state.glide)
            let signal = TimelineSamples(samples: source.audio.samples, startFrame: state.startFrame, rate: state.rate,
                                         loop: state.loop, playing: state.playing)
            if let crowd, source.isCrowdCandidate {
                choices.append(RenderChoice(algorithm: route.automaticAlgorithm,
                                            reason: "crowd of \(crowdSources) (the loudest \(levelOfDetail.perSourceVoices) alone, the rest in the field)"))
                let paths = state.paths
                let point = try bus(route.automaticAlgorithm).mixer.makePointSource(mono: source.audio.samples, distance: distance)
                try point.setRoomEffects(reverbBlend: paths.reverbBlend, obstruction: paths.obstruction, occlusion: paths.occlusion)
                try point.setLooping(state.loop)
                try point.setRate(state.rate)
                let emitter = try soundField().addCrowdPoint(signal, motion: motion, distance: distance,
                                                             gain: gain, scale: paths.directGain(reverberant: reverberant))
                live.crowdMember = crowd.add(Crowd.Member(point: point, emitter: emitter, motion: motion, gain: gain,
                                                          startFrame: state.startFrame, playable: state.playing,
                                                          frames: source.audio.frameCount, loop: state.loop,
                                                          rate: state.rate))
                continue
            }
            let choice = RenderChoice(source, route: route)
            choices.append(choice)
            let sound: (any TimelineVoice)?
            var point: PointSource?
            var inHead: InHeadBypass.SpatialPart?
            /// Puts a point where the source is at `frame`.
            func place(_ source: PointSource) throws -> PointSource {
                try source.setPosition(motion.position(at: max(frame, state.startFrame)))
                return source
            }
            switch source.rendering {
            case .passthrough:
                let paths = description.mode == .bypass ? RoomPaths.dry : state.paths
                let taps = ChannelTap.passthrough(channels: source.audio.channelCount, to: route.layout)
                live.passthrough = passthrough.count
                passthrough.append(PassthroughVoice(samples: source.audio.samples, channels: source.audio.channelCount,
                                                    frames: source.audio.frameCount, taps: taps, latency: latency,
                                                    startFrame: state.startFrame, playing: state.playing, loop: state.loop,
                                                    gain: gain, scale: paths.directGain(reverberant: reverberant),
                                                    directPathHF: paths.directHF))
                guard let send = try reverbSend(source.audio.downmixedToMono().samples, paths: paths) else { continue }
                try send.setHeadLocked(true)
                sound = send
            case .point(.soundField?):
                let paths = state.paths
                let field = try soundField()
                let emitter = field.addPoint(signal, motion: motion, distance: distance, gain: gain,
                                             scale: paths.directGain(reverberant: reverberant), directPathHF: paths.directHF)
                live.emitter = emitter
                inHead = .field(field, emitter: emitter)
                if let send = try reverbSend(source.audio.samples, paths: paths) {
                    point = try place(send)
                    sound = send
                } else {
                    sound = nil
                }
            case .point:
                let made = try bus(choice.algorithm!).mixer.makePointSource(mono: source.audio.samples, distance: distance)
                let paths = state.paths
                try made.setRoomEffects(reverbBlend: paths.reverbBlend, obstruction: paths.obstruction, occlusion: paths.occlusion)
                point = try place(made)
                inHead = .openAL(made)
                sound = made
            case .bed(.soundField?):
                let (feeds, directions) = source.speakerFeeds()
                live.bedEmitters = try soundField().addBed(feeds: feeds, directions: directions, orientation: description.orientation,
                                                           startFrame: state.startFrame, playing: state.playing,
                                                           loop: state.loop, rate: state.rate, gain: gain)
                continue
            case .bed:
                let mixer = try bus(choice.algorithm!).mixer
                let orientation = description.orientation
                switch source.bedLayout {
                case .ambisonic(order: 1)?:
                    // OpenAL Soft decodes first order itself, through its own B-Format path.
                    sound = try mixer.makeAmbienceBed(ambiX: source.audio, orientation: orientation)
                case .ambisonic(let order)?:
                    sound = try mixer.makeAmbisonicBed(ambiX: source.audio, order: order, orientation: orientation)
                case .channels(let layout)?:
                    sound = try mixer.makeChannelBed(source.audio, layout: layout, orientation: orientation)
                case nil:
                    preconditionFailure("a bed's layout is resolved when its room loads")
                }
            }
            if let sound {
                try sound.setGain(linear: gain)
                try sound.setLooping(state.loop)
                try sound.setRate(state.rate)
                var path: MotionPath?
                if case .moving(let motion) = description.placement { path = motion }
                live.voice = voices.count
                voices.append(Voice(sound: sound, source: sources.count, point: point, path: path,
                                    send: source.rendering == .passthrough || source.rendering == .point(.soundField),
                                    frames: source.audio.frameCount))
            }
            if description.inHead == .bypass, let inHead {
                live.bypass = bypasses.count
                bypasses.append(try InHeadBypass(signal: signal, latency: latency, motion: motion, listenerPosition: listener.position,
                                                 gain: gain, output: route.layout, spatial: inHead, at: frame))
            }
        }
        // Both OpenAL buses exist whatever the room holds, so a source can
        // join on, or move to, either; one the room's own sources do not use stands by.
        let inUse = used
        joined = try JoinedVoices(hrtf: bus(.hrtf).mixer, panning: bus(.panning).mixer, field: field, route: route,
                                  controls: controls, mix: mix, distance: distance, reverberant: reverberant, latency: latency,
                                  listenerPosition: listener.position)
        for (algorithm, bus) in buses where !inUse.contains(algorithm) { bus.standsBy = true }
        // What a voice leaves in the bus after it stops: the reverb's decay, and OpenAL's own filters and look-ahead.
        standbyTailFrames = Int(((scene.reverb.map { ReverbPreset($0.preset).decayTime } ?? 0) + 0.5) * Double(Room.sampleRate))
        self.field = field
        self.crowd = crowd
        self.bypasses = bypasses
        self.latencyFrames = latency
        self.buses = RenderAlgorithm.allCases.compactMap { buses[$0] }
        self.voices = voices
        self.sources = sources
        self.passthrough = passthrough
        self.choices = choices
        engineMixed = .allocate(capacity: Self.maximumCallFrames * route.layout.channelCount)
        engineMixed.initialize(repeating: 0)
        schedule = voices.indices.map { ($0, sources[voices[$0].source].applied.startFrame) }.sorted { $0.frame < $1.frame }
        framesRendered = frame
        try crowd?.start(at: frame)
        if frame > 0 {
            try updateMotion()
            while nextStart < schedule.count, schedule[nextStart].frame < frame {
                let (voice, start) = schedule[nextStart]
                let state = sources[voices[voice].source].applied
                if state.playing && state.startFrame == start { try voices[voice].resume(at: frame, state) }
                nextStart += 1
            }
        }
    }

    deinit { engineMixed.deallocate() }

    /// Ducks the scene to `gain` (linear) by the end of the next render,
    /// from where the last left it: OpenAL's listener gain on every bus,
    /// which lowers what the scene's sources send the reverb and lets what
    /// it holds ring out, and a ramp on what the engine mixes itself. The
    /// talkers that join keep their level. With `immediately`, the next
    /// render starts there: a renderer taking over from another.
    public func setDucking(_ gain: Double, immediately: Bool = false) {
        ducking = gain
        if immediately { duckingApplied = gain }
    }

    /// Renders the next `frameCount` frames (at most `maximumCallFrames`), interleaved, into `output`.
    public func render(into output: UnsafeMutableBufferPointer<Float>, frameCount: Int) throws {
        precondition(frameCount <= Self.maximumCallFrames, "render at most \(Self.maximumCallFrames) frames a call")
        precondition(output.count >= frameCount * channelCount, "output block too small")
        let duckingFrom = duckingApplied
        if ducking != busDucking {
            for bus in buses { try bus.mixer.setListenerGain(ducking) }
            try joined.setDucking(ducking)
            busDucking = ducking
        }
        try applyControls()
        try joined.feed(from: framesRendered, count: frameCount)
        for bus in buses where bus.standsBy {
            let fieldSounds = !field.isIdle && bus.mixer.algorithm == algorithm
            if fieldSounds || joined.sounds(on: bus.mixer.algorithm) { bus.awakeUntil = framesRendered + frameCount + standbyTailFrames }
        }
        try updateMotion()
        try crowd?.update(at: framesRendered, frames: frameCount)
        let channels = channelCount
        let first = framesRendered
        for bypass in bypasses { try bypass.advance(from: first, count: frameCount) }
        var done = 0, rampFrames = frameCount
        while done < frameCount {
            try startVoicesDue(at: framesRendered)
            var part = frameCount - done
            if nextStart < schedule.count {
                part = min(part, schedule[nextStart].frame - framesRendered)
            }
            if done == 0 {
                rampFrames = min(part, Self.openALRampFrames)
                field.setDucking(from: duckingFrom, to: ducking, over: rampFrames)
            }
            try field.prepare(from: framesRendered, through: framesRendered + part)
            let slice = UnsafeMutableBufferPointer(rebasing: output[(done * channels)..<((done + part) * channels)])
            renderBuses(into: slice, frameCount: part)
            done += part
            framesRendered += part
        }
        let block = UnsafeMutableBufferPointer(rebasing: output[0..<(frameCount * channels)])
        if duckingApplied == 1 && ducking == 1 {
            mixScene(into: block, from: first, count: frameCount)
        } else {
            // The engine's own part follows the line OpenAL's listener gain takes.
            let mixed = UnsafeMutableBufferPointer(rebasing: engineMixed[0..<(frameCount * channels)])
            mixed.update(repeating: 0)
            mixScene(into: mixed, from: first, count: frameCount)
            let from = Float(duckingFrom), to = Float(ducking)
            for frame in 0..<frameCount {
                let gain = from + (to - from) * min(1, Float(frame + 1) / Float(rampFrames))
                for channel in 0..<channels { block[frame * channels + channel] += mixed[frame * channels + channel] * gain }
            }
        }
        duckingApplied = ducking
        joined.mix(.talkers, into: block, outputChannels: channels, from: first, count: frameCount)
        OutputGuard.sanitize(block)
    }

    /// Adds what the engine renders itself for the scene, over the `count` frames just rendered from `frame`.
    private func mixScene(into block: UnsafeMutableBufferPointer<Float>, from frame: Int, count: Int) {
        let channels = channelCount
        for voice in passthrough { voice.mix(into: block, outputChannels: channels, from: frame, count: count) }
        for bypass in bypasses { bypass.mix(into: block, outputChannels: channels, from: frame, count: count) }
        joined.mix(.scene, into: block, outputChannels: channels, from: frame, count: count)
    }

    /// Renders `seconds` of audio from the current position into a new buffer.
    public func render(seconds: Double) throws -> AudioBuffer {
        let total = Room.frame(atSeconds: seconds)
        var buffer = AudioBuffer(channelCount: channelCount, frameCount: total)
        try buffer.withUnsafeMutableBufferPointer { samples in
            var done = 0
            while done < total {
                let frames = min(Self.blockFrames, total - done)
                let block = UnsafeMutableBufferPointer(rebasing: samples[(done * channelCount)..<((done + frames) * channelCount)])
                try render(into: block, frameCount: frames)
                done += frames
            }
        }
        return buffer
    }

    /// The first bus whose channels are the output's renders straight into
    /// it; every other bus renders into its own buffer and is added in.
    private func renderBuses(into output: UnsafeMutableBufferPointer<Float>, frameCount: Int) {
        let frame = framesRendered
        let direct = buses.firstIndex { $0.taps == nil && $0.renders(at: frame) }
        if let direct {
            buses[direct].mixer.render(into: output, frameCount: frameCount)
        } else {
            output.update(repeating: 0)
        }
        let channels = channelCount
        for (index, bus) in buses.enumerated() where index != direct && bus.renders(at: frame) {
            let busChannels = bus.mixer.channelCount
            bus.scratch.withUnsafeMutableBufferPointer { scratch in
                bus.mixer.render(into: scratch, frameCount: frameCount)
                if let taps = bus.taps {
                    for frame in 0..<frameCount {
                        for tap in taps { output[frame * channels + tap.output] += scratch[frame * busChannels + tap.input] * tap.gain }
                    }
                } else {
                    for index in 0..<(frameCount * channels) { output[index] += scratch[index] }
                }
            }
        }
    }

    private func startVoicesDue(at frame: Int) throws {
        while nextStart < schedule.count, schedule[nextStart].frame <= frame {
            let (voice, start) = schedule[nextStart]
            let state = sources[voices[voice].source].applied
            // A voice played or stopped since keeps to what it was told.
            if state.playing && state.startFrame == start { try voices[voice].sound.play() }
            nextStart += 1
        }
    }

    private func updateMotion() throws {
        let time = Double(framesRendered) / Double(Room.sampleRate)
        for index in voices.indices {
            guard let point = voices[index].point else { continue }
            if let glide = sources[voices[index].source].applied.glide {
                try point.setPosition(glide.position(at: framesRendered))
            } else if let path = voices[index].path {
                try point.setPosition(path.position(at: time))
            }
        }
    }

    // MARK: The parameter plane, on the render thread

    /// Applies what the slots hold that this renderer has not applied yet.
    private func applyControls() throws {
        let now = controls.listener.load()
        if now != listener {
            listener = now
            for bus in buses { try bus.mixer.setListener(position: now.position, orientation: now.orientation) }
            field.setListener(position: now.position, orientation: now.orientation)
            crowd?.listenerPosition = now.position
            for bypass in bypasses { bypass.listenerPosition = now.position }
        }
        for index in sources.indices {
            let state = controls.load(slot: sources[index].slot)
            if state != sources[index].applied { try apply(state, toSource: index) }
        }
        try joined.apply(at: framesRendered, listener: listener.position)
    }

    private func apply(_ state: SourceState, toSource index: Int) throws {
        let source = sources[index], before = source.applied
        sources[index].applied = state
        let restarted = state.playing != before.playing || state.startFrame != before.startFrame
        if let voice = source.voice {
            let sound = voices[voice].sound
            if state.gain != before.gain && source.bypass == nil { try sound.setGain(linear: state.gain) }
            if state.rate != before.rate { try sound.setRate(state.rate) }
            if state.loop != before.loop { try sound.setLooping(state.loop) }
            if state.paths != before.paths, let point = sound as? PointSource {
                let paths = state.paths
                if voices[voice].send {
                    try point.setReverbOnly(reverbBlend: paths.reverbBlend, occlusion: paths.occlusion)
                } else {
                    try point.setRoomEffects(reverbBlend: paths.reverbBlend, obstruction: paths.obstruction, occlusion: paths.occlusion)
                }
            }
            if restarted {
                try sound.stop()
                if state.playing && state.startFrame <= framesRendered { try voices[voice].resume(at: framesRendered, state) }
            }
        }
        if let emitter = source.emitter { field.setPoint(emitter, state) }
        if let emitters = source.bedEmitters { field.setBed(emitters, state) }
        if let member = source.crowdMember { try crowd?.set(member, state) }
        if let bypass = source.bypass { try bypasses[bypass].set(state) }
        if let voice = source.passthrough { passthrough[voice].set(state) }
    }
}

/// A source a renderer was asked to play that has no slot in the room's controls.
public struct UncontrolledSourceError: Error, Sendable, CustomStringConvertible {
    /// The source's id.
    public let id: String

    /// The source and why it has no slot.
    public var description: String { "source \"\(id)\" has no slot in the room's controls: they were made for another room" }
}

/// Where a source is: its scene placement until the first live move, then that glide.
struct SourceMotion {
    let placement: Placement
    var glide: Glide?

    func position(at frame: Int) -> Position {
        glide?.position(at: frame) ?? placement.position(at: Double(frame) / Double(Room.sampleRate))
    }
}

/// How a source is rendered on a route, and why.
public struct RenderChoice: Sendable, CustomStringConvertible {
    /// The OpenAL algorithm; nil for passthrough, which the engine mixes itself.
    public let algorithm: RenderAlgorithm?
    /// Why it got that algorithm: "auto on headphones".
    public let reason: String

    init(algorithm: RenderAlgorithm?, reason: String) {
        self.algorithm = algorithm
        self.reason = reason
    }

    init(_ source: RoomSource, route: OutputRoute) {
        let description = source.description
        switch source.rendering {
        case .passthrough:
            algorithm = nil
            reason = switch description.mode {
            case .bypass: "bypass"
            case .spatializeIfMono where description.algorithm != .passthrough:
                "spatializeIfMono with \(source.fileChannels) channels"
            default: "requested"
            }
        case .point(let requested?), .bed(let requested?):
            algorithm = requested
            reason = "requested"
        case .point(nil), .bed(nil):
            algorithm = route.automaticAlgorithm
            reason = "auto on \(route)"
        }
    }

    /// `auto on headphones -> hrtf`
    public var description: String { "\(reason) -> \(algorithm?.rawValue ?? "passthrough")" }
}

extension RoomPaths {
    /// The paths of a sound played as it is: no reverb, no filtering.
    static let dry = RoomPaths(reverbBlend: 0, obstruction: 0, occlusion: 0)

    /// The direct path's broadband gain: what the reverb blend leaves of it
    /// (equal power, as `PointSource.setRoomEffects`) in a room with a reverb.
    func directGain(reverberant: Bool) -> Double { reverberant ? cos(reverbBlend * .pi / 2) : 1 }

    /// The direct path's gain above 5 kHz, from obstruction and occlusion.
    var directHF: Double { Level.linear(fromDecibels: obstruction) * Level.linear(fromDecibels: occlusion) }
}

extension RoomSource {
    /// A bed's channels as speaker feeds and their directions in the bed's
    /// frame: a layout's channels at their angles, or a field sampled as
    /// the OpenAL beds sample it.
    func speakerFeeds() -> ([[Float]], [SIMD3<Double>]) {
        switch bedLayout {
        case .ambisonic(let order)?:
            let directions = Ambisonics.virtualSpeakerDirections(order: order)
            return (Ambisonics.decode(audio, order: order, to: directions), directions)
        case .channels(let layout)?:
            return ((0..<layout.channelCount).map(audio.channel), layout.directions)
        case nil:
            preconditionFailure("a bed's layout is resolved when its room loads")
        }
    }

    /// Rendered by OpenAL as a voice of its own, which live changes reach directly.
    var rendersInPlace: Bool {
        switch rendering {
        case .point(.soundField?), .bed(.soundField?), .passthrough: false
        case .point: description.inHead != .bypass
        case .bed: true
        }
    }

    /// A point in the world, whatever renders it: it has a position to move.
    public var isPoint: Bool {
        if case .point = rendering { true } else { false }
    }

    /// A point source that leaves its algorithm to the route and is heard as a point inside the head.
    var isCrowdCandidate: Bool {
        guard case .point(nil) = rendering else { return false }
        return description.inHead == .mono
    }
}

extension Room {
    func hasCrowd(_ levelOfDetail: LevelOfDetail) -> Bool {
        sources.filter(\.isCrowdCandidate).count > levelOfDetail.crowdThreshold
    }

    /// The most OpenAL voices a mix of this room plays at once, for its
    /// mixers to make ready: a voice per channel of a bed, one per other
    /// source, a crowd's voices alone and as many fading out, the sound
    /// field's stream, and the sources that may join the mix.
    func playingVoices(_ levelOfDetail: LevelOfDetail, joinPlaces: Int) -> Int {
        let crowd = hasCrowd(levelOfDetail)
        let members = sources.reduce(0) { count, source in
            if crowd && source.isCrowdCandidate { return count }
            if case .bed = source.rendering { return count + source.audio.channelCount }
            return count + 1
        }
        // The joined sources have a voice on each of the two OpenAL buses, of which one is this.
        return members + (crowd ? 2 * levelOfDetail.perSourceVoices : 0) + 1 + joinPlaces
    }
}
