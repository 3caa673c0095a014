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

    private let signal: TimelineSamples
    private let placement: Placement
    private let listenerPosition: Position
    /// The source's own gain, linear.
    private let gain: Double
    private let taps: [ChannelTap]
    private let spatial: SpatialPart
    /// The copy's share now: 0 outside the head, 1 inside.
    private var share: Double
    private var previousShare: Double
    private var olderShare: Double
    private var scratch = [Float](repeating: 0, count: RoomRenderer.maximumCallFrames)

    /// - Parameters:
    ///   - signal: the source's audio on the timeline, delayed like passthrough
    ///     by the buses' latency.
    ///   - gain: the source's own gain, linear.
    init(signal: TimelineSamples, placement: Placement, listenerPosition: Position, gain: Double,
         output: ChannelLayout, spatial: SpatialPart, at frame: Int) throws {
        self.signal = signal
        self.placement = placement
        self.listenerPosition = listenerPosition
        self.gain = gain
        taps = ChannelTap.passthrough(channels: 1, to: output)
        self.spatial = spatial
        share = Self.isInside(placement, listenerPosition, at: frame) ? 1 : 0
        previousShare = share
        olderShare = share
        try applySpatialShare()
    }

    /// Moves the crossfade on by `frameCount` frames from `frame` and hands
    /// the spatial render its share; call before the buses render them.
    func advance(from frame: Int, count frameCount: Int) throws {
        olderShare = previousShare
        previousShare = share
        let step = Double(frameCount) / Double(Self.crossfadeFrames)
        share = Self.isInside(placement, listenerPosition, at: frame) ? min(1, share + step) : max(0, share - step)
        if share != previousShare { try applySpatialShare() }
    }

    /// Adds the copy's share of the frames `advance` moved over into
    /// `output`, ramped across them as OpenAL ramps the spatial share.
    func mix(into output: UnsafeMutableBufferPointer<Float>, outputChannels: Int, from frame: Int, count frameCount: Int) {
        // The field encodes a block ahead, so its share lags one block: the copy lags with it.
        let (before, after) = if case .field = spatial { (olderShare, previousShare) } else { (previousShare, share) }
        guard before > 0 || after > 0 else { return }
        scratch.withUnsafeMutableBufferPointer { scratch in
            let block = UnsafeMutableBufferPointer(rebasing: scratch[0..<frameCount])
            signal.read(into: block, from: frame)
            for offset in 0..<frameCount {
                let ramp = Float(before + (after - before) * Double(offset + 1) / Double(frameCount))
                let sample = block[offset] * Float(gain) * ramp
                for tap in taps { output[offset * outputChannels + tap.output] += sample * tap.gain }
            }
        }
    }

    private static func isInside(_ placement: Placement, _ listenerPosition: Position, at frame: Int) -> Bool {
        let offset = placement.position(at: Double(frame) / Double(Room.sampleRate)) - listenerPosition
        return (offset * offset).sum().squareRoot() < PointSource.headRadius
    }

    private func applySpatialShare() throws {
        switch spatial {
        case .openAL(let source): try source.setGain(linear: gain * (1 - share))
        case .field(let bus, let emitter): bus.setSpatialShare(1 - share, of: emitter)
        }
    }
}
