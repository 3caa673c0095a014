import AudioCore
import COpenAL

/// An OpenAL source the engine feeds with audio it computes itself, a
/// chunk at a time, through a fixed ring of queued buffers.
///
/// OpenAL Soft stops a streaming source the moment its queue runs dry, and
/// restarting one resets its filters, so whoever feeds it keeps at least
/// one chunk queued beyond the frames the device is about to render. The
/// first chunk queued plays on the next render, so a stream fed from the
/// frame the device renders next stays sample-aligned with everything else.
public final class StreamedVoice: OpenALSource {
    public let channelCount: Int
    public let chunkFrames: Int
    /// Frames queued and not yet rendered, at most.
    public var capacityFrames: Int { buffers.count * chunkFrames }

    let device: LoopbackDevice
    let name: ALuint
    private let format: ALenum
    /// Every buffer the ring owns; `free` holds those not in the queue.
    private var buffers: [ALuint]
    private var free: [ALuint]
    private var started = false

    init(device: LoopbackDevice, layout: ChannelLayout, chunkFrames: Int, chunks: Int) throws {
        self.device = device
        channelCount = layout.channelCount
        self.chunkFrames = chunkFrames
        format = switch layout {
        case .mono: AL_FORMAT_MONO_FLOAT32
        case .stereo: AL_FORMAT_STEREO_FLOAT32
        case .quad: AL_FORMAT_QUAD32
        case .surround51: AL_FORMAT_51CHN32
        case .surround71: AL_FORMAT_71CHN32
        }
        (name, buffers) = try device.withContext {
            var source: ALuint = 0
            alGenSources(1, &source)
            try OpenALError.check("alGenSources")
            var buffers = [ALuint](repeating: 0, count: chunks)
            alGenBuffers(ALsizei(chunks), &buffers)
            let code = alGetError()
            if code != AL_NO_ERROR {
                alDeleteSources(1, &source)
                throw OpenALError(call: "alGenBuffers", code: code)
            }
            return (source, buffers)
        }
        free = buffers
        free.reserveCapacity(chunks)
    }

    deinit {
        var name = self.name
        device.withContext {
            alSourceStop(name)
            alDeleteSources(1, &name)
            alDeleteBuffers(ALsizei(buffers.count), buffers)
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

    /// Queues one chunk of interleaved samples, `chunkFrames` frames long,
    /// after reclaiming the buffers OpenAL has finished with. The voice
    /// starts playing with its first chunk.
    public func queue(_ chunk: UnsafeBufferPointer<Float>) throws {
        precondition(chunk.count == chunkFrames * channelCount, "a chunk is chunkFrames frames")
        try device.withContext {
            var processed: ALint = 0
            alGetSourcei(name, AL_BUFFERS_PROCESSED, &processed)
            while processed > 0 {
                var buffer: ALuint = 0
                alSourceUnqueueBuffers(name, 1, &buffer)
                free.append(buffer)
                processed -= 1
            }
            guard var buffer = free.popLast() else {
                throw OpenALError(call: "alSourceQueueBuffers", code: AL_INVALID_OPERATION,
                                  detail: "all \(buffers.count) chunks are still queued")
            }
            alBufferData(buffer, format, chunk.baseAddress, ALsizei(chunk.count * MemoryLayout<Float>.size),
                         ALsizei(device.sampleRate))
            alSourceQueueBuffers(name, 1, &buffer)
            try OpenALError.check("alSourceQueueBuffers")
            if !started {
                alSourcePlay(name)
                try OpenALError.check("alSourcePlay")
                started = true
            }
        }
    }
}
