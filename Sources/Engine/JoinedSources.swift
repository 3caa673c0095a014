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
        /// Mono at the engine's rate.
        case samples([Float])
        case stream(SampleRing)
    }

    let audio: Audio
    /// Where the source is until a live move takes over, on a timeline that
    /// starts at `origin`: its entry's keyframes count from when it joined.
    let placement: Placement
    let origin: Int
    /// What a stream's ring gave, by timeline frame modulo its size; render thread only.
    private let history: UnsafeMutableBufferPointer<Float>
    /// The timeline frame up to which the stream has been pulled.
    @exclusivity(unchecked) private var pulledThrough = Int.min

    private static let historyFrames = 1 << 14

    init(_ audio: Audio, placement: Placement = .fixed(.zero), origin: Int = 0) {
        self.audio = audio
        self.placement = placement
        self.origin = origin
        if case .stream = audio {
            history = .allocate(capacity: Self.historyFrames)
            history.initialize(repeating: 0)
        } else {
            history = UnsafeMutableBufferPointer(start: nil, count: 0)
        }
    }

    deinit { history.deallocate() }

    /// Where a source told `state` is at timeline frame `frame`.
    func position(at frame: Int, _ state: SourceState) -> Position {
        state.glide?.position(at: frame) ?? placement.position(at: Double(frame - origin) / Double(Room.sampleRate))
    }

    /// Whether the source's place changes with time without a live move.
    var followsKeyframes: Bool {
        if case .moving = placement { return true }
        return false
    }

    /// Fills `chunk` with what plays from timeline frame `frame` on, for a
    /// source told `state`. Render thread only.
    func fill(_ chunk: UnsafeMutableBufferPointer<Float>, from frame: Int, _ state: SourceState) {
        switch audio {
        case .samples(let samples):
            samples.withUnsafeBufferPointer { samples in
                let count = samples.count
                for index in chunk.indices {
                    let offset = frame + index - state.startFrame
                    if offset < 0 || count == 0 {
                        chunk[index] = 0
                    } else if offset < count {
                        chunk[index] = samples[offset]
                    } else {
                        chunk[index] = state.loop ? samples[offset % count] : 0
                    }
                }
            }
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

/// The mix a renderer plays: the scene, ducked under voices, or the talkers.
public enum SourceMix: Sendable {
    case scene
    /// Voices and prompts.
    case talkers

    init(_ category: SourceCategory) { self = category == .scene ? .scene : .talkers }

    /// The places in the room's controls for the sources that join this mix.
    var joinPlaces: Range<Int> {
        let count = SessionControls.joinCapacityPerMix
        return self == .scene ? 0..<count : count..<(2 * count)
    }
}

/// A renderer's voices for sources that join its mix while the room plays:
/// one streamed point per place of the mix in the room's controls on each
/// of its buses, made with the renderer, so a join opens nothing, a leave
/// frees nothing and a change of algorithm moves the source between voices
/// the renderer already has.
final class JoinedVoices {
    private let controls: SessionControls
    /// The mix's places in the controls; `places` and each bus's voices count from its start.
    private let range: Range<Int>
    /// The route the renderer plays, which decides the bus of a source asking for no algorithm.
    private let route: OutputRoute
    /// One voice per place on the HRTF bus, then one per place on the panning bus.
    private let voices: [[Voice]]
    @exclusivity(unchecked) private var places: [Place]
    private let chunk: UnsafeMutableBufferPointer<Float>
    private let chunkFrames = RoomRenderer.blockFrames

    private struct Place {
        var generation = 0
        /// The source's feed while it belongs to this mix.
        var feed: UnsafeRawPointer?
        var bus = JoinBus.route
        var applied = JoinedVoices.unapplied
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

        init(_ stream: StreamedPoint) { self.stream = stream }
    }

    /// - Parameter mixers: the renderer's HRTF bus and its panning bus.
    init(hrtf: SpatialMixer, panning: SpatialMixer, route: OutputRoute, controls: SessionControls, mix: SourceMix,
         distance: DistanceModel) throws {
        self.controls = controls
        self.route = route
        let range = mix.joinPlaces
        self.range = range
        // Enough chunks for the longest render call and one ahead of it, twice over.
        let chunks = 2 * (RoomRenderer.maximumCallFrames / RoomRenderer.blockFrames + 2)
        voices = try [hrtf, panning].map { mixer in
            try range.map { _ in
                let stream = try mixer.makeStreamedPoint(distance: distance, chunkFrames: RoomRenderer.blockFrames, chunks: chunks)
                // Makes the device's filter storage now, not on the render thread at the first join.
                try stream.point.setRoomEffects(reverbBlend: 0, obstruction: 0, occlusion: 0)
                return Voice(stream)
            }
        }
        places = Array(repeating: Place(), count: range.count)
        chunk = .allocate(capacity: RoomRenderer.blockFrames)
        chunk.initialize(repeating: 0)
    }

    deinit { chunk.deallocate() }

    /// What a place holds before its source's state is first applied:
    /// paths no source has, so whatever the last source left on the voice is set anew.
    private static let unapplied = SourceState(gain: 0, playing: false, startFrame: 0,
                                               paths: RoomPaths(reverbBlend: -1, obstruction: 0, occlusion: 0))

    /// Whether a voice on the bus of `algorithm` plays or fades. Render thread.
    func sounds(on algorithm: RenderAlgorithm) -> Bool { voices[Self.busIndex(algorithm)].contains { $0.sounding } }

    /// Where a bus's voices are in `voices`.
    private static func busIndex(_ algorithm: RenderAlgorithm) -> Int { algorithm == .hrtf ? 0 : 1 }

    private func busIndex(_ bus: JoinBus) -> Int { Self.busIndex(bus.algorithm(on: route)) }

    private func voice(_ index: Int) -> Voice { voices[busIndex(places[index].bus)][index] }

    /// Takes the joins, leaves and changes since the last block. Render thread.
    func apply(at frame: Int) throws {
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

    /// Place `index` is taken, given up or moved to another bus: the voice
    /// that played fades out, and a source that moved rises in on its new one.
    private func take(_ joined: JoinedSource, at index: Int, frame: Int) throws {
        let sameSource = joined.feed != nil && joined.feed == places[index].feed
        defer {
            places[index].generation = joined.generation
            places[index].bus = joined.bus
        }
        // Another algorithm that comes to the same bus on this route changes nothing here.
        if sameSource && busIndex(joined.bus) == busIndex(places[index].bus) { return }
        let before = voice(index)
        if before.sounding { try fade(before, index, at: frame) }
        places[index].feed = joined.feed
        places[index].applied = Self.unapplied
        voices[busIndex(joined.bus)][index].risesIn = sameSource && before.sounding
    }

    private func apply(_ state: SourceState, to index: Int, at frame: Int) throws {
        let before = places[index].applied, voice = voice(index), point = voice.stream.point
        places[index].applied = state
        if state.paths != before.paths {
            try point.setRoomEffects(reverbBlend: state.paths.reverbBlend, obstruction: state.paths.obstruction,
                                     occlusion: state.paths.occlusion)
        }
        let moves = if let glide = state.glide { glide != before.glide || frame <= glide.endFrame } else {
            before == Self.unapplied || withFeed(index) { $0.followsKeyframes }
        }
        if moves { try point.setPosition(withFeed(index) { $0.position(at: frame, state) }) }
        let restarted = state.playing != before.playing || state.startFrame != before.startFrame
        if restarted && state.playing {
            if voice.sounding { try voice.stream.rewind() }
            voice.sounding = true
            voice.fading = false
            voice.queuedThrough = frame
            try point.setGain(linear: state.gain)
        } else if restarted {
            if voice.sounding && !voice.fading { try fade(voice, index, at: frame) }
        } else if state.gain != before.gain && voice.sounding && !voice.fading {
            try point.setGain(linear: state.gain)
        }
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

    /// Feeds every sounding voice a chunk ahead of the `count` frames about
    /// to render from `frame`: a fading one silence, the rest their place's feed. Render thread.
    func feed(from frame: Int, count: Int) throws {
        for bus in voices.indices {
            for index in places.indices {
                let voice = voices[bus][index]
                guard voice.sounding else { continue }
                while voice.queuedThrough < frame + count + chunkFrames {
                    if !voice.fading, busIndex(places[index].bus) == bus, places[index].feed != nil {
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

    /// Place `index`'s feed, which the controls keep alive while the place holds it.
    private func withFeed<T>(_ index: Int, _ body: (SourceFeed) -> T) -> T {
        Unmanaged<SourceFeed>.fromOpaque(places[index].feed!)._withUnsafeGuaranteedRef(body)
    }

    /// Fills `chunk` from place `index`'s feed.
    private func fillChunk(_ index: Int, from frame: Int) {
        guard places[index].feed != nil else { return }
        withFeed(index) { $0.fill(chunk, from: frame, places[index].applied) }
    }
}
