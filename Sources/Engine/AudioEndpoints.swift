import AudioCore
import Devices

/// Where the engine's microphone comes from: 48 kHz mono float, one block
/// at a time. Like PlanetKit's custom microphone, an app may set its own in
/// place of the device.
public protocol AudioSource: AnyObject {
    /// Fills `block` with the next samples; silence where there are none.
    /// Called on the render thread: it must not block or allocate.
    func read(into block: UnsafeMutableBufferPointer<Float>)
}

/// Where the engine's output goes: interleaved 48 kHz float, one block at
/// a time. A sink that mixes in audio of its own and plays it reports what
/// it played through the engine's echo-reference calls.
public protocol AudioSink: AnyObject {
    /// Called on the render thread: it must not block or allocate.
    func play(_ block: UnsafeBufferPointer<Float>, channels: Int) throws
}

/// A recording played as the microphone, then silence, or over and over.
public final class FileAudioSource: AudioSource {
    private let samples: [Float]
    private let loop: Bool
    @exclusivity(unchecked) private var position = 0

    /// Plays `samples` (mono, 48 kHz) once, or over and over with `loop`.
    public init(samples: [Float], loop: Bool = false) {
        self.samples = samples
        self.loop = loop && !samples.isEmpty
    }

    /// A file of any rate, mixed to mono and converted to 48 kHz.
    public convenience init(path: String) throws {
        try self.init(samples: AudioFileReader.read(path: path).monoSamples(at: Room.sampleRate))
    }

    /// The next samples of the recording; silence once it ends, unless it loops.
    public func read(into block: UnsafeMutableBufferPointer<Float>) {
        for index in block.indices {
            block[index] = position < samples.count ? samples[position] : 0
            position += 1
            if loop && position == samples.count { position = 0 }
        }
    }
}

/// A microphone the app pushes samples into from its own thread; the
/// engine takes them a block at a time, and silence when they run short.
public final class PushedAudioSource: AudioSource, @unchecked Sendable {
    private let ring: SampleRing
    /// Samples that may wait: beyond them the oldest are dropped, so a
    /// device that runs a little fast cannot make the microphone ever later.
    private let maximumQueued: Int

    /// - Parameters:
    ///   - capacity: samples it holds before refusing more; one second by default.
    ///   - maximumQueued: samples left waiting after a read, at most; all of them by default.
    public init(capacity: Int = Room.sampleRate, maximumQueued: Int? = nil) {
        ring = SampleRing(capacity: capacity)
        self.maximumQueued = maximumQueued ?? capacity
    }

    /// Adds samples; returns how many fitted.
    @discardableResult
    public func push(_ samples: UnsafeBufferPointer<Float>) -> Int { ring.write(samples) }

    /// Samples waiting to be read.
    public var queued: Int { ring.count }

    /// The oldest samples pushed, silence where there are too few; samples
    /// beyond `maximumQueued` are dropped first.
    public func read(into block: UnsafeMutableBufferPointer<Float>) {
        let excess = ring.count - block.count - maximumQueued
        if excess > 0 { ring.skip(excess) }
        let got = ring.read(into: block)
        for index in got..<block.count { block[index] = 0 }
    }
}

/// Writes what the engine plays to a file.
public final class FileRecorderSink: AudioSink {
    /// The file being written.
    public let writer: AudioFileWriter

    /// Records into `writer`, which the caller closes.
    public init(writer: AudioFileWriter) {
        self.writer = writer
    }

    /// Appends the block to the file.
    public func play(_ block: UnsafeBufferPointer<Float>, channels: Int) throws {
        try writer.write(interleaved: block)
    }
}

/// Plays nothing: for rooms rendered only for their events or their uplink.
public final class NullAudioSink: AudioSink {
    /// A sink that plays nothing.
    public init() {}

    /// Drops the block.
    public func play(_ block: UnsafeBufferPointer<Float>, channels: Int) throws {}
}
