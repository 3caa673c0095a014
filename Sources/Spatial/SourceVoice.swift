import COpenAL

/// One OpenAL source playing one buffer: what point sources and beds share.
final class SourceVoice {
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

    func set(_ parameter: ALenum, _ values: [Float], _ call: String) throws {
        try device.withContext {
            alSourcefv(name, parameter, values)
            try OpenALError.check(call)
        }
    }

    func setGain(linear gain: Double) throws { try set(AL_GAIN, Float(gain), "alSourcef(AL_GAIN)") }

    func setLooping(_ looping: Bool) throws {
        try set(AL_LOOPING, looping ? AL_TRUE : AL_FALSE, "alSourcei(AL_LOOPING)")
    }

    func play() throws {
        try device.withContext {
            alSourcePlay(name)
            try OpenALError.check("alSourcePlay")
        }
    }
}
