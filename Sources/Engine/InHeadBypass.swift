import AudioCore
import Scene
import Spatial

/// The bypass copy of a point source with `inHead: bypass`: its audio as it
/// is, on both ears or front speakers, which takes over from the spatial
/// render while the source is inside the head radius. Crossing the radius
/// crossfades the two over 150 ms, at complementary gains, so the level
/// holds through the switch.
final class InHeadBypass {
    static let crossfadeFrames = 7_200

    /// What renders the source spatially, whose share falls as the copy's rises.
    enum SpatialPart {
        case openAL(PointSource)
        case field(SoundFieldBus, emitter: Int)
    }

    @exclusivity(unchecked) private var signal: TimelineSamples
    /// Frames the copy waits, as passthrough does, to stay with the buses.
    private let latency: Int
    @exclusivity(unchecked) private var motion: SourceMotion
    @exclusivity(unchecked) var listenerPosition: Position
    /// The source's own gain, linear, now and over the last block.
    @exclusivity(unchecked) private var gain: Double
    @exclusivity(unchecked) private var previousGain: Double
    private let taps: [ChannelTap]
    private let spatial: SpatialPart
    /// The copy's share now: 0 outside the head, 1 inside.
    @exclusivity(unchecked) private var share: Double
    @exclusivity(unchecked) private var previousShare: Double
    @exclusivity(unchecked) private var scratch = [Float](repeating: 0, count: RoomRenderer.maximumCallFrames)

    /// - Parameters:
    ///   - signal: the source's audio on the timeline.
    ///   - latency: the buses' latency, which the copy waits out like passthrough.
    ///   - gain: the source's own gain, linear.
    init(signal: TimelineSamples, latency: Int, motion: SourceMotion, listenerPosition: Position, gain: Double,
         output: ChannelLayout, spatial: SpatialPart, at frame: Int) throws {
        var signal = signal
        signal.startFrame += latency
        self.signal = signal
        self.latency = latency
        self.motion = motion
        self.listenerPosition = listenerPosition
        self.gain = gain
        previousGain = gain
        taps = ChannelTap.passthrough(channels: 1, to: output)
        self.spatial = spatial
        share = Self.isInside(motion, listenerPosition, at: frame) ? 1 : 0
        previousShare = share
        try applySpatialShare()
    }

    /// Moves the crossfade on by `frameCount` frames from `frame` and hands
    /// the spatial render its share; call before the buses render them.
    func advance(from frame: Int, count frameCount: Int) throws {
        previousShare = share
        let step = Double(frameCount) / Double(Self.crossfadeFrames)
        share = Self.isInside(motion, listenerPosition, at: frame) ? min(1, share + step) : max(0, share - step)
        if share != previousShare { try applySpatialShare() }
    }

    /// Takes the source's live state: its gain for both parts, a move, a play or stop.
    func set(_ state: SourceState) throws {
        motion.glide = state.glide
        signal.follow(state, delayedBy: latency)
        if state.gain != gain {
            gain = state.gain
            try applySpatialShare()
        }
    }

    /// Adds the copy's share of the frames `advance` moved over into
    /// `output`, ramped across them as OpenAL ramps the spatial share.
    func mix(into output: UnsafeMutableBufferPointer<Float>, outputChannels: Int, from frame: Int, count frameCount: Int) {
        let (before, after) = (previousShare, share)
        let (fromGain, toGain) = (previousGain, gain)
        previousGain = gain
        guard before > 0 || after > 0 else { return }
        scratch.withUnsafeMutableBufferPointer { scratch in
            let block = UnsafeMutableBufferPointer(rebasing: scratch[0..<frameCount])
            signal.read(into: block, from: frame)
            for offset in 0..<frameCount {
                let progress = Double(offset + 1) / Double(frameCount)
                let ramp = Float((before + (after - before) * progress) * (fromGain + (toGain - fromGain) * progress))
                let sample = block[offset] * ramp
                for tap in taps { output[offset * outputChannels + tap.output] += sample * tap.gain }
            }
        }
    }

    private static func isInside(_ motion: SourceMotion, _ listenerPosition: Position, at frame: Int) -> Bool {
        let offset = motion.position(at: frame) - listenerPosition
        return (offset * offset).sum().squareRoot() < PointSource.headRadius
    }

    private func applySpatialShare() throws {
        switch spatial {
        case .openAL(let source): try source.setGain(linear: gain * (1 - share))
        case .field(let bus, let emitter): bus.setSpatialShare(1 - share, of: emitter)
        }
    }
}
