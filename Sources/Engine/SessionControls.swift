import AudioCore
import Scene
import Spatial
import Synchronization

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
    /// How it reaches the listener through the room.
    public var paths: RoomPaths
    /// Playback rate, which is also pitch.
    public var rate: Double
    /// Whether it starts again when its audio ends.
    public var loop: Bool

    /// A source's state as the render thread reads it.
    public init(gain: Double, playing: Bool, startFrame: Int, glide: Glide? = nil, paths: RoomPaths = .default,
                rate: Double = 1, loop: Bool = false) {
        self.gain = gain
        self.playing = playing
        self.startFrame = startFrame
        self.glide = glide
        self.paths = paths
        self.rate = rate
        self.loop = loop
    }

    /// A source as its scene entry starts it.
    public init(_ description: SourceDescription) {
        self.init(gain: Level.linear(fromDecibels: description.gainDecibels), playing: description.playing,
                  startFrame: Room.frame(atSeconds: description.start), paths: description.paths,
                  rate: description.rate, loop: description.loop)
    }
}

/// Where the listener is and how it is turned.
public struct ListenerState: Sendable, Equatable, BitwiseCopyable {
    /// Where the listener is, in metres.
    public var position: Position
    /// How the listener's head is turned.
    public var orientation: Orientation

    /// A listener at `position`, turned by `orientation`.
    public init(position: Position, orientation: Orientation) {
        self.position = position
        self.orientation = orientation
    }
}

/// A place for a source that joins the room while it plays, as the render
/// thread sees it: what it plays, if anything.
struct JoinedSource: BitwiseCopyable {
    /// Changes whenever the place is taken, given up or moved to another bus.
    var generation = 0
    /// The `SourceFeed`, unretained: the controls keep it alive until every renderer has let it go.
    var feed: UnsafeRawPointer?
    var rendering = JoinedRendering(bus: .route)
}

/// How a joined source renders, as the render thread reads it.
struct JoinedRendering: Equatable, BitwiseCopyable {
    var bus: JoinBus
    /// `inHead: bypass`: inside the head radius it is played as it is.
    var bypassesInHead = false
    /// `mode: bypass`: played as it is without the room's reverb or filters.
    var dry = false

    init(bus: JoinBus, bypassesInHead: Bool = false, dry: Bool = false) {
        self.bus = bus
        self.bypassesInHead = bypassesInHead
        self.dry = dry
    }

    /// How `description` renders with a file of `channels` channels.
    init(_ description: SourceDescription, channels: Int) {
        let rendering = description.rendering(channels: channels)
        let point = if case .point = rendering { true } else { false }
        self.init(bus: JoinBus(rendering), bypassesInHead: point && description.inHead == .bypass,
                  dry: description.mode == .bypass)
    }
}

/// How a joined source renders: on one of OpenAL's buses (every renderer
/// has one of each), panned into the engine's own field, or played as it is.
enum JoinBus: UInt8, BitwiseCopyable, CaseIterable {
    /// The route's own algorithm: what a point asking for none gets.
    case route
    case hrtf
    case panning
    /// A point or a bed in the engine's third-order field.
    case soundField
    /// The file's channels onto the output's, mixed by the engine.
    case passthrough

    /// How a source rendered as `rendering` joins.
    init(_ rendering: SourceRendering) {
        switch rendering {
        case .point(nil): self = .route
        case .point(.hrtf?): self = .hrtf
        case .point(.panning?): self = .panning
        case .point(.soundField?), .bed: self = .soundField
        case .passthrough: self = .passthrough
        }
    }

    /// The OpenAL algorithm it renders with on `route`; nil when the engine renders it itself.
    func algorithm(on route: OutputRoute) -> RenderAlgorithm? {
        switch self {
        case .route: route.automaticAlgorithm
        case .hrtf: .hrtf
        case .panning: .panning
        case .soundField, .passthrough: nil
        }
    }
}

/// A room's parameter plane: one latest-wins slot per source and one for
/// the listener, made before anything renders and shared by every
/// renderer of the room, so a renderer made for a new route reads what
/// the old one read and no change is lost between them.
///
/// Sources that join while the room plays take one of `joinCapacity`
/// places made with the rest. A place given up is taken again only once
/// every renderer has rendered a block without its audio, so the audio is
/// never freed on the render thread nor while it plays.
///
/// Control threads write (`update`, `listener.update`, `join`, `leave`);
/// the render thread reads.
public final class SessionControls: @unchecked Sendable {
    /// How many sources may join each mix while the room plays: the scene's, and the talkers'.
    public static let joinCapacityPerMix = 16
    /// Places for joining sources: the scene's first, then the talkers'.
    static let joinCapacity = 2 * joinCapacityPerMix

    /// The listener's slot: written by control threads, read every block.
    public let listener: ParameterSlot<ListenerState>
    /// The room's own sources, then the places for sources that join.
    private let sources: [ParameterSlot<SourceState>]
    private let joined: [ParameterSlot<JoinedSource>]
    /// The first place for a joining source, in `sources`.
    let firstJoined: Int
    private let registry: Mutex<Registry>
    /// Counts joins and leaves; the render side reports the last count it rendered a whole block with.
    private let changes = Atomic<Int>(0)
    private let rendered = Atomic<Int>(0)

    /// The control side's books: ids to slots, and the feeds the places hold or held.
    private struct Registry {
        var slots: [String: Int]
        var feeds: [SourceFeed?]
        /// Feeds given up, with the change count at which they were, kept until every renderer is past it.
        var leaving: [(place: Int, feed: SourceFeed, change: Int)] = []
        var generations: [Int]
    }

    /// Slots for `room`'s sources as their scene entries start them, its
    /// listener, and the places for sources that join.
    public init(room: Room) {
        listener = ParameterSlot(ListenerState(position: room.scene.listenerPosition, orientation: room.scene.listenerOrientation))
        firstJoined = room.sources.count
        sources = room.sources.map { ParameterSlot(SourceState($0.description)) }
            + (0..<Self.joinCapacity).map { _ in ParameterSlot(SourceState(gain: 0, playing: false, startFrame: 0)) }
        joined = (0..<Self.joinCapacity).map { _ in ParameterSlot(JoinedSource()) }
        let slots = Dictionary(room.sources.enumerated().map { ($1.description.id, $0) }, uniquingKeysWith: { first, _ in first })
        registry = Mutex(Registry(slots: slots, feeds: Array(repeating: nil, count: Self.joinCapacity),
                                  generations: Array(repeating: 0, count: Self.joinCapacity)))
    }

    /// The slot of source `id`, which every renderer of the room reads.
    func slot(of id: String) -> Int? { registry.withLock { $0.slots[id] } }

    /// The source's state as last set. Control threads.
    public func state(of id: String) -> SourceState? { slot(of: id).map { sources[$0].latest } }

    /// Changes the source's state; false when the room has no source `id`. Control threads.
    @discardableResult
    public func update(_ id: String, _ change: (inout SourceState) -> Void) -> Bool {
        guard let slot = slot(of: id) else { return false }
        sources[slot].update(change)
        return true
    }

    /// The listener as last set. Control threads.
    public var listenerState: ListenerState { listener.latest }

    // MARK: Sources that join and leave, on control threads

    /// Gives `feed` a place in the mix that plays `category` as source
    /// `id`, starting from `state`; nil when every place of the mix is
    /// taken or still waiting for the render side to let its last source go.
    func join(_ id: String, feed: SourceFeed, category: SourceCategory, state: SourceState, rendering: JoinedRendering) -> Int? {
        registry.withLock { books in
            collect(&books)
            let waiting = Set(books.leaving.map(\.place))
            let places = SourceMix(category).joinPlaces
            guard books.slots[id] == nil,
                  let place = places.first(where: { books.feeds[$0] == nil && !waiting.contains($0) }) else { return nil }
            books.feeds[place] = feed
            books.generations[place] += 1
            books.slots[id] = firstJoined + place
            sources[firstJoined + place].store(state)
            joined[place].store(JoinedSource(generation: books.generations[place],
                                             feed: UnsafeRawPointer(Unmanaged.passUnretained(feed).toOpaque()), rendering: rendering))
            changes.add(1, ordering: .releasing)
            return place
        }
    }

    /// Renders joined source `id` another way: it fades out of the one it
    /// played on and into `rendering` over the next block. False when it did not join.
    @discardableResult
    func move(_ id: String, to rendering: JoinedRendering) -> Bool {
        registry.withLock { books in
            guard let slot = books.slots[id], slot >= firstJoined, let feed = books.feeds[slot - firstJoined] else { return false }
            let place = slot - firstJoined
            books.generations[place] += 1
            joined[place].store(JoinedSource(generation: books.generations[place],
                                             feed: UnsafeRawPointer(Unmanaged.passUnretained(feed).toOpaque()), rendering: rendering))
            return true
        }
    }

    /// Takes source `id`'s place back; false when it did not join.
    @discardableResult
    func leave(_ id: String) -> Bool {
        registry.withLock { books in
            guard let slot = books.slots[id], slot >= firstJoined, let feed = books.feeds[slot - firstJoined] else { return false }
            let place = slot - firstJoined
            books.slots[id] = nil
            books.feeds[place] = nil
            books.generations[place] += 1
            joined[place].store(JoinedSource(generation: books.generations[place]))
            let change = changes.add(1, ordering: .releasing).newValue
            books.leaving.append((place, feed, change))
            return true
        }
    }

    /// Silences one of the room's own sources and frees its id at once; its
    /// slot stays for the renderers that still play it, and `stop(slot:)`
    /// stops it once its fade has played. Nil when `id` is not one of them.
    func detach(_ id: String) -> Int? {
        registry.withLock { books in
            guard let slot = books.slots[id], slot < firstJoined else { return nil }
            sources[slot].update { $0.gain = 0 }
            books.slots[id] = nil
            return slot
        }
    }

    /// Stops a detached source.
    func stop(slot: Int) { sources[slot].update { $0.playing = false } }

    /// Whether a source of `category` would find a place to join now.
    func hasPlace(for category: SourceCategory) -> Bool {
        registry.withLock { books in
            collect(&books)
            let waiting = Set(books.leaving.map(\.place))
            return SourceMix(category).joinPlaces.contains { books.feeds[$0] == nil && !waiting.contains($0) }
        }
    }

    /// Lets go of the feeds no renderer can still be reading.
    func collect() { registry.withLock { collect(&$0) } }

    private func collect(_ books: inout Registry) {
        let done = rendered.load(ordering: .acquiring)
        books.leaving.removeAll { $0.change <= done }
    }

    /// How many sources have left and are still held for the render side.
    var leavingCount: Int { registry.withLock { $0.leaving.count } }

    // MARK: The render thread

    /// The render thread's read of a slot.
    func load(slot: Int) -> SourceState { sources[slot].load() }

    /// The state a renderer starts from, read off the render thread.
    func initial(slot: Int) -> SourceState { sources[slot].latest }

    /// The joins and leaves so far; read before the places a block renders with.
    func changeCount() -> Int { changes.load(ordering: .acquiring) }

    /// Place `index`'s source, as the render thread reads it each block.
    func joinedSource(_ index: Int) -> JoinedSource { joined[index].load() }

    /// Says every renderer of the room has rendered a whole block with every
    /// join and leave up to `count`: the engine's word, after all its mixes.
    func rendered(through count: Int) { rendered.store(count, ordering: .releasing) }
}
