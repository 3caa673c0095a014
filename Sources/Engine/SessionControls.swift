import AudioCore
import Scene
import Spatial

/// What a source is told while the room plays. Every renderer that plays
/// the source reads it each block, whatever kind of source it is.
public struct SourceState: Sendable, Equatable, BitwiseCopyable {
    /// Linear gain.
    public var gain: Double
    /// The gain in dB to a hundredth, as `status` and scene files give it.
    public var gainDecibels: Double { (Level.decibels(fromLinear: gain) * 100).rounded() / 100 }
    /// False: silent until played.
    public var playing: Bool
    /// Timeline frame of its audio's first sample: the scene's start, or
    /// when it was last played.
    public var startFrame: Int
    /// The last live move, which takes over from the scene's placement.
    public var glide: Glide?

    public init(gain: Double, playing: Bool, startFrame: Int, glide: Glide? = nil) {
        self.gain = gain
        self.playing = playing
        self.startFrame = startFrame
        self.glide = glide
    }

    /// A source as its scene entry starts it.
    public init(_ description: SourceDescription) {
        self.init(gain: Level.linear(fromDecibels: description.gainDecibels), playing: description.playing,
                  startFrame: Int((description.start * Double(Room.sampleRate)).rounded()))
    }
}

/// Where the listener is and how it is turned.
public struct ListenerState: Sendable, Equatable, BitwiseCopyable {
    public var position: Position
    public var orientation: Orientation

    public init(position: Position, orientation: Orientation) {
        self.position = position
        self.orientation = orientation
    }
}

/// A room's parameter plane: one latest-wins slot per source and one for
/// the listener, made before anything renders and shared by every
/// renderer of the room, so a renderer made for a new route reads what
/// the old one read and no change is lost between them.
///
/// Control threads write (`update`, `listener.update`); the render
/// thread reads.
public final class SessionControls: @unchecked Sendable {
    public let listener: ParameterSlot<ListenerState>
    private let sources: [ParameterSlot<SourceState>]
    /// Source ids to their slots.
    private let slots: [String: Int]

    public init(room: Room) {
        listener = ParameterSlot(ListenerState(position: room.scene.listenerPosition, orientation: room.scene.listenerOrientation))
        sources = room.sources.map { ParameterSlot(SourceState($0.description)) }
        slots = Dictionary(room.sources.enumerated().map { ($1.description.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The slot of source `id`, which every renderer of the room reads.
    func slot(of id: String) -> Int? { slots[id] }

    /// The source's state as last set. Control threads.
    public func state(of id: String) -> SourceState? { slot(of: id).map { sources[$0].latest } }

    /// Changes the source's state; false when the room has no source `id`. Control threads.
    @discardableResult
    public func update(_ id: String, _ change: (inout SourceState) -> Void) -> Bool {
        guard let slot = slot(of: id) else { return false }
        sources[slot].update(change)
        return true
    }

    /// The render thread's read of a slot.
    func load(slot: Int) -> SourceState { sources[slot].load() }

    /// The state a renderer starts from, read off the render thread.
    func initial(slot: Int) -> SourceState { sources[slot].latest }

    /// The listener as last set. Control threads.
    public var listenerState: ListenerState { listener.latest }
}
