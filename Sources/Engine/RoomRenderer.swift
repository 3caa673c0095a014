import AudioCore
import Scene
import Spatial

/// Renders a room through OpenAL Soft on the engine's own clock.
///
/// The clock is the count of frames rendered. Sources start on the exact
/// frame their start time names: a block that contains a start is rendered
/// in two parts around it. Moving sources take their position at the start
/// of each call, so callers render in 10 ms blocks to move smoothly.
public final class RoomRenderer {
    /// The engine's block: 10 ms at 48 kHz.
    public static let blockFrames = 480

    public let room: Room
    public let route: OutputRoute
    public var algorithm: RenderAlgorithm { mixer.algorithm }
    public var layout: ChannelLayout { mixer.layout }
    public var channelCount: Int { mixer.channelCount }
    public var hrtfName: String? { mixer.hrtfName }
    public var sampleRate: Int { Room.sampleRate }
    public private(set) var framesRendered = 0

    private let mixer: SpatialMixer
    private let voices: [Voice]
    /// Indices into `voices` in start order; `nextStart` is the first not yet started.
    private let startOrder: [Int]
    private var nextStart = 0

    private enum Renderable {
        case point(PointSource, Placement)
        case bed(AmbienceBed)
        case speakerBed(SpeakerBed)
    }

    private struct Voice {
        let renderable: Renderable
        let startFrame: Int

        func play() throws {
            switch renderable {
            case .point(let source, _): try source.play()
            case .bed(let bed): try bed.play()
            case .speakerBed(let bed): try bed.play()
            }
        }
    }

    /// - Parameter route: overrides the scene's route when given.
    public init(room: Room, route: OutputRoute? = nil) throws {
        self.room = room
        let scene = room.scene
        self.route = (route ?? scene.route).resolved()
        mixer = try SpatialMixer(route: self.route, sampleRate: Room.sampleRate)
        try mixer.setDistanceModel(scene.distance)
        if let reverb = scene.reverb { try mixer.setReverb(reverb.preset, levelDecibels: reverb.levelDecibels) }
        try mixer.setListener(position: scene.listenerPosition, orientation: scene.listenerOrientation)

        var voices: [Voice] = []
        for source in room.sources {
            let description = source.description
            let gain = Level.linear(fromDecibels: description.gainDecibels)
            let renderable: Renderable
            switch description.mode {
            case .point:
                let point = try mixer.makePointSource(mono: source.audio.samples, distance: scene.distance)
                try point.setPosition(description.placement.position(at: description.start))
                try point.setGain(linear: gain)
                try point.setLooping(description.loop)
                try point.setRate(description.rate)
                let paths = description.paths
                try point.setRoomEffects(reverbBlend: paths.reverbBlend, obstruction: paths.obstruction, occlusion: paths.occlusion)
                renderable = .point(point, description.placement)
            case .bed:
                switch source.bedLayout {
                case .ambisonic(order: 1)?:
                    // OpenAL Soft decodes first order itself, through its own B-Format path.
                    let bed = try mixer.makeAmbienceBed(ambiX: source.audio, orientation: description.orientation)
                    try bed.setGain(linear: gain)
                    try bed.setLooping(description.loop)
                    try bed.setRate(description.rate)
                    renderable = .bed(bed)
                case let layout?:
                    let bed = switch layout {
                    case .ambisonic(let order):
                        try mixer.makeAmbisonicBed(ambiX: source.audio, order: order, orientation: description.orientation)
                    case .channels(let channels):
                        try mixer.makeChannelBed(source.audio, layout: channels, orientation: description.orientation)
                    }
                    try bed.setGain(linear: gain)
                    try bed.setLooping(description.loop)
                    try bed.setRate(description.rate)
                    renderable = .speakerBed(bed)
                case nil:
                    preconditionFailure("a bed's layout is resolved when its room loads")
                }
            }
            voices.append(Voice(renderable: renderable, startFrame: Int((description.start * Double(Room.sampleRate)).rounded())))
        }
        self.voices = voices
        startOrder = voices.indices.sorted { voices[$0].startFrame < voices[$1].startFrame }
    }

    /// Renders the next `frameCount` frames, interleaved, into `output`.
    public func render(into output: UnsafeMutableBufferPointer<Float>, frameCount: Int) throws {
        precondition(output.count >= frameCount * channelCount, "output block too small")
        try updateMotion(at: Double(framesRendered) / Double(Room.sampleRate))
        var done = 0
        while done < frameCount {
            try startVoicesDue(at: framesRendered)
            var part = frameCount - done
            if nextStart < startOrder.count {
                part = min(part, voices[startOrder[nextStart]].startFrame - framesRendered)
            }
            let slice = UnsafeMutableBufferPointer(rebasing: output[(done * channelCount)..<((done + part) * channelCount)])
            mixer.render(into: slice, frameCount: part)
            done += part
            framesRendered += part
        }
        OutputGuard.sanitize(UnsafeMutableBufferPointer(rebasing: output[0..<(frameCount * channelCount)]))
    }

    /// Renders `seconds` of audio from the current position into a new buffer.
    public func render(seconds: Double) throws -> AudioBuffer {
        let total = Int((seconds * Double(Room.sampleRate)).rounded())
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

    private func startVoicesDue(at frame: Int) throws {
        while nextStart < startOrder.count, voices[startOrder[nextStart]].startFrame <= frame {
            try voices[startOrder[nextStart]].play()
            nextStart += 1
        }
    }

    private func updateMotion(at time: Double) throws {
        for voice in voices {
            if case .point(let source, .moving(let path)) = voice.renderable {
                try source.setPosition(path.position(at: time))
            }
        }
    }
}
