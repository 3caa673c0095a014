import AudioCore
import Spatial

/// Plays a room on one output, following changes of route: the new route's
/// renderer picks up the room where it is, and the output crossfades into
/// it so no source is lost and nothing clicks.
public final class RoomPlayer {
    /// 50 ms: long enough to hide the change of algorithm, short enough not to smear it.
    public static let crossfadeFrames = 2_400

    /// The room it plays.
    public var room: Room { renderer.room }
    /// The renderer playing now (the one faded in, during a crossfade).
    @exclusivity(unchecked) public private(set) var renderer: RoomRenderer
    /// Frames rendered since the room's start.
    public var framesRendered: Int { renderer.framesRendered }
    /// The output's channels.
    public var channelCount: Int { renderer.channelCount }

    /// The renderer being faded out, and how far the fade has gone.
    @exclusivity(unchecked) private var fading: (renderer: RoomRenderer, done: Int)?
    @exclusivity(unchecked) private var scratch: [Float]
    /// The scene's ducking, linear, which a renderer taking over starts at.
    @exclusivity(unchecked) private var ducking = 1.0

    /// How every renderer it makes scales to crowds.
    public let levelOfDetail: LevelOfDetail
    /// Takes the renderers this player is done with. Live, they go back to
    /// the control thread to be freed there, never on the render thread.
    public var retire: (RoomRenderer) -> Void = { _ in }

    /// - Parameters:
    ///   - room: the room it plays.
    ///   - route: overrides the scene's route when given.
    ///   - controls: the room's parameter plane, which every renderer it makes reads; by default one of its own.
    ///   - frame: where on the room's timeline to begin.
    ///   - levelOfDetail: when a crowd of sources renders partly in the field.
    ///   - mix: which of the room's sources it plays; the scene's renderer also plays every source that joins later.
    public init(room: Room, route: OutputRoute? = nil, controls: SessionControls? = nil, startingAt frame: Int = 0,
                levelOfDetail: LevelOfDetail = .standard, mix: SourceMix = .scene) throws {
        self.levelOfDetail = levelOfDetail
        renderer = try RoomRenderer(room: room, route: route, controls: controls, startingAt: frame, levelOfDetail: levelOfDetail,
                                    mix: mix)
        scratch = [Float](repeating: 0, count: RoomRenderer.maximumCallFrames * renderer.channelCount)
    }

    /// Switches to `route` from the next frame on, crossfading over `crossfadeFrames`.
    /// The output keeps its channels, so the route must have as many.
    public func changeRoute(to route: OutputRoute) throws {
        guard route.layout == renderer.layout else {
            throw RouteChangeError(from: renderer.route, to: route)
        }
        crossfade(to: try RoomRenderer(room: room, route: route, controls: renderer.controls, startingAt: renderer.framesRendered,
                                       levelOfDetail: levelOfDetail, mix: renderer.mix))
    }

    /// Crossfades into `next`, a renderer of the same layout made elsewhere
    /// to start where this one is now: for a route, or a room changed in a
    /// way the playing renderer cannot take in place.
    public func crossfade(to next: RoomRenderer) {
        precondition(next.layout == renderer.layout && next.framesRendered == renderer.framesRendered,
                     "a renderer taking over plays the same channels from the same frame")
        next.setDucking(ducking, immediately: true)
        if let (old, _) = fading { retire(old) }
        fading = (renderer, 0)
        renderer = next
    }

    /// Ducks the scene to `gain` (linear) by the end of the next render; the talkers keep their level.
    public func setDucking(_ gain: Double) {
        ducking = gain
        renderer.setDucking(gain)
        fading?.renderer.setDucking(gain)
    }

    /// Renders the next `frameCount` frames, interleaved, into `output`.
    public func render(into output: UnsafeMutableBufferPointer<Float>, frameCount: Int) throws {
        try renderer.render(into: output, frameCount: frameCount)
        guard let (old, done) = fading else { return }
        let channels = channelCount
        try scratch.withUnsafeMutableBufferPointer { scratch in
            try old.render(into: scratch, frameCount: frameCount)
            // Equal-gain: both renderers play the same sources, largely correlated.
            for frame in 0..<frameCount {
                let fadeIn = min(1, Float(done + frame + 1) / Float(Self.crossfadeFrames))
                for channel in 0..<channels {
                    let index = frame * channels + channel
                    output[index] = output[index] * fadeIn + scratch[index] * (1 - fadeIn)
                }
            }
        }
        if done + frameCount >= Self.crossfadeFrames {
            fading = nil
            retire(old)
        } else {
            fading = (old, done + frameCount)
        }
    }
}

/// A route change this output cannot take: its channels would change.
public struct RouteChangeError: Error, Sendable, CustomStringConvertible {
    /// The route playing.
    public let from: OutputRoute
    /// The route asked for.
    public let to: OutputRoute

    /// Both routes and their channels: a render keeps its channels.
    public var description: String {
        "cannot change from \(from) (\(from.layout.rawValue)) to \(to) (\(to.layout.rawValue)): the output keeps its channels"
    }
}
