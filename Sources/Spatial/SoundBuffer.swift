import COpenAL

/// Sample data uploaded to an OpenAL buffer on one device.
final class SoundBuffer {
    let name: ALuint
    let device: LoopbackDevice
    /// Samples whose storage lives as long as the buffer: the mixer knows a
    /// shared buffer by that storage's address, which no other audio may take meanwhile.
    var kept: [Float] = []

    init(device: LoopbackDevice, format: ALenum, interleaved samples: [Float]) throws {
        self.device = device
        name = try device.withContext {
            var name: ALuint = 0
            alGenBuffers(1, &name)
            try OpenALError.check("alGenBuffers")
            samples.withUnsafeBytes { bytes in
                alBufferData(name, format, bytes.baseAddress, ALsizei(bytes.count), ALsizei(device.sampleRate))
            }
            let code = alGetError()
            if code != AL_NO_ERROR {
                alDeleteBuffers(1, &name)
                throw OpenALError(call: "alBufferData", code: code)
            }
            return name
        }
    }

    deinit {
        var name = self.name
        device.withContext { alDeleteBuffers(1, &name) }
    }
}
