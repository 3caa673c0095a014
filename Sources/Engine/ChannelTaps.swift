import AudioCore

/// One input channel added into one output channel with a gain.
struct ChannelTap {
    let input: Int
    let output: Int
    let gain: Float

    /// How a file's channels reach an output layout without spatialisation.
    ///
    /// - Mono reaches both front speakers at full level, so it sits in the
    ///   middle of the head on headphones; a mono output sums everything
    ///   at `1 / channels`.
    /// - A channel the output has goes to it unchanged. One it lacks folds:
    ///   side and back swap for each other; otherwise, like the centre and
    ///   the LFE, it goes to the front pair (or its side of it) at -3 dB,
    ///   rather than being dropped as OpenAL Soft 1.19's direct channels would.
    static func passthrough(channels: Int, to output: ChannelLayout) -> [ChannelTap] {
        if output == .mono {
            return (0..<channels).map { ChannelTap(input: $0, output: 0, gain: 1 / Float(channels)) }
        }
        let speakers = output.speakers
        func index(_ speaker: Speaker) -> Int? { speakers.firstIndex(of: speaker) }
        let left = index(.frontLeft)!, right = index(.frontRight)!
        if channels == 1 {
            return [ChannelTap(input: 0, output: left, gain: 1), ChannelTap(input: 0, output: right, gain: 1)]
        }
        let input = [ChannelLayout.stereo, .quad, .surround51, .surround71].first { $0.channelCount == channels }!
        let fold = Float(0.5.squareRoot())
        return input.speakers.enumerated().flatMap { channel, speaker -> [ChannelTap] in
            if let direct = index(speaker) { return [ChannelTap(input: channel, output: direct, gain: 1)] }
            switch speaker {
            case .sideLeft where index(.backLeft) != nil: return [ChannelTap(input: channel, output: index(.backLeft)!, gain: 1)]
            case .backLeft where index(.sideLeft) != nil: return [ChannelTap(input: channel, output: index(.sideLeft)!, gain: 1)]
            case .sideRight where index(.backRight) != nil: return [ChannelTap(input: channel, output: index(.backRight)!, gain: 1)]
            case .backRight where index(.sideRight) != nil: return [ChannelTap(input: channel, output: index(.sideRight)!, gain: 1)]
            case .sideLeft, .backLeft: return [ChannelTap(input: channel, output: left, gain: fold)]
            case .sideRight, .backRight: return [ChannelTap(input: channel, output: right, gain: fold)]
            case .frontCenter, .lowFrequency, .frontLeft, .frontRight:
                return [ChannelTap(input: channel, output: left, gain: fold), ChannelTap(input: channel, output: right, gain: fold)]
            }
        }
    }

    /// How a bus rendered in `layout` reaches an output layout: itself, or
    /// two ears (HRTF) onto the front pair or a mono sum.
    static func bus(_ layout: ChannelLayout, to output: ChannelLayout) -> [ChannelTap]? {
        if layout == output { return nil }
        precondition(layout == .stereo, "only two-ear buses are laid onto other layouts")
        if output == .mono { return [ChannelTap(input: 0, output: 0, gain: 0.5), ChannelTap(input: 1, output: 0, gain: 0.5)] }
        let speakers = output.speakers
        return [ChannelTap(input: 0, output: speakers.firstIndex(of: .frontLeft)!, gain: 1),
                ChannelTap(input: 1, output: speakers.firstIndex(of: .frontRight)!, gain: 1)]
    }
}

/// A file played as it is, head-locked: its channels tapped onto the output's.
final class PassthroughVoice {
    let samples: [Float]
    let channels: Int
    let frames: Int
    let taps: [ChannelTap]
    /// Frames it waits, to stay aligned with the buses' latency.
    let latency: Int
    /// Output frame of its first sample.
    @exclusivity(unchecked) private var startFrame: Int
    @exclusivity(unchecked) private var playing: Bool
    let loop: Bool
    /// The source's gain, the share its direct path keeps, and the gain
    /// the last block ended on, from which the next ramps.
    @exclusivity(unchecked) private var gain: Double
    private let scale: Double
    @exclusivity(unchecked) private var appliedGain: Float
    /// Obstruction and occlusion, one filter per channel; nil leaves the file bit-exact.
    @exclusivity(unchecked) private var shelves: [HighShelfFilter]?
    @exclusivity(unchecked) private var frame: [Float]

    /// - Parameter directPathHF: the direct path's gain above 5 kHz, from
    ///   obstruction and occlusion; 1 leaves it alone.
    init(samples: [Float], channels: Int, frames: Int, taps: [ChannelTap], latency: Int, startFrame: Int, playing: Bool,
         loop: Bool, gain: Double, scale: Double, directPathHF: Double = 1) {
        self.samples = samples
        self.channels = channels
        self.frames = frames
        self.taps = taps
        self.latency = latency
        self.startFrame = startFrame + latency
        self.playing = playing
        self.loop = loop
        self.gain = gain
        self.scale = scale
        appliedGain = Float(gain * scale)
        if directPathHF < 1 {
            shelves = [HighShelfFilter](repeating: HighShelfFilter(gainHF: directPathHF, sampleRate: Double(Room.sampleRate)),
                                        count: channels)
        }
        frame = [Float](repeating: 0, count: channels)
    }

    /// Takes the source's live state: a gain ramps over the next block, a play or stop is at once.
    func set(_ state: SourceState) {
        gain = state.gain
        startFrame = state.startFrame + latency
        playing = state.playing
    }

    /// Adds the frames `from ..< from + count` of the output's timeline into `output`.
    func mix(into output: UnsafeMutableBufferPointer<Float>, outputChannels: Int, from: Int, count: Int) {
        let start = appliedGain, end = Float(gain * scale)
        appliedGain = end
        guard playing else { return }
        samples.withUnsafeBufferPointer { source in
            for offset in 0..<count {
                var position = from + offset - startFrame
                if position < 0 { continue }
                if position >= frames {
                    if !loop { return }
                    position %= frames
                }
                let level = start + (end - start) * Float(offset + 1) / Float(count)
                if shelves != nil {
                    for channel in 0..<channels { frame[channel] = shelves![channel].process(source[position * channels + channel]) }
                    for tap in taps { output[offset * outputChannels + tap.output] += frame[tap.input] * tap.gain * level }
                } else {
                    for tap in taps {
                        output[offset * outputChannels + tap.output] += source[position * channels + tap.input] * tap.gain * level
                    }
                }
            }
        }
    }
}
