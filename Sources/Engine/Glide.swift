import Scene
import Spatial

/// A source moving in a straight line from one position to another over
/// a stretch of the room's timeline, then staying there: a live `move`.
public struct Glide: Sendable, Equatable {
    public var from: Position
    public var to: Position
    public var startFrame: Int
    public var endFrame: Int

    public init(from: Position, to: Position, startFrame: Int, endFrame: Int) {
        self.from = from
        self.to = to
        self.startFrame = startFrame
        self.endFrame = max(endFrame, startFrame)
    }

    public func position(at frame: Int) -> Position {
        guard frame < endFrame else { return to }
        guard frame > startFrame else { return from }
        return from + (to - from) * (Double(frame - startFrame) / Double(endFrame - startFrame))
    }

    /// The glide as a scene's placement, for renderers made later and for saving.
    public var placement: Placement {
        guard endFrame > startFrame else { return .fixed(to) }
        let rate = Double(Room.sampleRate)
        return .moving(MotionPath(keyframes: [.init(time: Double(startFrame) / rate, position: from),
                                              .init(time: Double(endFrame) / rate, position: to)], repeats: false))
    }
}
