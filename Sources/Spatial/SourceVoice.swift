import COpenAL

/// One OpenAL source playing one buffer: what point sources and beds share.
final class SourceVoice: OpenALSource {
    let name: ALuint
    let buffer: SoundBuffer
    var device: LoopbackDevice { buffer.device }

    init(buffer: SoundBuffer) throws {
        self.buffer = buffer
        name = try buffer.device.withContext {
            var name: ALuint = 0
            alGenSources(1, &name)
            try OpenALError.check("alGenSources")
            alSourcei(name, AL_BUFFER, ALint(buffer.name))
            let code = alGetError()
            if code != AL_NO_ERROR {
                alDeleteSources(1, &name)
                throw OpenALError(call: "alSourcei(AL_BUFFER)", code: code)
            }
            return name
        }
    }

    deinit {
        var name = self.name
        device.withContext {
            alSourceStop(name)
            alDeleteSources(1, &name)
        }
    }
}

/// An OpenAL source on a device: what sets its parameters, for the
/// buffer-backed `SourceVoice` and the queue-fed `StreamedVoice` alike.
protocol OpenALSource: AnyObject {
    var name: ALuint { get }
    var device: LoopbackDevice { get }
}

extension OpenALSource {
    func setGain(linear gain: Double) throws { try set(AL_GAIN, Float(gain), "alSourcef(AL_GAIN)") }

    /// Playback rate, which is also pitch.
    func setRate(_ rate: Double) throws { try set(AL_PITCH, Float(rate), "alSourcef(AL_PITCH)") }

    func setLooping(_ looping: Bool) throws {
        try set(AL_LOOPING, looping ? AL_TRUE : AL_FALSE, "alSourcei(AL_LOOPING)")
    }

    /// Where in its buffer the voice starts when it next plays, in frames.
    func setPlaybackOffset(frames: Int) throws {
        try set(AL_SAMPLE_OFFSET, ALint(frames), "alSourcei(AL_SAMPLE_OFFSET)")
    }

    func play() throws {
        try device.withContext {
            alSourcePlay(name)
            try OpenALError.check("alSourcePlay")
        }
    }

    /// Stops playing; `play` starts again from the playback offset set before it.
    func stop() throws {
        try device.withContext {
            alSourceStop(name)
            try OpenALError.check("alSourceStop")
        }
    }

    /// Sets the low-pass on the direct path and, when there is a slot, on
    /// the send to it. OpenAL copies a filter's values when it is attached,
    /// so one filter object serves both and is deleted afterwards.
    func setPaths(direct: LowPass, send: (slot: ALuint, filter: LowPass)?) throws {
        try device.withContext {
            var filter: ALuint = 0
            alGenFilters(1, &filter)
            try OpenALError.check("alGenFilters")
            defer { alDeleteFilters(1, &filter) }
            alFilteri(filter, AL_FILTER_TYPE, AL_FILTER_LOWPASS)
            direct.apply(to: filter)
            alSourcei(name, AL_DIRECT_FILTER, ALint(filter))
            try OpenALError.check("alSourcei(AL_DIRECT_FILTER)")
            if let send {
                send.filter.apply(to: filter)
                alSource3i(name, AL_AUXILIARY_SEND_FILTER, ALint(send.slot), 0, ALint(filter))
                try OpenALError.check("alSource3i(AL_AUXILIARY_SEND_FILTER)")
            }
        }
    }

    func set(_ parameter: ALenum, _ value: Float, _ call: String) throws {
        try device.withContext {
            alSourcef(name, parameter, value)
            try OpenALError.check(call)
        }
    }

    func set(_ parameter: ALenum, _ value: ALint, _ call: String) throws {
        try device.withContext {
            alSourcei(name, parameter, value)
            try OpenALError.check(call)
        }
    }

    func set(_ parameter: ALenum, _ vector: SIMD3<Double>, _ call: String) throws {
        try device.withContext {
            alSource3f(name, parameter, Float(vector.x), Float(vector.y), Float(vector.z))
            try OpenALError.check(call)
        }
    }

    /// Points a source with a direction of its own, such as an ambisonic bed, by AL_ORIENTATION.
    func setOrientation(_ orientation: Rotation) throws {
        try device.withContext {
            orientation.withAtAndUp { alSourcefv(name, AL_ORIENTATION, $0) }
            try OpenALError.check("alSourcefv(AL_ORIENTATION)")
        }
    }
}

/// OpenAL's low-pass: a broadband gain, and a gain at 5 kHz and above.
struct LowPass {
    var gain: Double
    var gainHF: Double

    func apply(to filter: ALuint) {
        alFilterf(filter, AL_LOWPASS_GAIN, Float(min(max(gain, 0), 1)))
        alFilterf(filter, AL_LOWPASS_GAINHF, Float(min(max(gainHF, 0), 1)))
    }
}
