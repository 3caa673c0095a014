/// Tells a muted user that they are talking: one `started` per burst of
/// speech while muted, and `ended` once they have been quiet for
/// `releaseSeconds`, so bursts closer together than that are one.
public struct MutedTalkerDetector: Sendable {
    /// What a frame changed in telling a muted user they are talking.
    public enum Change: String, Sendable {
        /// A muted user began a burst of speech.
        case started = "mutedSpeechStarted"
        /// The burst is over: the user has been quiet for `releaseSeconds`, or unmuted.
        case ended = "mutedSpeechEnded"
    }

    /// Quiet that ends a burst, in seconds.
    public static let releaseSeconds = 0.5

    /// A burst of speech while muted is under way: `started` was said and `ended` not yet.
    public private(set) var talking = false
    private var quietFrames = 0
    private let releaseFrames: Int

    /// A detector fed frames `frameSeconds` long, in seconds.
    public init(frameSeconds: Double) {
        releaseFrames = Int((Self.releaseSeconds / frameSeconds).rounded(.up))
    }

    /// Feeds one frame's voice activity (after echo cancellation) and mute
    /// state. Unmuting closes a burst in progress, so every `started` has
    /// its `ended` and nothing else is said while unmuted.
    public mutating func update(speech: Bool, muted: Bool) -> Change? {
        guard muted else {
            defer { talking = false }
            return talking ? .ended : nil
        }
        if speech {
            quietFrames = 0
            if !talking {
                talking = true
                return .started
            }
            return nil
        }
        guard talking else { return nil }
        quietFrames += 1
        // Said on the first frame that starts `releaseSeconds` after the speech.
        if quietFrames > releaseFrames {
            talking = false
            return .ended
        }
        return nil
    }
}
