/// What the engine's timeline needs of anything that plays in a room.
public protocol TimelineVoice: AnyObject {
    /// Sets the level as a linear amplitude factor: 1 leaves it as it is, 0 silences it.
    func setGain(linear gain: Double) throws
    /// Whether it starts over from its beginning when it reaches its end.
    func setLooping(_ looping: Bool) throws
    /// Playback rate, which is also pitch.
    func setRate(_ rate: Double) throws
    /// Where in its audio it starts when it next plays, in frames.
    func setPlaybackOffset(frames: Int) throws
    /// Starts playing from its playback offset.
    func play() throws
    /// Stops; it plays from its offset again when told to.
    func stop() throws
}

extension PointSource: TimelineVoice {}
extension AmbienceBed: TimelineVoice {}
extension SpeakerBed: TimelineVoice {}
