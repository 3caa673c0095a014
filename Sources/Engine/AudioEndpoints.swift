import AudioCore
import Devices
import Dispatch
import Foundation
import Synchronization

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

/// Records what the engine plays into a file without writing on the
/// thread that plays: the block is copied into a ring, and a thread of the
/// recording's own writes it, about every 20 ms, updating the file's
/// header with each write so it reads back whole however the program ends. A write that fails (a
/// full disk) stops the recording, says why once through `stopped`, closes
/// the file, and the room plays on; so does a ring the writer cannot keep up with.
public final class RecordingSink: AudioSink, @unchecked Sendable {
    /// The file as it was asked for.
    public let path: String
    private let writer: AudioFileWriter
    private let ring: SampleRing
    private let running = Atomic<Bool>(true)
    private let failed = Atomic<Bool>(false)
    private let overflowed = Atomic<Bool>(false)
    private let finished = DispatchSemaphore(value: 0)
    private let stopped: @Sendable (String) -> Void

    /// Records into `writer` from now; `stopped` hears, on the recording's
    /// thread, why it stopped early, if it does.
    public init(path: String, writer: AudioFileWriter, stopped: @escaping @Sendable (String) -> Void = { _ in }) {
        self.path = path
        self.writer = writer
        self.stopped = stopped
        // Two seconds of the file's channels.
        ring = SampleRing(capacity: 2 * Room.sampleRate * writer.channelCount)
        // The header follows every write, on the recording's thread: a reader, or a crash, finds the file whole.
        writer.updateHeaderOnEveryWrite()
        let thread = Thread { [self] in drain() }
        thread.name = "recorder"
        thread.start()
    }

    /// Copies the block into the ring; the render thread never waits on the disk. A ring that
    /// overflows is reported by the recorder's thread: whoever hears it may lock or allocate.
    public func play(_ block: UnsafeBufferPointer<Float>, channels: Int) throws {
        guard running.load(ordering: .relaxed), !failed.load(ordering: .relaxed) else { return }
        if ring.write(block) < block.count { overflowed.store(true, ordering: .releasing) }
    }

    /// Writes what the ring still holds and closes the file, its header
    /// final. Call once nothing plays into it any more.
    public func close() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        finished.wait()
    }

    private func stop(_ reason: String) {
        guard !failed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        stopped(reason)
    }

    private func drain() {
        defer { finished.signal() }
        let frames = Room.sampleRate / 10, channels = writer.channelCount
        var chunk = [Float](repeating: 0, count: frames * channels)
        while true {
            let stopping = !running.load(ordering: .acquiring)
            let got = chunk.withUnsafeMutableBufferPointer { ring.read(into: $0) } / channels * channels
            if got > 0 && !failed.load(ordering: .acquiring) {
                do {
                    try chunk.withUnsafeBufferPointer { try writer.write(interleaved: UnsafeBufferPointer(rebasing: $0[0..<got])) }
                } catch {
                    stop("\(error)")
                    // What it holds, it says: the header is written in place, needing no more room.
                    writer.updateHeaderNow()
                }
            }
            if overflowed.load(ordering: .acquiring) { stop("the disk fell behind by more than two seconds") }
            // A recording that stopped early lets its file (and its disk) go now, not when the room ends.
            if failed.load(ordering: .acquiring) || (stopping && got == 0) { break }
            if got == 0 { Thread.sleep(forTimeInterval: 0.02) }
        }
        try? writer.close()
    }
}

/// Plays nothing: for rooms rendered only for their events or their uplink.
public final class NullAudioSink: AudioSink {
    /// A sink that plays nothing.
    public init() {}

    /// Drops the block.
    public func play(_ block: UnsafeBufferPointer<Float>, channels: Int) throws {}
}
