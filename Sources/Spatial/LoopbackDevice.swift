import AudioCore
import COpenAL

/// An OpenAL Soft loopback device and its one context: OpenAL mixes only
/// when the engine asks it to, on the engine's clock.
///
/// Contexts are made current per thread (ALC_EXT_thread_local_context) and
/// only for the duration of a call, so several devices can live on several
/// threads without fighting over OpenAL's process-wide current context.
final class LoopbackDevice {
    let sampleRate: Int
    let layout: ChannelLayout
    /// Name of the HRTF data set in use, or nil when HRTF is off.
    let hrtfName: String?
    private let device: OpaquePointer
    private let context: OpaquePointer

    /// - Parameters:
    ///   - sources: how many sources the context may hold; OpenAL Soft's default is 256.
    ///   - voices: how many of them may play at once without the render thread allocating.
    init(sampleRate: Int, layout: ChannelLayout, hrtf: Bool, sources: Int = 256, voices: Int = 64) throws {
        guard let device = alcLoopbackOpenDeviceSOFT(nil) else {
            throw OpenALError(call: "alcLoopbackOpenDeviceSOFT", code: alcGetError(nil))
        }
        let channels = Self.alcChannels(layout)
        guard alcIsRenderFormatSupportedSOFT(device, ALCsizei(sampleRate), channels, ALC_FLOAT_SOFT) == ALC_TRUE else {
            alcCloseDevice(device)
            throw OpenALError(call: "alcIsRenderFormatSupportedSOFT", code: ALC_INVALID_VALUE,
                              detail: "\(layout.rawValue) float at \(sampleRate) Hz is not supported")
        }
        var attributes: [ALCint] = [
            ALC_FORMAT_CHANNELS_SOFT, channels,
            ALC_FORMAT_TYPE_SOFT, ALC_FLOAT_SOFT,
            ALC_FREQUENCY, ALCint(sampleRate),
            ALC_HRTF_SOFT, hrtf ? ALC_TRUE : ALC_FALSE,
            ALC_OUTPUT_LIMITER_SOFT, ALC_TRUE,
            // One send per source: the room's reverb.
            ALC_MAX_AUXILIARY_SENDS, 1,
            ALC_MONO_SOURCES, ALCint(sources),
        ]
        if hrtf, let id = Self.hrtfIndex(device: device, sampleRate: sampleRate) {
            attributes += [ALC_HRTF_ID_SOFT, id]
        }
        attributes.append(0)
        guard let context = alcCreateContext(device, attributes) else {
            let code = alcGetError(device)
            alcCloseDevice(device)
            throw OpenALError(call: "alcCreateContext", code: code)
        }
        self.device = device
        self.context = context
        self.sampleRate = sampleRate
        self.layout = layout

        var status: ALCint = 0
        alcGetIntegerv(device, ALC_HRTF_STATUS_SOFT, 1, &status)
        let hrtfOn = status == ALC_HRTF_ENABLED_SOFT || status == ALC_HRTF_REQUIRED_SOFT
            || status == ALC_HRTF_HEADPHONES_DETECTED_SOFT
        hrtfName = hrtfOn ? alcGetString(device, ALC_HRTF_SPECIFIER_SOFT).map { String(cString: $0) } : nil
        if hrtf && !hrtfOn {
            throw OpenALError(call: "alcCreateContext", code: ALC_INVALID_VALUE,
                              detail: "OpenAL Soft found no HRTF data set for \(sampleRate) Hz (install libopenal-data)")
        }
        if !hrtf && hrtfOn {
            throw OpenALError(call: "alcCreateContext", code: ALC_INVALID_VALUE,
                              detail: "HRTF was forced on by the OpenAL configuration (hrtf = true)")
        }
        // At least the headroom, and never more sources than the context may hold.
        try prime(voices: min(max(voices, Self.playHeadroom), sources))
    }

    /// Plays of up to this many sources at once never grow the context's voice array.
    static let playHeadroom = 64

    /// Readies the context for `voices` playing at once, so that changes
    /// and plays on the render thread take nothing from the heap.
    ///
    /// OpenAL Soft 1.19 hands every change to a playing source, and to the
    /// listener, to its mixer in a container from one of the context's free
    /// lists, allocating one when the list is empty; each mix puts them
    /// back, and a new context's lists are empty. Playing the voices as
    /// one-sample sources, changing one of them again, changing the listener
    /// twice and mixing a frame leaves a container for every voice plus one
    /// in flight, and two for the listener: what the changes between two
    /// mixes take while no more voices play.
    ///
    /// It also grows its voice array whenever a play of n sources would
    /// take the most voices it has ever used within n of the array's size,
    /// free voices or not. Playing `playHeadroom` of the ended sources again
    /// grows it now, on this thread, and reuses their voices.
    private func prime(voices: Int) throws {
        try withContext {
            var buffer: ALuint = 0
            alGenBuffers(1, &buffer)
            var names = [ALuint](repeating: 0, count: voices)
            alGenSources(ALsizei(voices), &names)
            defer {
                alSourceStopv(ALsizei(voices), names)
                alDeleteSources(ALsizei(voices), names)
                alDeleteBuffers(1, &buffer)
            }
            try OpenALError.check("alGenSources (priming \(voices) voices)")
            var silence: Float = 0
            alBufferData(buffer, AL_FORMAT_MONO_FLOAT32, &silence, ALsizei(MemoryLayout<Float>.size), ALsizei(sampleRate))
            for name in names { alSourcei(name, AL_BUFFER, ALint(buffer)) }
            var frame = [Float](repeating: 0, count: layout.channelCount)
            alSourcePlayv(ALsizei(voices), names)
            alSourcef(names[0], AL_PITCH, 1)
            for _ in 0..<2 { alListenerf(AL_GAIN, 1) }
            alcRenderSamplesSOFT(device, &frame, 1)
            alSourcePlayv(ALsizei(min(Self.playHeadroom, voices)), names)
            alcRenderSamplesSOFT(device, &frame, 1)
            try OpenALError.check("alSourcePlayv (priming \(voices) voices)")
        }
    }

    deinit {
        if alcGetThreadContext() == context { alcSetThreadContext(nil) }
        alcDestroyContext(context)
        alcCloseDevice(device)
    }

    /// Frames the device delays its output by (ALC_DEVICE_LATENCY_SOFT).
    var latencyFrames: Int {
        var nanoseconds: ALCint64SOFT = 0
        alcGetInteger64vSOFT(device, ALC_DEVICE_LATENCY_SOFT, 1, &nanoseconds)
        return Int((Double(nanoseconds) * Double(sampleRate) / 1e9).rounded())
    }

    /// Runs `body` with this device's context current on the calling thread,
    /// restoring whatever was current before.
    func withContext<T>(_ body: () throws -> T) rethrows -> T {
        let previous = alcGetThreadContext()
        if previous != context { alcSetThreadContext(context) }
        defer { if previous != context { alcSetThreadContext(previous) } }
        return try body()
    }

    /// Mixes `frameCount` frames of interleaved float into `output`.
    func render(into output: UnsafeMutablePointer<Float>, frameCount: Int) {
        alcRenderSamplesSOFT(device, output, ALCsizei(frameCount))
    }

    /// The loopback format for `layout`; OpenAL Soft's loopback device writes
    /// its channels in WAV order, so blocks go to files as they are.
    private static func alcChannels(_ layout: ChannelLayout) -> ALCenum {
        switch layout {
        case .mono: ALC_MONO_SOFT
        case .stereo: ALC_STEREO_SOFT
        case .quad: ALC_QUAD_SOFT
        case .surround51: ALC_5POINT1_SOFT
        case .surround71: ALC_7POINT1_SOFT
        }
    }

    /// Index of the data set recorded at the device's rate; OpenAL Soft 1.19
    /// skips data sets of other rates, so prefer the one named for the rate.
    private static func hrtfIndex(device: OpaquePointer, sampleRate: Int) -> ALCint? {
        var count: ALCint = 0
        alcGetIntegerv(device, ALC_NUM_HRTF_SPECIFIERS_SOFT, 1, &count)
        for index in 0..<max(count, 0) {
            guard let name = alcGetStringiSOFT(device, ALC_HRTF_SPECIFIER_SOFT, index) else { continue }
            if String(cString: name).contains(String(sampleRate)) { return index }
        }
        return nil
    }
}
