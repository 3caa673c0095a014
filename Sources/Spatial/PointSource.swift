import COpenAL

/// A mono sound at a position in the world, attenuated with distance.
public final class PointSource {
    private let voice: SourceVoice

    init(device: LoopbackDevice, buffer: SoundBuffer, distance: DistanceModel) throws {
        voice = try SourceVoice(buffer: buffer)
        try voice.set(AL_REFERENCE_DISTANCE, Float(distance.reference), "alSourcef(AL_REFERENCE_DISTANCE)")
        try voice.set(AL_MAX_DISTANCE, Float(distance.maximum), "alSourcef(AL_MAX_DISTANCE)")
        try voice.set(AL_ROLLOFF_FACTOR, Float(distance.rolloff), "alSourcef(AL_ROLLOFF_FACTOR)")
    }

    public func setPosition(_ position: Position) throws {
        try voice.set(AL_POSITION, position, "alSource3f(AL_POSITION)")
    }

    public func setGain(linear gain: Double) throws { try voice.setGain(linear: gain) }
    public func setLooping(_ looping: Bool) throws { try voice.setLooping(looping) }
    public func play() throws { try voice.play() }
}
