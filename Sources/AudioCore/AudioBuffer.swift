/// Interleaved 32-bit float audio: `frameCount` frames of `channelCount` samples.
public struct AudioBuffer: Sendable, Equatable {
    /// Samples per frame, one per channel; at least 1.
    public let channelCount: Int
    /// The samples, frame after frame, each frame's channels side by side.
    public private(set) var samples: [Float]

    /// Frames held: `samples.count / channelCount`.
    public var frameCount: Int { samples.count / channelCount }

    /// A silent buffer of `frameCount` frames (none by default).
    public init(channelCount: Int, frameCount: Int = 0) {
        precondition(channelCount > 0, "an audio buffer needs at least one channel")
        self.channelCount = channelCount
        self.samples = [Float](repeating: 0, count: channelCount * frameCount)
    }

    /// A buffer holding interleaved `samples`, which must be a whole number of frames.
    public init(channelCount: Int, interleaved samples: [Float]) {
        precondition(channelCount > 0 && samples.count % channelCount == 0,
                     "interleaved samples must hold whole frames")
        self.channelCount = channelCount
        self.samples = samples
    }

    /// A mono buffer holding `samples`.
    public init(mono samples: [Float]) {
        self.init(channelCount: 1, interleaved: samples)
    }

    /// Silences corrupt samples, which a decoded float file may hold;
    /// returns how many there were. See `[Float].silenceCorruptSamples`.
    @discardableResult
    public mutating func silenceCorruptSamples() -> Int { samples.silenceCorruptSamples() }

    /// The sample of `channel` in `frame`.
    public subscript(frame: Int, channel: Int) -> Float {
        get { samples[frame * channelCount + channel] }
        set { samples[frame * channelCount + channel] = newValue }
    }

    /// One channel, de-interleaved; a mono buffer's own samples, shared.
    public func channel(_ index: Int) -> [Float] {
        precondition(index >= 0 && index < channelCount, "channel \(index) out of range")
        if channelCount == 1 { return samples }
        return stride(from: index, to: samples.count, by: channelCount).map { samples[$0] }
    }

    /// All channels summed into one, each scaled by `1 / channelCount` so a
    /// signal present equally in every channel keeps its level.
    public func downmixedToMono() -> AudioBuffer {
        if channelCount == 1 { return self }
        let scale = 1 / Float(channelCount)
        var mono = [Float](repeating: 0, count: frameCount)
        for frame in 0..<frameCount {
            var sum: Float = 0
            for channel in 0..<channelCount { sum += samples[frame * channelCount + channel] }
            mono[frame] = sum * scale
        }
        return AudioBuffer(mono: mono)
    }

    /// Adds the frames of `other`, which must have as many channels, at the end.
    public mutating func append(_ other: AudioBuffer) {
        precondition(other.channelCount == channelCount, "channel counts differ")
        samples.append(contentsOf: other.samples)
    }

    /// Adds a copy of interleaved samples, a whole number of frames, at the end.
    public mutating func append(interleaved pointer: UnsafeBufferPointer<Float>) {
        precondition(pointer.count % channelCount == 0, "interleaved samples must hold whole frames")
        samples.append(contentsOf: pointer)
    }

    /// Calls `body` with the interleaved samples' own storage, to process them in place.
    public mutating func withUnsafeMutableBufferPointer<R>(
        _ body: (inout UnsafeMutableBufferPointer<Float>) throws -> R
    ) rethrows -> R {
        try samples.withUnsafeMutableBufferPointer(body)
    }
}

extension [Float] {
    /// No recording is 60 dB louder than full scale: a sample beyond this is corrupt.
    public static let corruptMagnitude: Float = 1_000

    /// Silences NaN, infinite and absurdly large samples, which would
    /// poison a resampler's memory or OpenAL's filters and limiter, and with
    /// them everything after; returns how many there were.
    @discardableResult
    public mutating func silenceCorruptSamples() -> Int {
        // Looks before it writes: the write's uniqueness check, hoisted out
        // of the loop, would otherwise copy a shared array that needs no change.
        guard let first = firstIndex(where: { !(abs($0) <= Self.corruptMagnitude) }) else { return 0 }
        var silenced = 0
        for index in first..<endIndex where !(abs(self[index]) <= Self.corruptMagnitude) {
            self[index] = 0
            silenced += 1
        }
        return silenced
    }
}
