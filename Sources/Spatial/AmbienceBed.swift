import AudioCore
import COpenAL

/// A first-order ambisonic sound field anchored to the world: it turns as
/// the listener turns, and never moves with the listener.
///
/// OpenAL Soft 1.19 rotates a B-Format source's field only while the source
/// sits at distance 0 from the listener; any farther and it pans the W
/// channel alone as a mono point. So the bed is a head-relative source at
/// the origin, and the engine hands OpenAL the field's orientation in the
/// listener's frame: the listener's rotation undone, then the bed's own.
public final class AmbienceBed {
    private let voice: SourceVoice
    private unowned let mixer: SpatialMixer
    /// How the bed's field is turned in the world (yaw, pitch, roll in degrees),
    /// set when the bed is made.
    public let orientation: Orientation

    init(mixer: SpatialMixer, buffer: SoundBuffer, orientation: Orientation) throws {
        voice = try SourceVoice(buffer: buffer)
        self.mixer = mixer
        self.orientation = orientation
        try voice.set(AL_SOURCE_RELATIVE, AL_TRUE, "alSourcei(AL_SOURCE_RELATIVE)")
        try voice.set(AL_POSITION, SIMD3(0, 0, 0), "alSource3f(AL_POSITION)")
        try updateOrientation()
    }

    func updateOrientation() throws {
        try voice.setOrientation(mixer.inListenerFrame(orientation))
    }

    /// Sets the bed's level as a linear amplitude factor: 1 leaves it as it is, 0 silences it.
    public func setGain(linear gain: Double) throws { try voice.setGain(linear: gain) }

    /// Playback rate, which is also pitch.
    public func setRate(_ rate: Double) throws { try voice.setRate(rate) }
    /// Whether the bed starts over from its beginning when it reaches its end.
    public func setLooping(_ looping: Bool) throws { try voice.setLooping(looping) }
    /// Starts playing the bed from its playback offset.
    public func play() throws { try voice.play() }
    /// Stops the bed's voice.
    public func stop() throws { try voice.stop() }

    /// Where in its audio the source starts when it next plays, in frames.
    public func setPlaybackOffset(frames: Int) throws { try voice.setPlaybackOffset(frames: frames) }
}
