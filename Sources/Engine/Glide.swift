import Scene
import Spatial

/// A source moving in a straight line from one position to another over
/// a stretch of the room's timeline, then staying there: a live `move`.
public struct Glide: Sendable, Equatable, BitwiseCopyable {
    /// Where the source is at and before `startFrame`.
    public var from: Position
    /// Where it arrives at `endFrame`, and stays.
    public var to: Position
    /// Timeline frames at which the glide starts and ends.
    public var startFrame: Int
    /// The timeline frame at which it arrives.
    public var endFrame: Int

    /// A glide that ends no earlier than it starts.
    public init(from: Position, to: Position, startFrame: Int, endFrame: Int) {
        self.from = from
        self.to = to
        self.startFrame = startFrame
        self.endFrame = max(endFrame, startFrame)
    }

    /// Where the source is at `frame`: on the line between `from` and `to`.
    public func position(at frame: Int) -> Position {
        guard frame < endFrame else { return to }
        guard frame > startFrame else { return from }
        return from + (to - from) * (Double(frame - startFrame) / Double(endFrame - startFrame))
    }

    /// What is left of the glide at `frame`, as a scene's placement whose
    /// time 0 is that frame: where it is then, and the rest of the way as
    /// keyframes. A saved room reloads with the source where it was.
    public func remainder(from frame: Int) -> Placement {
        guard frame < endFrame else { return .fixed(to) }
        let here = position(at: frame)
        return .moving(MotionPath(keyframes: [.init(time: 0, position: here),
                                              .init(time: Double(endFrame - frame) / Double(Room.sampleRate), position: to)],
                                  repeats: false))
    }
}
