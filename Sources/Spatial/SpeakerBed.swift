import AudioCore
import COpenAL

/// A bed played over virtual loudspeakers around the listener: the
/// channels of a speaker layout, or a higher-order field decoded to
/// speakers. Like `AmbienceBed` it is anchored to the world: it turns with
/// the listener's orientation and its own, and never moves.
///
/// Each speaker is a head-relative source far out along its direction with
/// no distance attenuation, so the room's distance model leaves it alone.
public final class SpeakerBed {
    /// How far out the virtual speakers stand; only their direction counts.
    static let radius = 10.0

    private let voices: [SourceVoice]
    /// The voices' OpenAL names, for starting and stopping them in one call.
    private let names: [ALuint]
    /// Unit directions in the bed's own frame, OpenAL axes.
    private let directions: [SIMD3<Double>]
    private unowned let mixer: SpatialMixer
    /// How the bed is turned in the world (yaw, pitch, roll in degrees), set when the bed is made.
    public let orientation: Orientation

    init(mixer: SpatialMixer, feeds: [[Float]], directions: [SIMD3<Double>], orientation: Orientation) throws {
        precondition(feeds.count == directions.count, "one feed per speaker")
        self.mixer = mixer
        self.directions = directions
        self.orientation = orientation
        voices = try feeds.map { feed in
            let voice = try SourceVoice(buffer: SoundBuffer(device: mixer.device, format: AL_FORMAT_MONO_FLOAT32, interleaved: feed))
            try voice.set(AL_SOURCE_RELATIVE, AL_TRUE, "alSourcei(AL_SOURCE_RELATIVE)")
            try voice.set(AL_ROLLOFF_FACTOR, Float(0), "alSourcef(AL_ROLLOFF_FACTOR)")
            return voice
        }
        names = voices.map(\.name)
        try updateOrientation()
    }

    func updateOrientation() throws {
        let inListenerFrame = mixer.inListenerFrame(orientation)
        for (voice, direction) in zip(voices, directions) {
            try voice.set(AL_POSITION, (inListenerFrame * direction) * Self.radius, "alSource3f(AL_POSITION)")
        }
    }

    /// Sets every speaker's level as a linear amplitude factor: 1 leaves it as it is,
    /// 0 silences it.
    public func setGain(linear gain: Double) throws { for voice in voices { try voice.setGain(linear: gain) } }
    /// Whether the speakers start over from the beginning when they reach the end.
    public func setLooping(_ looping: Bool) throws { for voice in voices { try voice.setLooping(looping) } }
    /// Sets every speaker's playback rate: 1 plays as recorded.
    public func setRate(_ rate: Double) throws { for voice in voices { try voice.setRate(rate) } }

    /// Where in its audio the bed starts when it next plays, in frames.
    public func setPlaybackOffset(frames: Int) throws {
        for voice in voices { try voice.setPlaybackOffset(frames: frames) }
    }

    /// Starts every speaker in the same mix, so they stay sample-aligned.
    public func play() throws {
        try mixer.device.withContext {
            alSourcePlayv(ALsizei(names.count), names)
            try OpenALError.check("alSourcePlayv")
        }
    }

    /// Stops every speaker's voice.
    public func stop() throws {
        try mixer.device.withContext {
            alSourceStopv(ALsizei(names.count), names)
            try OpenALError.check("alSourceStopv")
        }
    }
}
