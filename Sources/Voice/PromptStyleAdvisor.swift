/// How verbose the app's voice prompts may be right now.
public enum PromptStyle: String, Sendable, CaseIterable {
    /// No voice session: prompts may say everything.
    case normal
    /// A session is active and nobody talks: keep prompts short.
    case short
    /// Someone talks: no prompt now.
    case none
}

/// Chooses the prompt style from the voice session and its talkers, and
/// keeps each style at least `minimumHoldSeconds` so it does not flicker
/// between the words of a sentence.
public struct PromptStyleAdvisor: Sendable {
    /// The shortest time a style is kept, in seconds.
    public static let minimumHoldSeconds = 0.3

    /// The style now; `normal` at the start.
    public private(set) var style = PromptStyle.normal
    private let holdFrames: Int
    private var framesInStyle: Int

    /// An advisor that counts frames at `sampleRate` Hz. It starts at `normal`, free to
    /// change at once.
    public init(sampleRate: Int) {
        holdFrames = Int(Self.minimumHoldSeconds * Double(sampleRate))
        framesInStyle = holdFrames
    }

    /// Takes the state for the next `frames` samples; returns the new style
    /// if it changes now.
    public mutating func update(sessionActive: Bool, anyoneTalking: Bool, frames: Int) -> PromptStyle? {
        let wanted: PromptStyle = !sessionActive ? .normal : anyoneTalking ? .none : .short
        defer { framesInStyle += frames }
        guard wanted != style, framesInStyle >= holdFrames else { return nil }
        style = wanted
        framesInStyle = 0
        return wanted
    }
}
