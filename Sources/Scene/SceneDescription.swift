import AudioCore

/// A room as a scene file describes it, validated: every value is in range
/// and every file it names exists.
public struct SceneDescription: Sendable {
    /// The scene file this came from.
    public var file: String
    /// The room's name (`name`); the scene file's name when the file gives none.
    public var name: String
    /// How long the room renders when nobody says otherwise, in seconds: at most `longestDuration`.
    public var duration: Double?
    /// The longest a scene's `duration` may be, and a render: an hour.
    public static let longestDuration = 3_600.0
    /// The output route the scene asks for (`output.route`); `auto` by default.
    public var route: RouteName
    /// Where the listener stands, in metres (`listener.position`), each axis within ±10000 m; the origin by default.
    public var listenerPosition: Position
    /// Which way the listener faces, in degrees (`listener.yaw`, `pitch`, `roll`); at yaw 0 it faces -Z.
    public var listenerOrientation: Orientation
    /// How a point source's level falls with distance (`distance`).
    public var distance: DistanceAttenuation
    /// The room's reverberation, if it has any.
    public var reverb: RoomReverb?
    /// The room's sources, the scene file's `sources` list.
    public var sources: [SourceDescription]
    /// The voice session; nil when the room has none.
    public var voice: VoiceDescription?
    /// The app's spoken prompts (top-level `prompts`), each in a normal and a short variant.
    public var prompts: [PromptDescription]

    /// Makes a scene in code; what it leaves out takes the scene file's defaults.
    public init(file: String, name: String, duration: Double? = nil, route: RouteName = .auto,
                listenerPosition: Position = .zero, listenerOrientation: Orientation = .identity,
                distance: DistanceAttenuation = DistanceAttenuation(), reverb: RoomReverb? = nil, sources: [SourceDescription] = [],
                voice: VoiceDescription? = nil, prompts: [PromptDescription] = []) {
        self.file = file
        self.name = name
        self.duration = duration
        self.route = route
        self.listenerPosition = listenerPosition
        self.listenerOrientation = listenerOrientation
        self.distance = distance
        self.reverb = reverb
        self.sources = sources
        self.voice = voice
        self.prompts = prompts
    }
}

/// How a point source reaches the listener through the room.
public struct RoomPaths: Sendable, Equatable, BitwiseCopyable {
    /// 0: direct sound only; 1: reverb only (equal-power crossfade).
    public var reverbBlend: Double
    /// dB, 0 or less: darkens the direct path.
    public var obstruction: Double
    /// dB, 0 or less: darkens the direct path and the reverb send.
    public var occlusion: Double

    /// The paths of a source whose entry sets none: reverb blend 0.2, no obstruction, no occlusion.
    public static let `default` = RoomPaths(reverbBlend: 0.2, obstruction: 0, occlusion: 0)

    /// Makes paths from a reverb blend (0 to 1) and obstruction and occlusion in dB (-100 to 0 in a scene file).
    public init(reverbBlend: Double, obstruction: Double, occlusion: Double) {
        self.reverbBlend = reverbBlend
        self.obstruction = obstruction
        self.occlusion = occlusion
    }
}

/// How a source's file plays (`mode`); `spatializeIfMono` by default.
public enum SourceMode: String, Sendable, CaseIterable {
    /// A mono file becomes a point; a multichannel file plays as it is (passthrough).
    case spatializeIfMono
    /// All of the file's channels averaged into one sound at a position.
    case point
    /// A sound field or speaker channels anchored to the world.
    case bed
    /// Plays as it is, head-locked, like passthrough.
    case bypass
}

/// What a source asks to be rendered with; `auto` follows the route.
public enum SourceAlgorithm: String, Sendable, CaseIterable {
    /// The route's algorithm: HRTF on headphones and headsets, panning on speakers, surround and mono.
    case auto
    /// HRTF binaural through OpenAL Soft; on a route other than headphones it plays on the front pair.
    case hrtf
    /// OpenAL Soft's amplitude panning over the route's speakers.
    case panning
    /// The engine's third-order ambisonic field, decoded once for the route.
    case soundField
    /// The file's channels as they are, head-locked, keeping the room's reverb blend, obstruction and occlusion.
    case passthrough
}

/// What a point source becomes inside the listener's head.
public enum InHeadRendering: String, Sendable, CaseIterable {
    /// A centred image, still through the source's algorithm and the room.
    case mono
    /// The file as it is on both ears, crossfading in as the source crosses the head radius.
    case bypass
}

/// How a source plays, from its mode, its algorithm and its file's channels.
public enum SourceShape: Sendable, Equatable {
    /// A point in the world.
    case point
    /// A bed in the world.
    case bed
    /// The file's channels straight to the output's.
    case passthrough

    /// Channel counts passthrough can lay onto any output: mono, stereo, quad, 5.1 and 7.1.
    public static let passthroughChannelCounts = [1, 2, 4, 6, 8]
}

extension SourceDescription {
    /// Its entry gives it a position: not a bed, nor a file played as it is (bypass, passthrough).
    public var isPlaced: Bool { mode != .bed && mode != .bypass && algorithm != .passthrough }

    /// How a file of `channels` channels plays as this source.
    public func shape(channels: Int) -> SourceShape {
        switch mode {
        case .bed: .bed
        case .bypass: .passthrough
        case .point: algorithm == .passthrough ? .passthrough : .point
        case .spatializeIfMono: channels == 1 && algorithm != .passthrough ? .point : .passthrough
        }
    }

    /// Why a file of `channels` channels cannot play as this source, if it cannot.
    public func channelProblem(_ channels: Int) -> String? {
        switch shape(channels: channels) {
        case .point: return nil
        case .bed:
            if case .failure(let mismatch) = BedLayout.resolve(bedLayout, channels: channels) { return mismatch.reason }
            return nil
        case .passthrough:
            guard SourceShape.passthroughChannelCounts.contains(channels) else {
                return "plays as it is (\(mode == .spatializeIfMono ? "a multichannel file in spatializeIfMono" : "passthrough")), "
                    + "which needs 1, 2, 4, 6 or 8 channels (mono, stereo, quad, 5.1, 7.1); this file has \(channels)"
            }
            return nil
        }
    }
}

/// The layouts a scene may name for a bed.
public enum BedLayoutName: String, Sendable, CaseIterable {
    /// AmbiX (ACN/SN3D) of order 1 to 3: 4, 9 or 16 channels.
    case ambisonic
    /// Two speakers at ±30 degrees.
    case stereo
    /// Four speakers at ±45 and ±135 degrees; without this layout a 4-channel bed is first-order AmbiX.
    case quad
    /// Six channels, written `5.1`: C 0, L/R ±30, surrounds ±110 degrees, LFE placed ahead.
    case surround51 = "5.1"
    /// Eight channels, written `7.1`: the 5.1 front, sides at ±90 and backs at ±150 degrees, LFE placed ahead.
    case surround71 = "7.1"
}

/// What a bed's channels are.
public enum BedLayout: Sendable, Equatable, CustomStringConvertible {
    /// AmbiX of order 1 to 3.
    case ambisonic(order: Int)
    /// Loudspeaker channels at their standard angles.
    case channels(ChannelLayout)

    /// The bed a file of `channels` channels makes, given the layout the
    /// scene names; without one, the channel count decides, and four
    /// channels are first-order AmbiX rather than quad.
    public static func resolve(_ name: BedLayoutName?, channels: Int) -> Result<BedLayout, BedLayoutMismatch> {
        switch (name, channels) {
        case (nil, _), (.ambisonic?, _):
            if let order = Ambisonics.order(channels: channels) { return .success(.ambisonic(order: order)) }
            if name == nil, let layout = [ChannelLayout.stereo, .surround51, .surround71].first(where: { $0.channelCount == channels }) {
                return .success(.channels(layout))
            }
            let needed = name == nil
                ? "4, 9 or 16 channels of AmbiX (ACN order, SN3D), or a speaker layout: 2 (stereo), 4 with layout: quad, 6 (5.1) or 8 (7.1)"
                : "4, 9 or 16 channels of AmbiX (ACN order, SN3D)"
            return .failure(BedLayoutMismatch(reason: "a bed needs \(needed); this file has \(channels)"))
        case (let name?, _):
            let layout: ChannelLayout = switch name {
            case .stereo: .stereo
            case .quad: .quad
            case .surround51: .surround51
            case .surround71, .ambisonic: .surround71
            }
            guard layout.channelCount == channels else {
                return .failure(BedLayoutMismatch(reason: "layout \(name.rawValue) needs \(layout.channelCount) channels; this file has \(channels)"))
            }
            return .success(.channels(layout))
        }
    }

    /// The bed in words, like `order-1 ambisonics` or `5.1 channels`.
    public var description: String {
        switch self {
        case .ambisonic(let order): "order-\(order) ambisonics"
        case .channels(let layout): "\(layout.rawValue) channels"
        }
    }
}

/// A bed file whose channel count does not fit the layout its entry names, or any layout when it names none.
public struct BedLayoutMismatch: Error, Sendable {
    /// Why, as the scene issue at the source's `file` gives it.
    public let reason: String
}

/// What validation needs to know of an audio file, read from its header.
public struct AudioFileInfo: Sendable, Equatable {
    /// Number of channels.
    public var channels: Int
    /// Sample rate in Hz.
    public var sampleRate: Int
    /// Length in sample frames, as the header declares it; a file with 0 is refused.
    public var frames: Int

    /// Makes the header facts an `AudioInspector` returns.
    public init(channels: Int, sampleRate: Int, frames: Int) {
        self.channels = channels
        self.sampleRate = sampleRate
        self.frames = frames
    }
}

/// An audio file refused by whoever inspects audio for the loader.
public struct AudioFileRejection: Error, Sendable {
    /// Why the file is refused; the loader reports it at the field that names the file.
    public let reason: String

    /// Refuses a file for `reason`.
    public init(reason: String) { self.reason = reason }
}

/// Reads an audio file's header, or throws `AudioFileRejection`.
public typealias AudioInspector = @Sendable (_ path: String) throws -> AudioFileInfo

/// A sound in the room, as one `sources` entry of a scene file describes it, validated.
public struct SourceDescription: Sendable {
    /// Unique name in the room (`id`): 1 to 64 characters of a-z, 0-9, `_` and `-`.
    public var id: String
    /// Path of the audio file, resolved against the scene file's folder.
    public var audioPath: String
    /// Where the `file` field stands, for problems found in the audio itself.
    public var audioField: FieldLocation
    /// How the file's channels play (`mode`); `spatializeIfMono` by default.
    public var mode: SourceMode
    /// Where a point source is; beds have no position.
    public var placement: Placement
    /// How a bed is turned in the world.
    public var orientation: Orientation
    /// The layout a bed's scene entry names; nil lets the channel count decide.
    public var bedLayout: BedLayoutName?
    /// The algorithm the source asks for (`algorithm`); `auto` follows the route.
    public var algorithm: SourceAlgorithm
    /// Gain in dB (`gain`), -120 to 24; 0 by default.
    public var gainDecibels: Double
    /// Whether the file loops, seamlessly (`loop`); false by default.
    public var loop: Bool
    /// Seconds into the room's timeline when the source starts.
    public var start: Double
    /// Playback rate and pitch, 0.5 to 2.
    public var rate: Double
    /// Point sources and passthrough only.
    public var paths: RoomPaths
    /// Point sources only.
    public var inHead: InHeadRendering
    /// What the source is to the voice bus (`category`); only `scene` is ducked. `scene` by default.
    public var category: SourceCategory
    /// False: the source waits, silent, until it is told to play.
    public var playing: Bool

    /// A source made in code needs no file: `audioPath` and `audioField`
    /// only name where a scene file's audio came from.
    public init(id: String, audioPath: String = "", audioField: FieldLocation = FieldLocation(file: "", line: nil, field: ""),
                mode: SourceMode = .spatializeIfMono,
                placement: Placement = .fixed(.zero), orientation: Orientation = .identity,
                gainDecibels: Double = 0, loop: Bool = false, start: Double = 0,
                rate: Double = 1, paths: RoomPaths = .default, bedLayout: BedLayoutName? = nil,
                algorithm: SourceAlgorithm = .auto, inHead: InHeadRendering = .mono, category: SourceCategory = .scene,
                playing: Bool = true) {
        self.id = id
        self.audioPath = audioPath
        self.audioField = audioField
        self.mode = mode
        self.placement = placement
        self.orientation = orientation
        self.gainDecibels = gainDecibels
        self.loop = loop
        self.start = start
        self.rate = rate
        self.paths = paths
        self.bedLayout = bedLayout
        self.algorithm = algorithm
        self.inHead = inHead
        self.category = category
        self.playing = playing
    }

}

/// Where a point source is: at one place, or moving along a path on the room's timeline.
public enum Placement: Sendable, Equatable {
    /// Stands at one position, in metres (`position`).
    case fixed(Position)
    /// Follows keyframes on the room's timeline (`motion`).
    case moving(MotionPath)

    /// The position, in metres, at `time` seconds on the room's timeline.
    public func position(at time: Double) -> Position {
        switch self {
        case .fixed(let position): position
        case .moving(let path): path.position(at: time)
        }
    }
}

/// Positions at times on the room's timeline, interpolated linearly between.
public struct MotionPath: Sendable, Equatable {
    /// A position the path reaches at a time: one of `motion.keyframes`.
    public struct Keyframe: Sendable, Equatable {
        /// Seconds on the room's timeline (`time`), 0 to 3600.
        public var time: Double
        /// Where the source is at `time`, in metres (`position`).
        public var position: Position

        /// Makes a keyframe at `time` seconds and `position` in metres.
        public init(time: Double, position: Position) {
            self.time = time
            self.position = position
        }
    }

    /// At least two, in increasing time.
    public var keyframes: [Keyframe]
    /// Whether the path starts over after its last keyframe.
    public var repeats: Bool

    /// Makes a path from at least two keyframes in increasing time; fewer than two is a programming error.
    public init(keyframes: [Keyframe], repeats: Bool) {
        precondition(keyframes.count >= 2, "a motion path needs two keyframes")
        self.keyframes = keyframes
        self.repeats = repeats
    }

    /// The position at `time` seconds: the first keyframe's before it, the last one's after it
    /// unless the path repeats, and linear between keyframes.
    public func position(at time: Double) -> Position {
        let first = keyframes[0], last = keyframes[keyframes.count - 1]
        var t = time
        if repeats && t > last.time && last.time > first.time {
            t = first.time + (t - first.time).truncatingRemainder(dividingBy: last.time - first.time)
        }
        if t <= first.time { return first.position }
        if t >= last.time { return last.position }
        let next = keyframes.firstIndex { $0.time > t }!
        let a = keyframes[next - 1], b = keyframes[next]
        let fraction = (t - a.time) / (b.time - a.time)
        return a.position + (b.position - a.position) * fraction
    }
}
