import AudioCore
import COpenAL

/// An OpenAL source the engine feeds with audio it computes itself, a
/// chunk at a time, through one looping buffer of `chunks` chunks that it
/// overwrites ahead of where OpenAL plays (AL_SOFT_buffer_sub_data).
///
/// Queueing buffers instead would cost an allocation per chunk: OpenAL
/// Soft 1.19 allocates a list item for every buffer queued. Whoever feeds
/// the voice writes each chunk before the device renders it, and never more
/// than `chunks - 1` chunks ahead. The first chunk plays on the next
/// render, so a stream fed from the frame the device renders next stays
/// sample-aligned with everything else.
public final class StreamedVoice: OpenALSource {
    /// Channels in each frame of a chunk, from the layout the voice was made for.
    public let channelCount: Int
    /// Frames in each chunk that `queue` takes.
    public let chunkFrames: Int
    /// Frames written and not yet rendered, at most.
    public var capacityFrames: Int { chunks * chunkFrames }

    let device: LoopbackDevice
    let name: ALuint
    private let format: ALenum
    private let chunks: Int
    private let buffer: ALuint
    /// Chunks written so far; the next goes to slot `written % chunks`.
    private var written = 0

    init(device: LoopbackDevice, layout: ChannelLayout, chunkFrames: Int, chunks: Int) throws {
        precondition(chunks >= 2, "a stream needs a chunk playing and one being written")
        self.device = device
        channelCount = layout.channelCount
        self.chunkFrames = chunkFrames
        self.chunks = chunks
        format = switch layout {
        case .mono: AL_FORMAT_MONO_FLOAT32
        case .stereo: AL_FORMAT_STEREO_FLOAT32
        case .quad: AL_FORMAT_QUAD32
        case .surround51: AL_FORMAT_51CHN32
        case .surround71: AL_FORMAT_71CHN32
        }
        let silence = [Float](repeating: 0, count: chunks * chunkFrames * layout.channelCount)
        let format = format
        (name, buffer) = try device.withContext {
            var source: ALuint = 0, buffer: ALuint = 0
            alGenSources(1, &source)
            try OpenALError.check("alGenSources")
            alGenBuffers(1, &buffer)
            alBufferData(buffer, format, silence, ALsizei(silence.count * MemoryLayout<Float>.size), ALsizei(device.sampleRate))
            alSourcei(source, AL_BUFFER, ALint(buffer))
            alSourcei(source, AL_LOOPING, AL_TRUE)
            let code = alGetError()
            if code != AL_NO_ERROR {
                alDeleteSources(1, &source)
                alDeleteBuffers(1, &buffer)
                throw OpenALError(call: "alBufferData", code: code)
            }
            return (source, buffer)
        }
    }

    deinit {
        var name = self.name, buffer = self.buffer
        device.withContext {
            alSourceStop(name)
            alDeleteSources(1, &name)
            alDeleteBuffers(1, &buffer)
        }
    }

    /// Plays the channels straight to the device's outputs of the same
    /// name, unspatialised: for feeds already decoded for the real layout.
    func playDirectToOutputs() throws {
        try set(AL_DIRECT_CHANNELS_SOFT, AL_TRUE, "alSourcei(AL_DIRECT_CHANNELS_SOFT)")
        try set(AL_SOURCE_RELATIVE, AL_TRUE, "alSourcei(AL_SOURCE_RELATIVE)")
        try set(AL_ROLLOFF_FACTOR, Float(0), "alSourcef(AL_ROLLOFF_FACTOR)")
    }

    /// Makes a mono stream a virtual loudspeaker: head-relative, far out
    /// along `direction` (OpenAL axes), with no distance attenuation.
    func placeAsVirtualSpeaker(direction: SIMD3<Double>) throws {
        try set(AL_SOURCE_RELATIVE, AL_TRUE, "alSourcei(AL_SOURCE_RELATIVE)")
        try set(AL_ROLLOFF_FACTOR, Float(0), "alSourcef(AL_ROLLOFF_FACTOR)")
        try set(AL_POSITION, direction * SpeakerBed.radius, "alSource3f(AL_POSITION)")
    }

    /// Stops; the next chunk queued goes to the buffer's start and plays from there.
    public func rewind() throws {
        try stop()
        written = 0
    }

    /// Writes `chunk` over one written `back` chunks before the next, which
    /// OpenAL has not played yet: to fade out what was queued ahead.
    func overwrite(_ chunk: UnsafeBufferPointer<Float>, back: Int) throws {
        precondition(chunk.count == chunkFrames * channelCount, "a chunk is chunkFrames frames")
        precondition(back >= 1 && back < chunks && back <= written, "only a chunk written and not yet played")
        let bytes = chunk.count * MemoryLayout<Float>.size
        try device.withContext {
            alBufferSubDataSOFT(buffer, format, chunk.baseAddress, ALsizei(((written - back) % chunks) * bytes), ALsizei(bytes))
            try OpenALError.check("alBufferSubDataSOFT")
        }
    }

    /// Writes one chunk of interleaved samples, `chunkFrames` frames long,
    /// into the slot after the last. The voice starts playing with its first chunk.
    public func queue(_ chunk: UnsafeBufferPointer<Float>) throws {
        precondition(chunk.count == chunkFrames * channelCount, "a chunk is chunkFrames frames")
        let bytes = chunk.count * MemoryLayout<Float>.size
        try device.withContext {
            alBufferSubDataSOFT(buffer, format, chunk.baseAddress, ALsizei((written % chunks) * bytes), ALsizei(bytes))
            try OpenALError.check("alBufferSubDataSOFT")
            if written == 0 {
                alSourcePlay(name)
                try OpenALError.check("alSourcePlay")
            }
            written += 1
        }
    }
}
