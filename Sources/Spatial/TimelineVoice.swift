/// What the engine's timeline needs of anything that plays in a room.
public protocol TimelineVoice: AnyObject {
    func setGain(linear gain: Double) throws
    func setLooping(_ looping: Bool) throws
    /// Playback rate, which is also pitch.
    func setRate(_ rate: Double) throws
    /// Where in its audio it starts when it next plays, in frames.
    func setPlaybackOffset(frames: Int) throws
    func play() throws
    /// Stops; it plays from its offset again when told to.
    func stop() throws
}

extension PointSource: TimelineVoice {}
extension AmbienceBed: TimelineVoice {}
extension SpeakerBed: TimelineVoice {}
