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
    /// What a stream's ring gave, by timeline frame modulo its size; render thread only.
    private let history: UnsafeMutableBufferPointer<Float>
    /// The timeline frame up to which the stream has been pulled.
    @exclusivity(unchecked) private var pulledThrough = Int.min

    private static let historyFrames = 1 << 14

    init(_ audio: Audio) {
        self.audio = audio
        if case .stream = audio {
            history = .allocate(capacity: Self.historyFrames)
            history.initialize(repeating: 0)
        } else {
            history = UnsafeMutableBufferPointer(start: nil, count: 0)
        }
    }

    deinit { history.deallocate() }

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
/// one streamed point per place of the mix in the room's controls, made
/// with the renderer, so a join opens nothing and a leave frees nothing.
final class JoinedVoices {
    private let controls: SessionControls
    /// The mix's places in the controls; `voices` and `places` count from its start.
    private let range: Range<Int>
    private let voices: [StreamedPoint]
    @exclusivity(unchecked) private var places: [Place]
    private let chunk: UnsafeMutableBufferPointer<Float>
    private let chunkFrames = RoomRenderer.blockFrames

    private struct Place {
        var generation = 0
        /// The source's feed while it belongs to this mix.
        var feed: UnsafeRawPointer?
        var applied = JoinedVoices.unapplied
        /// Its voice plays, and has been fed up to this timeline frame.
        var sounding = false
        var queuedThrough = 0
        /// Fading out over this block, fed silence; stopped at the next.
        var fading = false
    }

    init(mixer: SpatialMixer, controls: SessionControls, mix: SourceMix, distance: DistanceModel) throws {
        self.controls = controls
        range = mix.joinPlaces
        // Enough chunks for the longest render call and one ahead of it, twice over.
        let chunks = 2 * (RoomRenderer.maximumCallFrames / RoomRenderer.blockFrames + 2)
        voices = try range.map { _ in
            let voice = try mixer.makeStreamedPoint(distance: distance, chunkFrames: RoomRenderer.blockFrames, chunks: chunks)
            // Makes the device's filter storage now, not on the render thread at the first join.
            try voice.point.setRoomEffects(reverbBlend: 0, obstruction: 0, occlusion: 0)
            return voice
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

    /// Takes the joins, leaves and changes since the last block. Render thread.
    func apply(at frame: Int) throws {
        for index in places.indices {
            if places[index].fading {
                try voices[index].rewind()
                places[index].fading = false
                places[index].sounding = false
            }
            let joined = controls.joinedSource(range.lowerBound + index)
            if joined.generation != places[index].generation {
                if places[index].sounding { try fade(index, at: frame) }
                places[index].generation = joined.generation
                places[index].feed = joined.feed
                places[index].applied = Self.unapplied
            }
            guard places[index].feed != nil else { continue }
            let state = controls.load(slot: controls.firstJoined + range.lowerBound + index)
            try apply(state, to: index, at: frame)
        }
    }

    private func apply(_ state: SourceState, to index: Int, at frame: Int) throws {
        let before = places[index].applied, point = voices[index].point
        places[index].applied = state
        if state.paths != before.paths {
            try point.setRoomEffects(reverbBlend: state.paths.reverbBlend, obstruction: state.paths.obstruction,
                                     occlusion: state.paths.occlusion)
        }
        if let glide = state.glide, glide != before.glide || frame <= glide.endFrame {
            try point.setPosition(glide.position(at: frame))
        }
        let restarted = state.playing != before.playing || state.startFrame != before.startFrame
        if restarted && state.playing {
            if places[index].sounding { try voices[index].rewind() }
            places[index].sounding = true
            places[index].fading = false
            places[index].queuedThrough = frame
            try point.setGain(linear: state.gain)
        } else if restarted {
            if places[index].sounding && !places[index].fading { try fade(index, at: frame) }
        } else if state.gain != before.gain && places[index].sounding && !places[index].fading {
            try point.setGain(linear: state.gain)
        }
    }

    /// Fades the voice out over the first half of the block about to
    /// render, in the chunk already queued for it, so OpenAL's look-ahead
    /// carries nothing into the next; it is fed silence and stopped after.
    private func fade(_ index: Int, at frame: Int) throws {
        places[index].fading = true
        let ahead = places[index].queuedThrough - frame
        guard places[index].feed != nil, ahead >= chunkFrames, ahead % chunkFrames == 0 else { return }
        fillChunk(index, from: frame)
        let half = chunkFrames / 2
        for offset in 0..<chunkFrames { chunk[offset] *= offset < half ? Float(half - offset) / Float(half) : 0 }
        try voices[index].overwrite(UnsafeBufferPointer(chunk), back: ahead / chunkFrames)
    }

    /// Feeds every sounding voice a chunk ahead of the `count` frames about
    /// to render from `frame`. Render thread.
    func feed(from frame: Int, count: Int) throws {
        for index in places.indices where places[index].sounding {
            while places[index].queuedThrough < frame + count + chunkFrames {
                if places[index].feed != nil, !places[index].fading {
                    fillChunk(index, from: places[index].queuedThrough)
                } else {
                    chunk.update(repeating: 0)
                }
                try voices[index].queue(UnsafeBufferPointer(chunk))
                places[index].queuedThrough += chunkFrames
            }
        }
    }

    /// Fills `chunk` from place `index`'s feed, which the controls keep alive while the place holds it.
    private func fillChunk(_ index: Int, from frame: Int) {
        guard let feed = places[index].feed else { return }
        Unmanaged<SourceFeed>.fromOpaque(feed)._withUnsafeGuaranteedRef { $0.fill(chunk, from: frame, places[index].applied) }
    }
}
