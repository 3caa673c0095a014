import AudioCore
import Scene
import Spatial
import Synchronization

/// What a source is told while the room plays. Every renderer that plays
/// the source reads it each block, whatever kind of source it is.
public struct SourceState: Sendable, Equatable, BitwiseCopyable {
    /// Linear gain.
    public var gain: Double
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
/// Control threads write (`update`, `listener.store`); the render thread
/// reads. A slot is made for each of the room's sources.
public final class SessionControls: @unchecked Sendable {
    public let listener: ParameterSlot<ListenerState>
    private let sources: [ParameterSlot<SourceState>]
    /// Source ids to their slots, and the slots nobody holds yet.
    private let assigned = Mutex<(slots: [String: Int], free: [Int])>(([:], []))

    public init(room: Room) {
        listener = ParameterSlot(ListenerState(position: room.scene.listenerPosition, orientation: room.scene.listenerOrientation))
        let capacity = room.sources.count
        sources = (0..<capacity).map { _ in ParameterSlot(SourceState(gain: 1, playing: false, startFrame: 0)) }
        assigned.withLock { $0.free = Array((0..<capacity).reversed()) }
        for source in room.sources { _ = assign(source.description) }
    }

    /// The slot of source `id`, which every renderer of the room reads.
    func slot(of id: String) -> Int? { assigned.withLock { $0.slots[id] } }

    /// Gives the source a slot holding its scene entry's state; nil when
    /// every slot is taken.
    func assign(_ description: SourceDescription) -> Int? {
        let slot: Int? = assigned.withLock { table in
            if let slot = table.slots[description.id] { return slot }
            guard let slot = table.free.popLast() else { return nil }
            table.slots[description.id] = slot
            return slot
        }
        if let slot { sources[slot].store(SourceState(description)) }
        return slot
    }

    /// The source's state as last set. Control threads.
    public func state(of id: String) -> SourceState? { slot(of: id).map { sources[$0].latest } }

    /// Changes the source's state; false when the room has no source `id`. Control threads.
    @discardableResult
    public func update(_ id: String, _ change: (inout SourceState) -> Void) -> Bool {
        guard let slot = slot(of: id) else { return false }
        var state = sources[slot].latest
        change(&state)
        sources[slot].store(state)
        return true
    }

    /// The render thread's read of a slot.
    func load(slot: Int) -> SourceState { sources[slot].load() }

    /// The state a renderer starts from, read off the render thread.
    func initial(slot: Int) -> SourceState { sources[slot].latest }

    /// The listener as last set. Control threads.
    public var listenerState: ListenerState { listener.latest }
}
