import AudioCore
import Scene
import Spatial

/// The audio of a source that joined a playing room: a decoded file, or a
/// stream the app pushes.
///
/// Several renderers may play one feed at once (two routes crossfading),
/// so it is read by timeline frame: a file by its offset from the source's
/// start, a stream through a short history of what was pulled from its
/// ring, which every renderer reads at the same frames.
final class SourceFeed: @unchecked Sendable {
    enum Audio {
        /// At the engine's rate, a channel apiece: one for a point, the file's own for a sound played as it is.
        case samples([[Float]])
        /// Mono at the engine's rate, as the app pushes it.
        case stream(SampleRing)
    }

    let audio: Audio
    /// Where the source is until a live move takes over, on a timeline that
    /// starts at `origin`: its entry's keyframes count from when it joined.
    let placement: Placement
    let origin: Int
    /// For a bed, the direction in the world (OpenAL axes) of each channel, a speaker feed apiece.
    let speakers: [SIMD3<Double>]?
    /// What a stream's ring gave, by timeline frame modulo its size; render thread only.
    private let history: UnsafeMutableBufferPointer<Float>
    /// The timeline frame up to which the stream has been pulled.
    @exclusivity(unchecked) private var pulledThrough = Int.min

    private static let historyFrames = 1 << 14

    init(_ audio: Audio, placement: Placement = .fixed(.zero), origin: Int = 0, speakers: [SIMD3<Double>]? = nil) {
        self.audio = audio
        self.placement = placement
        self.origin = origin
        self.speakers = speakers
        if case .stream = audio {
            history = .allocate(capacity: Self.historyFrames)
            history.initialize(repeating: 0)
        } else {
            history = UnsafeMutableBufferPointer(start: nil, count: 0)
        }
    }

    deinit { history.deallocate() }

    /// How many channels it plays.
    var channelCount: Int {
        if case .samples(let channels) = audio { return channels.count }
        return 1
    }

    /// Where a source told `state` is at timeline frame `frame`.
    func position(at frame: Int, _ state: SourceState) -> Position {
        state.glide?.position(at: frame) ?? placement.position(at: Double(frame - origin) / Double(Room.sampleRate))
    }

    /// Whether the source's place changes with time without a live move.
    var followsKeyframes: Bool {
        if case .moving = placement { return true }
        return false
    }

    /// Fills `chunk` with what channel `channel` plays from timeline frame
    /// `frame` on, for a source told `state`: a file at the state's rate,
    /// a stream as it was pushed. Render thread only.
    func fill(_ chunk: UnsafeMutableBufferPointer<Float>, from frame: Int, _ state: SourceState, channel: Int = 0) {
        switch audio {
        case .samples(let channels):
            TimelineSamples(samples: channels[channel], startFrame: state.startFrame, rate: state.rate, loop: state.loop)
                .read(into: chunk, from: frame)
        case .stream(let ring):
            pull(from: ring, through: frame + chunk.count, startingAt: frame)
            let mask = Self.historyFrames - 1, oldest = pulledThrough - Self.historyFrames
            for index in chunk.indices {
                let at = frame + index
                chunk[index] = at < oldest ? 0 : history[at & mask]
            }
        }
    }

    /// Takes what the ring holds into the history up to `end`; what it
    /// lacks is silence, so an underrun never replays old audio.
    private func pull(from ring: SampleRing, through end: Int, startingAt frame: Int) {
        if pulledThrough < frame { pulledThrough = frame }
        let mask = Self.historyFrames - 1
        while pulledThrough < end {
            let start = pulledThrough & mask
            let count = min(end - pulledThrough, Self.historyFrames - start)
            let part = UnsafeMutableBufferPointer(rebasing: history[start..<(start + count)])
            let got = ring.read(into: part)
            for index in 0..<got where !(abs(part[index]) <= [Float].corruptMagnitude) { part[index] = 0 }
            for index in got..<count { part[index] = 0 }
            pulledThrough += count
        }
    }
}

/// Audio the app pushes into a source of a playing room: mono, 48 kHz, as
/// it comes (a remote talker's decoded voice, a synthesiser). The room
/// plays what was pushed a block or so later; when the app falls behind
/// the source is silent until more arrives.
///
/// `push` is for one thread at a time; it never blocks and never allocates.
public final class SourceStream: Sendable {
    /// The source's id in the room.
    public let id: String
    let feed: SourceFeed
    private let ring: SampleRing

    /// How many frames the stream holds ahead of what plays: a second.
    public static let capacityFrames = Room.sampleRate

    init(id: String) {
        self.id = id
        ring = SampleRing(capacity: Self.capacityFrames)
        feed = SourceFeed(.stream(ring))
    }

    /// Adds `samples` to what the source plays next; returns how many fit.
    @discardableResult
    public func push(_ samples: UnsafeBufferPointer<Float>) -> Int { ring.write(samples) }

    /// Adds `samples` to what the source plays next; returns how many fit.
    @discardableResult
    public func push(_ samples: [Float]) -> Int { samples.withUnsafeBufferPointer { push($0) } }

    /// Frames pushed and not yet played.
    public var queuedFrames: Int { ring.count }
}

/// The mix a source belongs to: the scene, ducked under voices, or the
/// talkers (voices and prompts), which keep their level.
///
/// A room renders its scene file's talkers apart, so ducking lowers the
/// scene as a whole. The sources that join while it plays all play in the
/// scene's renderer, the talkers among them held above its ducking: a
/// remote talker then costs a source on the scene's OpenAL bus, not a bus
/// and a reverb of its own.
public enum SourceMix: Sendable {
    /// Sources of category `scene`, with the room's reverb.
    case scene
    /// Voices and prompts.
    case talkers

    init(_ category: SourceCategory) { self = category == .scene ? .scene : .talkers }

    /// The places in the room's controls for the sources that join this mix.
    var joinPlaces: Range<Int> {
        let count = SessionControls.joinCapacityPerMix
        return self == .scene ? 0..<count : count..<(2 * count)
    }

    /// The places a renderer of this mix plays: the scene's, every joined source's; the talkers', none.
    var playedPlaces: Range<Int> { self == .scene ? 0..<(2 * SessionControls.joinCapacityPerMix) : 0..<0 }

    /// The talkers' places among `playedPlaces`, counted from its start.
    var talkerPlaces: Range<Int> {
        let played = playedPlaces, talkers = SourceMix.talkers.joinPlaces.clamped(to: played)
        return (talkers.lowerBound - played.lowerBound)..<(talkers.upperBound - played.lowerBound)
    }
}

/// The scene renderer's voices for the sources that join the room while it
/// plays, the scene's and the talkers'. Everything is made with the
/// renderer, so a join opens nothing, a leave frees nothing, and a source
/// that changes how it renders moves between parts the renderer already
/// has, heard from the next block:
///
/// - a streamed point per place on each OpenAL bus, HRTF and panning;
/// - a place per source in the engine's sound field;
/// - the output itself, for a source played as it is and for the copy of
///   an in-head point that bypasses the room.
final class JoinedVoices {
    private let controls: SessionControls
    /// The places this renderer plays in the controls; `places` and each bus's voices count from its start.
    private let range: Range<Int>
    /// The talkers' places among them, which keep their level while the buses' listener gain ducks the rest.
    private let talkers: Range<Int>
    /// The buses' listener gain: the scene's ducking, linear.
    @exclusivity(unchecked) private var ducking = 1.0
    /// The route the renderer plays, which decides the bus of a source asking for no algorithm.
    private let route: OutputRoute
    /// One voice per place on the HRTF bus, then one per place on the panning bus.
    private let voices: [[Voice]]
    /// The bus whose voice carries a place's reverb send while the place
    /// plays in the field or as it is: the route's, as for a scene's sources.
    private let sendBus: Int
    private let field: SoundFieldBus
    private let reverberant: Bool
    /// Frames the buses delay what they render, which what plays as it is waits out.
    private let latency: Int
    /// How a feed of n channels reaches the output, at index n.
    private let taps: [[ChannelTap]]
    @exclusivity(unchecked) private var places: [Place]
    @exclusivity(unchecked) private var listenerPosition: Position
    private let chunk: UnsafeMutableBufferPointer<Float>
    /// One channel of what plays as it is, for the longest render call.
    private let scratch: UnsafeMutableBufferPointer<Float>
    /// Obstruction and occlusion on what plays as it is, a filter per channel and place.
    @exclusivity(unchecked) private var shelves: [HighShelfFilter]
    private let chunkFrames = RoomRenderer.blockFrames

    /// The most channels a source played as it is has: 7.1.
    private static let maximumChannels = 8

    /// How far a talker's OpenAL gain may rise: OpenAL mixes nothing above
    /// 16 (+24 dB, the most a source may ask), and the deepest ducking
    /// (-60 dB) lifts a talker's gain as far again to keep its level.
    private static let gainCeiling = 16 / Level.linear(fromDecibels: -60)

    private struct Place {
        var generation = 0
        /// The source's feed while it holds this place.
        var feed: UnsafeRawPointer?
        var rendering = JoinedRendering(bus: .route)
        var applied = JoinedVoices.unapplied
        /// Inside the head radius with `inHead: bypass`, at the block's start.
        var inside = false
        /// How much of it the in-head copy plays now: 0 outside the head, 1 inside.
        var inHeadShare = 0.0
        var asIs = AsIs()
    }

    /// What a place plays straight to the output: the feed it reads (kept
    /// while it fades, after the place moved on), its state, and its gain
    /// at the end of the last block and now.
    private struct AsIs {
        var feed: UnsafeRawPointer?
        var state = JoinedVoices.unapplied
        var channels = 1
        var gain: Float = 0
        var target: Float = 0
        var shelved = false
    }

    /// A streamed point and how far it has been fed.
    private final class Voice {
        let stream: StreamedPoint
        /// It plays, and has been fed up to this timeline frame.
        @exclusivity(unchecked) var sounding = false
        @exclusivity(unchecked) var queuedThrough = 0
        /// Fading out over this block, fed silence; stopped at the next.
        @exclusivity(unchecked) var fading = false
        /// Its first chunk rises over half a block: the source was playing on another bus.
        @exclusivity(unchecked) var risesIn = false
        /// Kept at the listener's head, as the reverb send of what plays as it is.
        @exclusivity(unchecked) var headLocked = false

        init(_ stream: StreamedPoint) { self.stream = stream }
    }

    /// - Parameters:
    ///   - hrtf, panning: the renderer's two OpenAL buses.
    ///   - field: the renderer's sound field, which keeps a place for each of these.
    ///   - latency: the buses' latency, which what plays as it is waits out.
    init(hrtf: SpatialMixer, panning: SpatialMixer, field: SoundFieldBus, route: OutputRoute, controls: SessionControls,
         mix: SourceMix, distance: DistanceModel, reverberant: Bool, latency: Int, listenerPosition: Position) throws {
        self.controls = controls
        self.route = route
        self.field = field
        self.reverberant = reverberant
        self.latency = latency
        self.listenerPosition = listenerPosition
        sendBus = Self.busIndex(route.automaticAlgorithm)
        let range = mix.playedPlaces
        self.range = range
        let talkerPlaces = mix.talkerPlaces
        talkers = talkerPlaces
        // Enough chunks for the longest render call and one ahead of it, twice over.
        let chunks = 2 * (RoomRenderer.maximumCallFrames / RoomRenderer.blockFrames + 2)
        voices = try [hrtf, panning].map { mixer in
            try (0..<range.count).map { place in
                let stream = try mixer.makeStreamedPoint(distance: distance, chunkFrames: RoomRenderer.blockFrames, chunks: chunks)
                // Makes the device's filter storage now, not on the render thread at the first join.
                try stream.point.setRoomEffects(reverbBlend: 0, obstruction: 0, occlusion: 0)
                if talkerPlaces.contains(place) { try stream.point.setGainCeiling(Self.gainCeiling) }
                return Voice(stream)
            }
        }
        taps = (0...Self.maximumChannels).map { channels in
            SourceShape.passthroughChannelCounts.contains(channels) ? ChannelTap.passthrough(channels: channels, to: route.layout) : []
        }
        places = Array(repeating: Place(), count: range.count)
        shelves = Array(repeating: HighShelfFilter(gainHF: 1, sampleRate: Double(Room.sampleRate)),
                        count: range.count * Self.maximumChannels)
        chunk = .allocate(capacity: RoomRenderer.blockFrames)
        chunk.initialize(repeating: 0)
        scratch = .allocate(capacity: RoomRenderer.maximumCallFrames)
        scratch.initialize(repeating: 0)
    }

    deinit {
        chunk.deallocate()
        scratch.deallocate()
    }

    /// What a place holds before its source's state is first applied:
    /// paths no source has, so whatever the last source left on the voice is set anew.
    private static let unapplied = SourceState(gain: 0, playing: false, startFrame: 0,
                                               paths: RoomPaths(reverbBlend: -1, obstruction: 0, occlusion: 0))

    /// Whether a voice on the bus of `algorithm` plays or fades. Render thread.
    func sounds(on algorithm: RenderAlgorithm) -> Bool { voices[Self.busIndex(algorithm)].contains { $0.sounding } }

    /// Where a bus's voices are in `voices`.
    private static func busIndex(_ algorithm: RenderAlgorithm) -> Int { algorithm == .hrtf ? 0 : 1 }

    /// The OpenAL bus a rendering plays on, in `voices`; nil for the field and the output.
    private func busIndex(_ rendering: JoinedRendering) -> Int? { rendering.bus.algorithm(on: route).map(Self.busIndex) }

    /// Whether a place rendering so, from `feed`, has a reverb send: in a
    /// room with a reverb, a point in the field or a file played as it is
    /// (not dry), as a scene's sources of those kinds have. A bed has none.
    private func sends(_ rendering: JoinedRendering, feed: UnsafeRawPointer?) -> Bool {
        guard reverberant, let feed else { return false }
        switch rendering.bus {
        case .soundField: return Unmanaged<SourceFeed>.fromOpaque(feed)._withUnsafeGuaranteedRef { $0.speakers == nil }
        case .passthrough: return !rendering.dry
        case .route, .hrtf, .panning: return false
        }
    }

    /// The bus of the OpenAL voice a place rendering so uses: its own, or its reverb send's.
    private func voiceBus(_ rendering: JoinedRendering, feed: UnsafeRawPointer?) -> Int? {
        busIndex(rendering) ?? (sends(rendering, feed: feed) ? sendBus : nil)
    }

    /// Whether place `index`'s voice is its reverb send rather than the source itself.
    private func isSend(_ index: Int) -> Bool { busIndex(places[index].rendering) == nil }

    /// Place `index`'s OpenAL voice, if it renders on one or sends from one.
    private func voice(_ index: Int) -> Voice? {
        voiceBus(places[index].rendering, feed: places[index].feed).map { voices[$0][index] }
    }

    // MARK: The render thread

    /// The buses' listener gain is now `gain` (linear): the talkers' OpenAL
    /// voices rise against it in the same update, so they keep their level.
    /// The field lifts the talkers in it itself.
    func setDucking(_ gain: Double) throws {
        guard gain != ducking else { return }
        ducking = gain
        for index in talkers where places[index].feed != nil {
            guard let voice = voice(index), voice.sounding else { continue }
            try voice.stream.point.setGain(linear: spatialGain(index, places[index].applied))
        }
    }

    /// What a place's OpenAL gain is multiplied by to sound at its level on
    /// a ducked bus: a talker's rises against the ducking, the scene's does not.
    private func lift(_ index: Int) -> Double { talkers.contains(index) ? 1 / ducking : 1 }

    /// Takes the joins, leaves and changes since the last block, with the
    /// listener where the renderer has it.
    func apply(at frame: Int, listener: Position) throws {
        listenerPosition = listener
        for bus in voices {
            for voice in bus where voice.fading {
                try voice.stream.rewind()
                voice.fading = false
                voice.sounding = false
            }
        }
        for index in places.indices {
            let joined = controls.joinedSource(range.lowerBound + index)
            if joined.generation != places[index].generation { try take(joined, at: index, frame: frame) }
            guard places[index].feed != nil else { continue }
            let state = controls.load(slot: controls.firstJoined + range.lowerBound + index)
            try apply(state, to: index, at: frame)
        }
    }

    /// Place `index` is taken, given up or renders another way: what played
    /// fades out, and a source that only changed how it renders rises in.
    private func take(_ joined: JoinedSource, at index: Int, frame: Int) throws {
        let before = places[index].rendering, after = joined.rendering
        let sameSource = joined.feed != nil && joined.feed == places[index].feed
        defer {
            places[index].generation = joined.generation
            places[index].rendering = after
        }
        // Another algorithm that comes to the same part on this route changes nothing here.
        let samePart = busIndex(before) == busIndex(after) && (busIndex(before) != nil || before.bus == after.bus)
        if sameSource && samePart { return }
        var wasSounding = false
        if let voice = voice(index), voice.sounding {
            wasSounding = true
            try fade(voice, index, at: frame)
        }
        if before.bus == .soundField && places[index].feed != nil {
            wasSounding = true
            field.leave(index)
        }
        places[index].asIs.target = 0
        places[index].feed = joined.feed
        places[index].applied = Self.unapplied
        guard let feed = joined.feed else { return }
        if let bus = voiceBus(after, feed: feed) { voices[bus][index].risesIn = sameSource && wasSounding }
        if after.bus == .soundField { field.join(index, feed: feed, at: frame) }
    }

    private func apply(_ state: SourceState, to index: Int, at frame: Int) throws {
        let before = places[index].applied, rendering = places[index].rendering
        places[index].applied = state
        let position = withFeed(index) { $0.position(at: frame, state) }
        let offset = position - listenerPosition
        places[index].inside = rendering.bypassesInHead && (offset * offset).sum().squareRoot() < PointSource.headRadius
        if before == Self.unapplied {
            // A source that joins inside the head starts as its copy.
            places[index].inHeadShare = places[index].inside ? 1 : 0
        }
        switch rendering.bus {
        case .soundField:
            // A bed, as in the scene, takes no room paths.
            let paths = withFeed(index) { $0.speakers == nil } ? state.paths : .dry
            field.setJoined(index, state, scale: paths.directGain(reverberant: reverberant), directPathHF: paths.directHF)
            field.setJoinedSpatialShare(1 - places[index].inHeadShare, of: index)
        case .passthrough:
            let paths = rendering.dry ? RoomPaths.dry : state.paths
            if paths != places[index].asIs.state.paths || places[index].asIs.feed != places[index].feed {
                setShelves(index, directPathHF: paths.directHF)
            }
            playAsIs(index, state, channels: withFeed(index) { $0.channelCount }, paths: paths)
            places[index].asIs.target = state.playing ? Float(state.gain * paths.directGain(reverberant: reverberant)) : 0
        case .route, .hrtf, .panning:
            break
        }
        try apply(state, before, position: position, toVoiceOf: index, at: frame)
        // The in-head copy: the point's own audio as it is, without the room.
        if rendering.bypassesInHead {
            if places[index].asIs.feed != places[index].feed { places[index].asIs.shelved = false }
            playAsIs(index, state, channels: 1, paths: .dry)
        }
    }

    /// Place `index` plays its feed as it is, told `state`.
    private func playAsIs(_ index: Int, _ state: SourceState, channels: Int, paths: RoomPaths) {
        places[index].asIs.feed = places[index].feed
        places[index].asIs.state = state
        places[index].asIs.state.paths = paths
        places[index].asIs.channels = channels
    }

    /// Sets the filters on what place `index` plays as it is.
    private func setShelves(_ index: Int, directPathHF: Double) {
        places[index].asIs.shelved = directPathHF < 1
        guard directPathHF < 1 else { return }
        let shelf = HighShelfFilter(gainHF: directPathHF, sampleRate: Double(Room.sampleRate))
        for channel in 0..<Self.maximumChannels { shelves[index * Self.maximumChannels + channel] = shelf }
    }

    /// Sets a place's OpenAL voice as its source's state says: the source
    /// itself, or its reverb send, at its position or, for what plays as it
    /// is, at the listener's head.
    private func apply(_ state: SourceState, _ before: SourceState, position: Position, toVoiceOf index: Int, at frame: Int) throws {
        guard let voice = voice(index) else { return }
        let point = voice.stream.point, send = isSend(index)
        let headLocked = send && places[index].rendering.bus == .passthrough
        if headLocked != voice.headLocked {
            try point.setHeadLocked(headLocked)
            voice.headLocked = headLocked
        }
        if state.paths != before.paths {
            if send {
                try point.setReverbOnly(reverbBlend: state.paths.reverbBlend, occlusion: state.paths.occlusion)
            } else {
                try point.setRoomEffects(reverbBlend: state.paths.reverbBlend, obstruction: state.paths.obstruction,
                                         occlusion: state.paths.occlusion)
            }
        }
        let moves = if let glide = state.glide { glide != before.glide || frame <= glide.endFrame } else {
            before == Self.unapplied || withFeed(index) { $0.followsKeyframes }
        }
        if moves && !headLocked { try point.setPosition(position) }
        let restarted = state.playing != before.playing || state.startFrame != before.startFrame
        if restarted && state.playing {
            if voice.sounding { try voice.stream.rewind() }
            voice.sounding = true
            voice.fading = false
            voice.queuedThrough = frame
            try point.setGain(linear: spatialGain(index, state))
        } else if restarted {
            if voice.sounding && !voice.fading { try fade(voice, index, at: frame) }
        } else if state.gain != before.gain && voice.sounding && !voice.fading {
            try point.setGain(linear: spatialGain(index, state))
        }
    }

    /// The gain of a place's spatial part: what its in-head copy leaves. A
    /// reverb send keeps the source's whole gain, as a scene's does.
    private func spatialGain(_ index: Int, _ state: SourceState) -> Double {
        (isSend(index) ? state.gain : state.gain * (1 - places[index].inHeadShare)) * lift(index)
    }

    /// Fades `voice` out over the first half of the block about to render,
    /// in the chunk already queued for it, so OpenAL's look-ahead carries
    /// nothing into the next; it is fed silence and stopped after.
    private func fade(_ voice: Voice, _ index: Int, at frame: Int) throws {
        voice.fading = true
        let ahead = voice.queuedThrough - frame
        guard places[index].feed != nil, ahead >= chunkFrames, ahead % chunkFrames == 0 else { return }
        fillChunk(index, from: frame)
        let half = chunkFrames / 2
        for offset in 0..<chunkFrames { chunk[offset] *= offset < half ? Float(half - offset) / Float(half) : 0 }
        try voice.stream.overwrite(UnsafeBufferPointer(chunk), back: ahead / chunkFrames)
    }

    /// Moves the in-head crossfades on by `count` frames and feeds every
    /// sounding voice a chunk ahead of the `count` frames about to render
    /// from `frame`: a fading one silence, the rest their place's feed.
    func feed(from frame: Int, count: Int) throws {
        try advanceInHeadCopies(by: count)
        for bus in voices.indices {
            for index in places.indices {
                let voice = voices[bus][index]
                guard voice.sounding else { continue }
                while voice.queuedThrough < frame + count + chunkFrames {
                    if !voice.fading, voiceBus(places[index].rendering, feed: places[index].feed) == bus, places[index].feed != nil {
                        fillChunk(index, from: voice.queuedThrough)
                        if voice.risesIn {
                            let half = chunkFrames / 2
                            for offset in 0..<half { chunk[offset] *= Float(offset) / Float(half) }
                            voice.risesIn = false
                        }
                    } else {
                        chunk.update(repeating: 0)
                    }
                    try voice.stream.queue(UnsafeBufferPointer(chunk))
                    voice.queuedThrough += chunkFrames
                }
            }
        }
    }

    /// Moves every in-head crossfade on by `count` frames, as
    /// `InHeadBypass` does: the copy's share of the source rises inside the
    /// head radius and falls outside, and the spatial part keeps the rest.
    private func advanceInHeadCopies(by count: Int) throws {
        let step = Double(count) / Double(InHeadBypass.crossfadeFrames)
        for index in places.indices where places[index].feed != nil && places[index].rendering.bus != .passthrough {
            let share = places[index].inHeadShare
            let next = places[index].inside ? min(1, share + step) : max(0, share - step)
            places[index].inHeadShare = next
            let state = places[index].applied
            if places[index].asIs.feed == places[index].feed {
                places[index].asIs.target = state.playing ? Float(state.gain * next) : 0
            }
            guard next != share else { continue }
            if places[index].rendering.bus == .soundField {
                field.setJoinedSpatialShare(1 - next, of: index)
            } else if let voice = voice(index), voice.sounding, !voice.fading {
                try voice.stream.point.setGain(linear: spatialGain(index, state))
            }
        }
    }

    /// Adds what the places of `mix` play as they are over the `count`
    /// frames just rendered from `frame` into `output`, delayed by the
    /// buses' latency and ramped from the last block's gain. A part that
    /// faded to nothing lets its feed go.
    func mix(_ mix: SourceMix, into output: UnsafeMutableBufferPointer<Float>, outputChannels: Int, from frame: Int, count: Int) {
        let block = UnsafeMutableBufferPointer(rebasing: scratch[0..<count])
        for index in places.indices where places[index].asIs.feed != nil && talkers.contains(index) == (mix == .talkers) {
            let asIs = places[index].asIs
            places[index].asIs.gain = asIs.target
            if asIs.gain == 0 && asIs.target == 0 {
                let rendering = places[index].rendering
                let stillPlays = places[index].feed == asIs.feed && (rendering.bus == .passthrough || rendering.bypassesInHead)
                if !stillPlays { places[index].asIs.feed = nil }
                continue
            }
            let feed = Unmanaged<SourceFeed>.fromOpaque(asIs.feed!)
            for channel in 0..<asIs.channels {
                feed._withUnsafeGuaranteedRef { $0.fill(block, from: frame - latency, asIs.state, channel: channel) }
                if asIs.shelved {
                    for offset in 0..<count { block[offset] = shelves[index * Self.maximumChannels + channel].process(block[offset]) }
                }
                for tap in taps[asIs.channels] where tap.input == channel {
                    let gain = tap.gain
                    for offset in 0..<count {
                        let ramp = asIs.gain + (asIs.target - asIs.gain) * Float(offset + 1) / Float(count)
                        output[offset * outputChannels + tap.output] += block[offset] * ramp * gain
                    }
                }
            }
        }
    }

    /// Place `index`'s feed, which the controls keep alive while the place holds it.
    private func withFeed<T>(_ index: Int, _ body: (SourceFeed) -> T) -> T {
        Unmanaged<SourceFeed>.fromOpaque(places[index].feed!)._withUnsafeGuaranteedRef(body)
    }

    /// Fills `chunk` from place `index`'s feed: a file played as it is
    /// downmixed to one channel for its reverb send, as a scene's is.
    private func fillChunk(_ index: Int, from frame: Int) {
        guard places[index].feed != nil else { return }
        let state = places[index].applied
        withFeed(index) { feed in
            feed.fill(chunk, from: frame, state)
            guard feed.channelCount > 1 else { return }
            let other = UnsafeMutableBufferPointer(rebasing: scratch[0..<chunkFrames])
            for channel in 1..<feed.channelCount {
                feed.fill(other, from: frame, state, channel: channel)
                for offset in 0..<chunkFrames { chunk[offset] += other[offset] }
            }
            let scale = 1 / Float(feed.channelCount)
            for offset in 0..<chunkFrames { chunk[offset] *= scale }
        }
    }
}
