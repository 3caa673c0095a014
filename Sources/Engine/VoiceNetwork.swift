import Synchronization

/// Where the uplink goes besides the room's own sink: a voice network that
/// sends it to remote players. Called on the render thread once per block,
/// after the chain: it must not block or allocate.
public protocol VoiceUplink: AnyObject, Sendable {
    /// The block the uplink carries (silence while muted), whether the local
    /// talker is talking after the detector's hangover, and whether muted.
    func send(_ block: UnsafeBufferPointer<Float>, talking: Bool, muted: Bool)
}

/// What the control side asks of a room's voice network: its remote
/// talkers and its connection, as `status` and `talkers` tell them, and
/// the per-talker and push-to-talk controls.
public protocol VoiceNetwork: AnyObject, Sendable {
    /// The connection as `status` shows it under `network`.
    func status() -> [String: Any]
    /// Each remote talker: id, session, position, talking, gain, muted, packets lost, jitter-buffer delay.
    func talkers() -> [[String: Any]]
    /// Sets a remote talker's volume in dB, heard within two blocks.
    func setTalkerGain(_ id: String, decibels: Double) throws
    /// Mutes or unmutes a remote talker for this room only.
    func setTalkerMuted(_ id: String, muted: Bool) throws
    /// Holds or releases the talk key; a network that sends on voice activity refuses.
    func setPushToTalk(_ held: Bool) throws
}

/// How many remote talkers talk now: the network counts, the render thread
/// reads it each block to duck the scene and choose the prompt style.
public final class RemoteTalking: Sendable {
    private let count = Atomic<Int>(0)

    /// Starts with nobody talking.
    public init() {}

    /// Remote talkers talking now.
    public var talking: Int { count.load(ordering: .relaxed) }

    func started() { count.add(1, ordering: .relaxed) }
    func ended() { count.subtract(1, ordering: .relaxed) }
    func reset() { count.store(0, ordering: .relaxed) }
}
