import AudioCore
import Scene
import Spatial
import Synchronization

/// A room playing in real time: the render side of the daemon.
///
/// One thread at a time renders: the sound server's playback callback, or
/// the room's own clock while there is no server. Everything else talks to
/// it through rings: commands in, events and finished objects out. Whatever
/// allocates (opening renderers, engines, files) is made before it is sent,
/// and what the room is done with goes back to be freed off this thread.
public final class LiveRoom: @unchecked Sendable {
    public enum Command {
        case glide(RoomEngine.SourceAddress, Glide)
        case gain(RoomEngine.SourceAddress, linear: Double)
        case play(RoomEngine.SourceAddress)
        case stop(RoomEngine.SourceAddress)
        case listener(Position, Orientation)
        case ducking(depthDecibels: Double, advanced: Bool)
        case mute(Bool)
        case echoCancellation(Bool, reason: String)
        case prompt(index: Int)
        /// Renderers made to take over at `frame`, for a route or a change the playing ones cannot take in place.
        case crossfade(RoomEngine.Renderers, atFrame: Int, routeChange: (from: OutputRoute, to: OutputRoute)?)
        /// A whole new engine: a new scene, or an output with other channels.
        case engine(RoomEngine)
        case microphone(AudioSource?)
        case sink(AudioSink?)
        case referenceDelay(frames: Int)
    }

    /// What the render side hands back to be freed, or to be tried again.
    public enum Returned {
        case renderer(RoomRenderer)
        case engine(RoomEngine)
        case source(AudioSource)
        case sink(AudioSink)
        /// Renderers whose frame had passed when they arrived.
        case late(RoomEngine.Renderers)
    }

    public let commands = MessageRing<Command>(capacity: 256)
    public let events = MessageRing<EngineEvent>(capacity: 4_096)
    public let returned = MessageRing<Returned>(capacity: 256)

    /// The engine's frame, for the control side to time what it sends.
    public var frame: Int { published.load(ordering: .acquiring) }
    /// The output's channels now.
    public var channelCount: Int { publishedChannels.load(ordering: .acquiring) }
    /// Events dropped because nobody drained them in time.
    public var droppedEvents: Int { dropped.load(ordering: .relaxed) }

    private var engine: RoomEngine
    private var pending: (renderers: RoomEngine.Renderers, frame: Int, routeChange: (from: OutputRoute, to: OutputRoute)?)?
    /// The engine's last block and how much of it the output has taken.
    private var block: UnsafeBufferPointer<Float>
    private var blockPosition: Int
    private let published = Atomic<Int>(0)
    private let publishedChannels = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)
    /// A block of silence for the output's widest layout, played when a block fails.
    private let silence: UnsafeMutableBufferPointer<Float>

    public init(engine: RoomEngine) {
        self.engine = engine
        silence = .allocate(capacity: RoomEngine.blockFrames * ChannelLayout.surround71.channelCount)
        silence.initialize(repeating: 0)
        block = UnsafeBufferPointer(start: nil, count: 0)
        blockPosition = 0
        published.store(engine.framesRendered, ordering: .releasing)
        publishedChannels.store(engine.channelCount, ordering: .releasing)
        adopt(engine)
    }

    /// Fills `output`, interleaved in `channels`, with the room. Between
    /// an engine of other channels arriving and the output following it,
    /// the output gets silence and the room waits.
    public func render(into output: UnsafeMutableBufferPointer<Float>, channels: Int) {
        var filled = 0
        while filled < output.count {
            if blockPosition == block.count {
                applyCommands()
                guard engine.channelCount == channels else {
                    for index in filled..<output.count { output[index] = 0 }
                    return
                }
                renderBlock()
            }
            let count = min(output.count - filled, block.count - blockPosition)
            for index in 0..<count { output[filled + index] = block[blockPosition + index] }
            filled += count
            blockPosition += count
        }
    }

    /// Renders one engine block; on a failure the block is silence and the room goes on.
    private func renderBlock() {
        if let (renderers, frame, change) = pending, frame <= engine.framesRendered {
            pending = nil
            if frame == engine.framesRendered {
                engine.crossfade(to: renderers)
                if let change { engine.post(.routeChanged(from: change.from, to: change.to, algorithm: change.to.automaticAlgorithm)) }
            } else {
                returned.send(.late(renderers))
            }
        }
        do {
            block = try engine.renderBlock()
        } catch {
            block = UnsafeBufferPointer(rebasing: silence[0..<(RoomEngine.blockFrames * engine.channelCount)])
        }
        blockPosition = 0
        engine.drainEvents { event in
            if !events.send(event) { dropped.add(1, ordering: .relaxed) }
        }
        published.store(engine.framesRendered, ordering: .releasing)
    }

    private func applyCommands() {
        while let command = commands.receive() {
            do {
                try apply(command)
            } catch {
                // An OpenAL call refused on a device that is still playing: the room goes on without that change.
            }
        }
    }

    private func apply(_ command: Command) throws {
        switch command {
        case .glide(let address, let glide): engine.renderer(for: address).glide(source: address.index, glide)
        case .gain(let address, let gain): try engine.renderer(for: address).setGain(source: address.index, linear: gain)
        case .play(let address): try engine.renderer(for: address).play(source: address.index)
        case .stop(let address): try engine.renderer(for: address).stop(source: address.index)
        case .listener(let position, let orientation): try engine.setListener(position: position, orientation: orientation)
        case .ducking(let depth, let advanced):
            engine.ducker.depthDecibels = depth
            engine.ducker.advanced = advanced
        case .mute(let muted): engine.muted = muted
        case .echoCancellation(let on, let reason): engine.setEchoCancellation(on, reason: reason)
        case .prompt(let index): _ = engine.triggerPrompt(index: index)
        case .crossfade(let renderers, let frame, let change):
            if let (old, _, _) = pending { returned.send(.late(old)) }
            pending = (renderers, frame, change)
        case .engine(let next):
            returned.send(.engine(engine))
            if let (old, _, _) = pending { returned.send(.late(old)) }
            pending = nil
            engine = next
            publishedChannels.store(next.channelCount, ordering: .releasing)
            published.store(next.framesRendered, ordering: .releasing)
        case .microphone(let source):
            if let old = engine.swapAudioSource(source) { returned.send(.source(old)) }
        case .sink(let sink):
            if let old = engine.swapAudioSink(sink) { returned.send(.sink(old)) }
        case .referenceDelay(let frames): engine.referenceDelayFrames = frames
        }
    }

    deinit { silence.deallocate() }

    /// Makes `engine` hand what it is done with back through `returned`;
    /// for an engine about to be sent, before it is sent.
    public func adopt(_ engine: RoomEngine) {
        engine.retire = { [returned] renderer in returned.send(.renderer(renderer)) }
    }
}

extension RoomEngine {
    /// Where the source `id` of `room` plays, when live changes reach it in
    /// place; nil when a change to it needs new renderers.
    public static func inPlaceAddress(of id: String, in room: Room, levelOfDetail: LevelOfDetail = .standard) -> SourceAddress? {
        for (talkers, mix) in [(false, room.only([.scene])), (true, room.only([.voice, .prompt]))] {
            guard let index = mix.sources.firstIndex(where: { $0.description.id == id }) else { continue }
            let source = mix.sources[index]
            guard source.rendersInPlace && !(mix.hasCrowd(levelOfDetail) && source.isCrowdCandidate) else { return nil }
            return SourceAddress(talkers: talkers, index: index)
        }
        return nil
    }

    /// Whether the listener of `room` moves in place: nothing the engine
    /// renders itself (a sound field, a crowd, an in-head copy) depends on it.
    public static func turnsInPlace(room: Room, levelOfDetail: LevelOfDetail = .standard) -> Bool {
        [room.only([.scene]), room.only([.voice, .prompt])].allSatisfy { mix in
            // Passthrough is head-locked: where the listener stands does not change it.
            !mix.hasCrowd(levelOfDetail) && mix.sources.allSatisfy { source in
                if case .passthrough = source.rendering { return true }
                return source.rendersInPlace
            }
        }
    }
}
