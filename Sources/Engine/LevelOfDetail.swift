import Scene
import Spatial

/// How the renderer scales to crowds of sources.
///
/// A room with more point sources than `crowdThreshold` among those that
/// ask for no algorithm renders them as a crowd: every 100 ms the
/// `perSourceVoices` loudest at the listener are chosen to play through
/// OpenAL on their own, and all the others are panned together into the
/// engine's third-order field, which is decoded once for the route. A
/// source moving between the two crossfades over 100 ms. Sources below
/// -80 dB at the listener are not rendered at all.
public struct LevelOfDetail: Sendable, Equatable {
    /// Point sources asking for no algorithm beyond which the room renders them as a crowd.
    public var crowdThreshold: Int
    /// How many of a crowd's sources play through OpenAL on their own.
    public var perSourceVoices: Int

    /// A crowd beyond `crowdThreshold` sources, `perSourceVoices` of them heard on their own.
    public init(crowdThreshold: Int = 64, perSourceVoices: Int = 32) {
        self.crowdThreshold = crowdThreshold
        self.perSourceVoices = perSourceVoices
    }

    /// Crowds beyond 64 sources, the 32 loudest heard on their own.
    public static let standard = LevelOfDetail()
    /// Every source rendered on its own: the reference a crowd is measured against.
    public static let full = LevelOfDetail(crowdThreshold: .max, perSourceVoices: 0)
}

/// The crowd's sources and which of them play on their own.
final class Crowd {
    /// The per-source set is chosen again every 100 ms...
    static let rankingFrames = 4_800
    /// ...and a source crosses between the two renderings in 100 ms.
    static let fadeFrames = 4_800
    /// A source playing on its own keeps its place unless another is 1 dB louder,
    /// so two sources at nearly the same level do not trade places back and forth.
    static let hysteresis = 1.122

    struct Member {
        let point: PointSource
        /// Its index among the field's crowd emitters.
        let emitter: Int
        var motion: SourceMotion
        var gain: Double
        var startFrame: Int
        /// False while stopped: it is not chosen to play alone.
        var playable: Bool
        let frames: Int
        let loop: Bool
        let rate: Double
        /// The part rendered on its own, and where it is heading.
        var alone = 0.0
        var target = 0.0
        var playing = false

        /// Where in its audio the source is at `frame`; nil while stopped, before it starts or after a single play.
        func offset(at frame: Int) -> Int? {
            guard playable else { return nil }
            return playbackOffset(at: frame, startFrame: startFrame, rate: rate, frames: frames, loop: loop)
        }
    }

    @exclusivity(unchecked) private var members: [Member] = []
    private let field: SoundFieldBus
    /// Where the listener is, for ranking by loudness.
    @exclusivity(unchecked) var listenerPosition: Position
    private let distance: DistanceModel
    private let voices: Int
    @exclusivity(unchecked) private var nextRanking = 0
    /// The chosen members' indices, loudest first, and their levels.
    @exclusivity(unchecked) private var chosen: [Int]
    @exclusivity(unchecked) private var chosenLevels: [Double]

    init(field: SoundFieldBus, listenerPosition: Position, distance: DistanceModel, voices: Int) {
        self.field = field
        self.listenerPosition = listenerPosition
        self.distance = distance
        self.voices = voices
        chosen = [Int](repeating: 0, count: voices)
        chosenLevels = [Double](repeating: 0, count: voices)
    }

    /// Adds a member; returns its index for `set`.
    func add(_ member: Member) -> Int {
        members.append(member)
        return members.count - 1
    }

    /// Takes a member's live state, in the field and alone: gain and move
    /// from the next block, a play or stop at once.
    func set(_ index: Int, _ state: SourceState) throws {
        field.setCrowdPoint(members[index].emitter, state)
        members[index].gain = state.gain
        members[index].motion.glide = state.glide
        if state.startFrame != members[index].startFrame || state.playing != members[index].playable {
            members[index].startFrame = state.startFrame
            members[index].playable = state.playing
            // Stopped alone; the next update plays it again from where it now is, if it should.
            if members[index].playing {
                try members[index].point.stop()
                members[index].playing = false
            }
            if !state.playing {
                members[index].alone = 0
                members[index].target = 0
            }
        }
    }

    /// Chooses the first per-source set at `frame` and plays it at once, without fading in.
    func start(at frame: Int) throws {
        rank(at: frame)
        for index in members.indices { members[index].alone = members[index].target }
        try update(at: frame, frames: 0)
    }

    /// Moves the crowd to `frame`, about to render `frames` more.
    func update(at frame: Int, frames: Int) throws {
        if frame >= nextRanking {
            rank(at: frame)
            nextRanking = frame + Self.rankingFrames
        }
        let step = Double(frames) / Double(Self.fadeFrames)
        try members.withUnsafeMutableBufferPointer { members in
            for index in members.indices where members[index].alone > 0 || members[index].target > 0 || members[index].playing {
                let target = members[index].target, before = members[index].alone
                let alone = target > before ? min(target, before + step) : max(target, before - step)
                members[index].alone = alone
                let point = members[index].point
                if alone > 0 {
                    try point.setPosition(members[index].motion.position(at: frame))
                    try point.setGain(linear: members[index].gain * alone)
                    if !members[index].playing {
                        if let offset = members[index].offset(at: frame) {
                            try point.setPlaybackOffset(frames: offset)
                            try point.play()
                            members[index].playing = true
                        } else {
                            members[index].alone = 0
                            members[index].target = 0
                        }
                    }
                } else if members[index].playing {
                    try point.stop()
                    members[index].playing = false
                }
                if members[index].alone != before || before > 0 { field.setCrowdShare(1 - members[index].alone, of: members[index].emitter) }
            }
        }
    }

    /// Chooses the `voices` loudest sounding members at the listener.
    private func rank(at frame: Int) {
        var taken = 0
        for index in members.indices { members[index].target = 0 }
        guard voices > 0 else { return }
        for index in members.indices {
            let member = members[index]
            guard member.offset(at: frame) != nil else { continue }
            let offset = member.motion.position(at: frame) - listenerPosition
            var level = member.gain * distance.gain(at: (offset * offset).sum().squareRoot())
            if member.alone > 0 { level *= Self.hysteresis }
            guard level > 0, taken < voices || level > chosenLevels[voices - 1] else { continue }
            // Insertion into the short list, loudest first.
            var slot = min(taken, voices - 1)
            while slot > 0 && chosenLevels[slot - 1] < level {
                chosen[slot] = chosen[slot - 1]
                chosenLevels[slot] = chosenLevels[slot - 1]
                slot -= 1
            }
            chosen[slot] = index
            chosenLevels[slot] = level
            taken = min(taken + 1, voices)
        }
        for slot in 0..<taken { members[chosen[slot]].target = 1 }
    }
}
