import AudioCore
import COpenAL

#if canImport(Glibc)
import Glibc
#endif

/// A listener and the point sources and ambience beds around it, rendered
/// by one OpenAL Soft loopback device with one algorithm.
public final class SpatialMixer {
    /// How the mixer renders positioned sources: `hrtf` or `panning`, never `soundField`, which the
    /// engine pans itself.
    public let algorithm: RenderAlgorithm
    /// The rate it renders at, in Hz; 48 kHz by default.
    public let sampleRate: Int
    /// The output channels it renders, interleaved in this layout's order.
    public var layout: ChannelLayout { device.layout }
    /// Channels in each rendered frame.
    public var channelCount: Int { device.layout.channelCount }
    /// The HRTF data set in use, when the algorithm is HRTF.
    public var hrtfName: String? { device.hrtfName }

    let device: LoopbackDevice
    /// The room's reverb, which point sources send to.
    private(set) var reverb: ReverbSlot?
    /// Whether it has rendered: a reverb must come before.
    private var hasRendered = false
    private(set) var listenerRotation = Rotation.identity
    /// Beds turn whenever the listener turns.
    private var beds: [WeakBed] = []
    /// Mono audio already uploaded, by its storage, so that the sources
    /// playing one decoded file share its OpenAL copy. Each buffer keeps its
    /// samples, so their storage is not freed and taken by other audio while it lives.
    private var uploaded: [Storage: WeakBuffer] = [:]
    /// Entries whose buffer is gone are swept when the table reaches this
    /// size, which then doubles what stays: rarely, and in amortised constant time.
    private var sweepAt = 64

    /// Frames OpenAL delays its output by: the limiter's look-ahead.
    public var latencyFrames: Int { device.latencyFrames }

    /// - Parameters:
    ///   - algorithm: how its sources are rendered: HRTF, panning, ...
    ///   - layout: the channels to render; HRTF renders two ears.
    ///   - sampleRate: the rate it renders at, in Hz.
    ///   - sources: how many OpenAL sources it may hold at once.
    ///   - voices: how many of them may play at once without the render thread allocating.
    public init(algorithm: RenderAlgorithm, layout: ChannelLayout, sampleRate: Int = 48_000, sources: Int = 256, voices: Int = 64) throws {
        precondition(algorithm != .hrtf || layout == .stereo, "HRTF renders two ears")
        precondition(algorithm != .soundField, "the engine pans sound fields itself")
        self.algorithm = algorithm
        self.sampleRate = sampleRate
        device = try LoopbackDevice(sampleRate: sampleRate, layout: layout, hrtf: algorithm == .hrtf, sources: sources, voices: voices)
        try setDistanceModel(DistanceModel())
    }

    /// Gives the room a reverb, once and before the mixer renders: it renders the reverb's first frames
    /// through. Sources set their sends to it afterwards.
    public func setReverb(_ preset: ReverbPreset, levelDecibels: Double) throws {
        precondition(reverb == nil && !hasRendered, "a mixer takes its one reverb before it renders")
        reverb = try ReverbSlot(device: device, preset: preset, gain: Level.linear(fromDecibels: levelDecibels))
        // OpenAL Soft 1.19.1's reverb cross-fades its delay lines over the first 128 frames after its
        // parameters are set. A render that ends inside that fade off a multiple of 4 frames leaves it a
        // remainder its next longer render rounds down to an empty step, and that crashes
        // (SIGSEGV in alcRenderSamplesSOFT). Rendering the fade now, in silence, leaves nothing to split.
        var silence = [Float](repeating: 0, count: ReverbSlot.fadeFrames * channelCount)
        silence.withUnsafeMutableBufferPointer { render(into: $0, frameCount: ReverbSlot.fadeFrames) }
    }

    /// Sets the distance law every point source follows. Reference, maximum and rolloff are each
    /// source's own, from the model it was made with.
    public func setDistanceModel(_ model: DistanceModel) throws {
        try device.withContext {
            alDistanceModel(model.alModel)
            try OpenALError.check("alDistanceModel")
        }
    }

    /// The gain OpenAL gives every source it mixes, on the direct path and
    /// the reverb send alike, but not to what the reverb already holds: the
    /// bus's ducking. A change ramps across the first mix of the next
    /// render (at most 2,048 frames in OpenAL Soft 1.19), as a source's gain does.
    public func setListenerGain(_ gain: Double) throws {
        try device.withContext {
            alListenerf(AL_GAIN, Float(gain))
            try OpenALError.check("alListenerf(AL_GAIN)")
        }
    }

    /// Places the listener. Beds follow the orientation; nothing follows the position.
    public func setListener(position: Position, orientation: Orientation) throws {
        let rotation = orientation.rotation
        try device.withContext {
            alListener3f(AL_POSITION, Float(position.x), Float(position.y), Float(position.z))
            try OpenALError.check("alListener3f(AL_POSITION)")
            rotation.withAtAndUp { alListenerfv(AL_ORIENTATION, $0) }
            try OpenALError.check("alListenerfv(AL_ORIENTATION)")
        }
        listenerRotation = rotation
        beds.removeAll { $0.bed == nil }
        for entry in beds { try entry.bed?.updateOrientation() }
    }

    /// A point playing `samples`; points given the same array (not equal
    /// samples: the same storage) play one OpenAL buffer.
    public func makePointSource(mono samples: [Float], distance: DistanceModel) throws -> PointSource {
        try PointSource(mixer: self, voice: SourceVoice(buffer: buffer(mono: samples)), distance: distance)
    }

    private func buffer(mono samples: [Float]) throws -> SoundBuffer {
        let storage = samples.withUnsafeBufferPointer { Storage(address: UnsafeRawPointer($0.baseAddress), count: $0.count) }
        if let shared = uploaded[storage]?.buffer { return shared }
        let buffer = try SoundBuffer(device: device, format: AL_FORMAT_MONO_FLOAT32, interleaved: samples)
        buffer.kept = samples
        if uploaded.count >= sweepAt {
            uploaded = uploaded.filter { $0.value.buffer != nil }
            sweepAt = max(64, 2 * uploaded.count)
        }
        uploaded[storage] = WeakBuffer(buffer: buffer)
        return buffer
    }

    /// The OpenAL buffers this mixer holds for mono audio: one per storage
    /// that live sources play, however many play it.
    package var monoBufferCount: Int { uploaded.values.count { $0.buffer != nil } }

    /// A point source fed `chunkFrames` frames at a time, up to `chunks` chunks ahead of what plays.
    public func makeStreamedPoint(distance: DistanceModel, chunkFrames: Int, chunks: Int) throws -> StreamedPoint {
        try StreamedPoint(mixer: self, distance: distance, chunkFrames: chunkFrames, chunks: chunks)
    }

    /// A world-anchored first-order bed from AmbiX (ACN order, SN3D) audio.
    public func makeAmbienceBed(ambiX: AudioBuffer, orientation: Orientation) throws -> AmbienceBed {
        let buffer = try SoundBuffer(device: device, format: AL_FORMAT_BFORMAT3D_FLOAT32,
                                     interleaved: AmbisonicFormat.fuMa(fromAmbiX: ambiX).samples)
        let bed = try AmbienceBed(mixer: self, buffer: buffer, orientation: orientation)
        beds.append(WeakBed(bed: bed))
        return bed
    }

    /// A world-anchored bed of second- or third-order AmbiX, decoded to
    /// virtual speakers spread evenly around the listener.
    public func makeAmbisonicBed(ambiX: AudioBuffer, order: Int, orientation: Orientation) throws -> SpeakerBed {
        let directions = Ambisonics.virtualSpeakerDirections(order: order)
        return try makeSpeakerBed(feeds: Ambisonics.decode(ambiX, order: order, to: directions),
                                  directions: directions, orientation: orientation)
    }

    /// A world-anchored bed of loudspeaker channels, each at its layout's angle.
    public func makeChannelBed(_ audio: AudioBuffer, layout: ChannelLayout, orientation: Orientation) throws -> SpeakerBed {
        try makeSpeakerBed(feeds: (0..<layout.channelCount).map(audio.channel), directions: layout.directions,
                                  orientation: orientation)
    }

    private func makeSpeakerBed(feeds: [[Float]], directions: [SIMD3<Double>], orientation: Orientation) throws -> SpeakerBed {
        let bed = try SpeakerBed(mixer: self, feeds: feeds, directions: directions, orientation: orientation)
        beds.append(WeakBed(bed: bed))
        return bed
    }

    /// A stream of feeds the engine decoded for this device's own channels,
    /// played straight to them.
    public func makeOutputStream(chunkFrames: Int, chunks: Int) throws -> StreamedVoice {
        let voice = try StreamedVoice(device: device, layout: layout, chunkFrames: chunkFrames, chunks: chunks)
        try voice.playDirectToOutputs()
        return voice
    }

    /// A mono stream played from a virtual loudspeaker in `direction`
    /// (OpenAL axes, in the listener's frame).
    public func makeVirtualSpeakerStream(direction: SIMD3<Double>, chunkFrames: Int, chunks: Int) throws -> StreamedVoice {
        let voice = try StreamedVoice(device: device, layout: .mono, chunkFrames: chunkFrames, chunks: chunks)
        try voice.placeAsVirtualSpeaker(direction: direction)
        return voice
    }

    /// Renders the next `frameCount` frames, interleaved, into `output`.
    public func render(into output: UnsafeMutableBufferPointer<Float>, frameCount: Int) {
        precondition(output.count >= frameCount * channelCount, "output block too small")
        hasRendered = true
        if frameCount > 0, let base = output.baseAddress { device.render(into: base, frameCount: frameCount) }
    }

    /// How a bed turned by `orientation` in the world lies in the listener's frame.
    func inListenerFrame(_ orientation: Orientation) -> Rotation {
        listenerRotation.transposed * orientation.rotation
    }
}

/// A bed anchored to the world, which turns when the listener does.
protocol WorldAnchored: AnyObject {
    func updateOrientation() throws
}

extension AmbienceBed: WorldAnchored {}
extension SpeakerBed: WorldAnchored {}

private struct WeakBed {
    weak var bed: (any WorldAnchored)?
}

private struct WeakBuffer {
    weak var buffer: SoundBuffer?
}

/// Where an array's samples are and how many: one storage, however many arrays share it.
private struct Storage: Hashable {
    let address: UnsafeRawPointer?
    let count: Int
}
