import AudioCore
import COpenAL

#if canImport(Glibc)
import Glibc
#endif

/// A mono sound at a position in the world, attenuated with distance.
public final class PointSource {
    /// Inside this distance a source is in the listener's head.
    public static let headRadius = 0.1

    private let voice: any OpenALSource
    private unowned let mixer: SpatialMixer

    init(mixer: SpatialMixer, voice: any OpenALSource, distance: DistanceModel) throws {
        self.voice = voice
        self.mixer = mixer
        try voice.set(AL_REFERENCE_DISTANCE, Float(distance.reference), "alSourcef(AL_REFERENCE_DISTANCE)")
        try voice.set(AL_MAX_DISTANCE, Float(distance.maximum), "alSourcef(AL_MAX_DISTANCE)")
        try voice.set(AL_ROLLOFF_FACTOR, Float(distance.rolloff), "alSourcef(AL_ROLLOFF_FACTOR)")
        // OpenAL Soft widens a source as the listener nears its radius and
        // makes it omnidirectional at its centre, continuously: a source
        // passing through the head fades to a centred image and back, instead
        // of jumping from one ear to the other.
        try voice.set(AL_SOURCE_RADIUS, Float(Self.headRadius), "alSourcef(AL_SOURCE_RADIUS)")
    }

    /// Moves the source to `position`, in metres, OpenAL axes.
    public func setPosition(_ position: Position) throws {
        try voice.set(AL_POSITION, position, "alSource3f(AL_POSITION)")
    }

    /// Sets the source's level as a linear amplitude factor, on top of its distance
    /// attenuation: 1 leaves it as it is, 0 silences it.
    public func setGain(linear gain: Double) throws { try voice.setGain(linear: gain) }

    /// The most the source's gain may reach after distance attenuation;
    /// OpenAL's default is 1. The listener's gain applies after it, so a
    /// source that keeps its level while the listener's gain ducks the rest
    /// needs room above 1.
    public func setGainCeiling(_ ceiling: Double) throws {
        try voice.set(AL_MAX_GAIN, Float(ceiling), "alSourcef(AL_MAX_GAIN)")
    }

    /// Playback rate, which is also pitch: 2 plays an octave up, twice as fast.
    public func setRate(_ rate: Double) throws { try voice.setRate(rate) }

    /// How the source reaches the listener through the room.
    ///
    /// - `reverbBlend` crossfades, at equal power, from the direct sound
    ///   alone (0) to the room's reverb alone (1); it matters only when the
    ///   room has a reverb.
    /// - `obstruction` (dB, 0 or less) darkens the direct path only, as an
    ///   object between source and listener does: the room still hears it.
    /// - `occlusion` (dB) darkens the direct path and the reverb send, as a
    ///   wall between the source's room and the listener's does.
    public func setRoomEffects(reverbBlend: Double, obstruction: Double, occlusion: Double) throws {
        let occluded = Level.linear(fromDecibels: occlusion)
        let obstructed = Level.linear(fromDecibels: obstruction)
        guard let reverb = mixer.reverb else {
            try voice.setPaths(direct: LowPass(gain: 1, gainHF: obstructed * occluded), send: nil)
            return
        }
        let angle = reverbBlend * .pi / 2
        try voice.setPaths(direct: LowPass(gain: cos(angle), gainHF: obstructed * occluded),
                           send: (reverb.slot, LowPass(gain: sin(angle), gainHF: occluded)))
    }

    /// Sends the source to the room's reverb only, for a sound whose direct
    /// path the engine renders itself; the send follows `setRoomEffects`.
    public func setReverbOnly(reverbBlend: Double, occlusion: Double) throws {
        guard let reverb = mixer.reverb else { preconditionFailure("a reverb send needs the room to have a reverb") }
        try voice.setPaths(direct: LowPass(gain: 0, gainHF: 1),
                           send: (reverb.slot, LowPass(gain: sin(reverbBlend * .pi / 2), gainHF: Level.linear(fromDecibels: occlusion))))
    }

    /// Keeps the source at the centre of the listener's head wherever the
    /// listener goes, for a head-locked sound's reverb send; or, unlocked,
    /// where it is in the world again.
    public func setHeadLocked(_ locked: Bool) throws {
        try voice.set(AL_SOURCE_RELATIVE, locked ? AL_TRUE : AL_FALSE, "alSourcei(AL_SOURCE_RELATIVE)")
        if locked { try voice.set(AL_POSITION, Position.zero, "alSource3f(AL_POSITION)") }
    }

    /// Whether the source starts over from its beginning when it reaches its end.
    public func setLooping(_ looping: Bool) throws { try voice.setLooping(looping) }
    /// Starts playing the source from its playback offset.
    public func play() throws { try voice.play() }
    /// Stops the source's voice.
    public func stop() throws { try voice.stop() }

    /// Where in its audio the source starts when it next plays, in frames.
    public func setPlaybackOffset(frames: Int) throws { try voice.setPlaybackOffset(frames: frames) }
}

/// A point source whose audio the engine streams a chunk at a time: a
/// source added while the room plays, or a stream the app pushes. Its
/// buffer is made once; feeding, stopping and starting it again allocate nothing.
public final class StreamedPoint {
    /// The point the stream plays through: its position, gain and room effects are set here.
    public let point: PointSource
    private let stream: StreamedVoice
    /// Frames in each chunk that `queue` and `overwrite` take.
    public var chunkFrames: Int { stream.chunkFrames }
    /// Frames queued and not yet rendered, at most.
    public var capacityFrames: Int { stream.capacityFrames }

    init(mixer: SpatialMixer, distance: DistanceModel, chunkFrames: Int, chunks: Int) throws {
        stream = try StreamedVoice(device: mixer.device, layout: .mono, chunkFrames: chunkFrames, chunks: chunks)
        point = try PointSource(mixer: mixer, voice: stream, distance: distance)
    }

    /// Writes the next chunk; the first after `rewind` starts the source on the next render.
    public func queue(_ chunk: UnsafeBufferPointer<Float>) throws { try stream.queue(chunk) }

    /// Writes `chunk` over the one queued `back` chunks ago, not yet played.
    public func overwrite(_ chunk: UnsafeBufferPointer<Float>, back: Int) throws { try stream.overwrite(chunk, back: back) }

    /// Stops the source; the next chunk queued plays from the buffer's start.
    public func rewind() throws { try stream.rewind() }
}
