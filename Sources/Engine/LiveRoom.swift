import AudioCore
import Scene
import Spatial
import Synchronization

/// A room playing in real time: the render side of the daemon.
///
/// One thread at a time renders: the sound server's playback callback, or
/// the room's own clock while there is no server. Continuous values reach
/// it through the engine's parameter slots (`SessionControls`) and the
/// mute slot here; discrete commands through a ring that never drops (a
/// full ring hands the command back to its sender); events and finished
/// objects leave through rings. Whatever allocates (renderers, engines,
/// files) is made before it is sent, and what the room is done with goes
/// back to be freed off this thread.
public final class LiveRoom: @unchecked Sendable {
    /// A discrete change for the render side, applied at the start of its next block.
    public enum Command {
        /// How deep the scene ducks, and whether only as far as voices need.
        case ducking(depthDecibels: Double, advanced: Bool)
        /// Echo cancellation on or off, and why, for the event it posts.
        case echoCancellation(Bool, reason: String)
        /// Plays the room's prompt at `index` in the style the advisor allows.
        case prompt(index: Int)
        /// Renderers made to take over at `frame`, for a route or a change the playing ones cannot take in place.
        case crossfade(RoomEngine.Renderers, atFrame: Int, routeChange: (from: OutputRoute, to: OutputRoute)?)
        /// A whole new engine: a new scene, or an output with other channels.
        case engine(RoomEngine)
        /// Takes the microphone from this source, or with nil from the room's own.
        case microphone(AudioSource?)
        /// Plays the room into this sink as well as the device, or with nil no longer.
        case sink(AudioSink?)
    }

    /// What the render side hands back to be freed, or to be tried again.
    public enum Returned {
        /// A renderer faded out.
        case renderer(RoomRenderer)
        /// An engine replaced.
        case engine(RoomEngine)
        /// A microphone replaced.
        case source(AudioSource)
        /// A sink replaced.
        case sink(AudioSink)
        /// Renderers whose frame had passed when they arrived, with the
        /// route change they carried: it has not happened.
        case late(RoomEngine.Renderers, routeChange: (from: OutputRoute, to: OutputRoute)?)
        /// Renderers a new engine took the place of before they played.
        case superseded(RoomEngine.Renderers)
    }

    /// The microphone's mute, latest wins: read before every block, so a
    /// `mute on` can never be queued behind anything or lost.
    public func setMuted(_ muted: Bool) { mutedSlot.store(muted, ordering: .releasing) }

    /// How late the microphone hears the output, latest wins; see `RoomEngine.referenceDelayFrames`.
    public func setReferenceDelay(frames: Int) { referenceDelaySlot.store(frames, ordering: .releasing) }

    /// Discrete changes, control side to render side.
    public let commands = MessageRing<Command>(capacity: 256)
    /// Events, render side to control side.
    public let events = MessageRing<EngineEvent>(capacity: 4_096)
    /// What the render side is done with, to be freed on the control side.
    public let returned = MessageRing<Returned>(capacity: 256)

    /// The engine's frame, for the control side to time what it sends.
    public var frame: Int { stamp.frame }
    /// The engine's frame and the epoch it counts in, read together so an
    /// event the control side posts while a new scene starts is stamped
    /// with the room it happened in.
    public var stamp: (frame: Int, epoch: Int) {
        let packed = published.load(ordering: .acquiring)
        return (packed & Self.frameMask, (packed >> Self.epochShift) & Self.epochMask)
    }
    /// The output's channels now.
    public var channelCount: Int { publishedChannels.load(ordering: .acquiring) }
    /// Events dropped because nobody drained them in time.
    public var droppedEvents: Int { dropped.load(ordering: .relaxed) }

    @exclusivity(unchecked) private var engine: RoomEngine
    @exclusivity(unchecked) private var pending: (renderers: RoomEngine.Renderers, frame: Int, routeChange: (from: OutputRoute, to: OutputRoute)?)?
    /// The engine's last block and how much of it the output has taken.
    @exclusivity(unchecked) private var block: UnsafeBufferPointer<Float>
    @exclusivity(unchecked) private var blockPosition: Int
    /// The frame in the low 48 bits (1,600 years at 48 kHz), the epoch above.
    private let published = Atomic<Int>(0)
    private static let epochShift = 48
    private static let frameMask = (1 << epochShift) - 1
    /// Fifteen bits, so the packed value stays positive.
    static let epochMask = (1 << 15) - 1
    private let publishedChannels = Atomic<Int>(0)
    private let dropped = Atomic<Int>(0)
    private let mutedSlot = Atomic<Bool>(false)
    private let referenceDelaySlot = Atomic<Int>(0)
    /// A block of silence for the output's widest layout, played when a block fails.
    private let silence: UnsafeMutableBufferPointer<Float>

    /// The render side of a room that `engine` plays from its first block.
    public init(engine: RoomEngine) {
        self.engine = engine
        silence = .allocate(capacity: RoomEngine.blockFrames * ChannelLayout.surround71.channelCount)
        silence.initialize(repeating: 0)
        block = UnsafeBufferPointer(start: nil, count: 0)
        blockPosition = 0
        publish(engine)
        publishedChannels.store(engine.channelCount, ordering: .releasing)
        mutedSlot.store(engine.muted, ordering: .relaxed)
        referenceDelaySlot.store(engine.referenceDelayFrames, ordering: .relaxed)
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
                returned.send(.late(renderers, routeChange: change))
            }
        }
        do {
            block = try engine.renderBlock()
        } catch {
            block = UnsafeBufferPointer(rebasing: silence[0..<(RoomEngine.blockFrames * engine.channelCount)])
        }
        blockPosition = 0
        engine.drainEvents { event in
            var event = event
            event.epoch = engine.epoch
            // Matched, not compared: comparing optionals makes the runtime build a type on first use, allocating.
            if case .some = events.send(event) { dropped.add(1, ordering: .relaxed) }
        }
        publish(engine)
    }

    private func applyCommands() {
        let muted = mutedSlot.load(ordering: .acquiring)
        if engine.muted != muted { engine.muted = muted }
        let delay = referenceDelaySlot.load(ordering: .acquiring)
        if engine.referenceDelayFrames != delay { engine.referenceDelayFrames = delay }
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
        case .ducking(let depth, let advanced):
            engine.ducker.depthDecibels = depth
            engine.ducker.advanced = advanced
        case .echoCancellation(let on, let reason): engine.setEchoCancellation(on, reason: reason)
        case .prompt(let index): engine.triggerPrompt(index: index)
        case .crossfade(let renderers, let frame, let change):
            if let (old, _, _) = pending { returned.send(.superseded(old)) }
            pending = (renderers, frame, change)
        case .engine(let next):
            returned.send(.engine(engine))
            if let (old, _, change) = pending {
                // A load came before the route change's renderers played: the
                // route changed all the same, and the new room plays on it.
                if let change, next.epoch != engine.epoch {
                    let kind = EngineEvent.Kind.routeChanged(from: change.from, to: change.to, algorithm: change.to.automaticAlgorithm)
                    if case .some = events.send(EngineEvent(frame: engine.framesRendered, kind: kind, epoch: engine.epoch)) {
                        dropped.add(1, ordering: .relaxed)
                    }
                }
                returned.send(.superseded(old))
            }
            pending = nil
            engine = next
            publishedChannels.store(next.channelCount, ordering: .releasing)
            publish(next)
        case .microphone(let source):
            if let old = engine.swapAudioSource(source) { returned.send(.source(old)) }
        case .sink(let sink):
            if let old = engine.swapAudioSink(sink) { returned.send(.sink(old)) }
        }
    }

    private func publish(_ engine: RoomEngine) {
        published.store(engine.framesRendered | engine.epoch << Self.epochShift, ordering: .releasing)
    }

    deinit { silence.deallocate() }

    /// Makes `engine` hand what it is done with back through `returned`;
    /// for an engine about to be sent, before it is sent.
    public func adopt(_ engine: RoomEngine) {
        engine.retire = { [returned] renderer in returned.send(.renderer(renderer)) }
    }
}
