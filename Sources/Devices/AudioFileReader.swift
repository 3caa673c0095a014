import AudioCore
import CSndFile

/// Audio decoded from a file: samples as they are in the file, and their rate.
public struct DecodedAudio: Sendable {
    /// The decoded samples, interleaved, with the file's channels.
    public var buffer: AudioBuffer
    /// The file's sample rate in Hz.
    public var sampleRate: Int
    /// The duration in seconds.
    public var seconds: Double { Double(buffer.frameCount) / Double(sampleRate) }

    /// The audio converted to `rate`: its channels averaged into one with
    /// `mono`, or as they are.
    public func converted(to rate: Int, mono: Bool) throws -> AudioBuffer {
        try SampleRateConverter.convert(mono ? buffer.downmixedToMono() : buffer, from: sampleRate, to: rate)
    }

    /// The channels averaged into one, converted to `rate`.
    public func monoSamples(at rate: Int) throws -> [Float] { try converted(to: rate, mono: true).samples }
}

/// Reads whole audio files through libsndfile.
public enum AudioFileReader {
    /// Sample rates a file may declare; outside this it is corrupt or absurd.
    public static let plausibleSampleRates = 1_000...768_000
    /// Most channels a file may have; one with more is refused.
    public static let maximumChannels = 64
    /// Longest file the engine loads into memory.
    public static let maximumSeconds = 3_600.0

    /// The file's channel count, rate and declared length, from its header.
    public static func header(path: String) throws -> (channels: Int, sampleRate: Int, frames: Int) {
        let (file, info) = try open(path)
        sf_close(file)
        return (Int(info.channels), Int(info.samplerate), Int(info.frames))
    }

    /// What decoding a file of this header takes: its samples as 32-bit
    /// floats at its own rate or at `engineRate`, whichever holds more.
    public static func decodedBytes(channels: Int, sampleRate: Int, frames: Int, engineRate: Int) -> Int {
        let converted = Double(frames) * Double(engineRate) / Double(max(1, sampleRate))
        let bytes = max(Double(frames), converted.rounded(.up)) * Double(channels) * Double(MemoryLayout<Float>.size)
        return bytes < Double(Int.max) ? Int(bytes) : .max
    }

    /// Decodes the whole file; one that comes to more than `byteLimit`, as
    /// `decodedBytes` counts it for `engineRate`, is refused whatever its header declared.
    public static func read(path: String, byteLimit: Int = .max, engineRate: Int? = nil) throws -> DecodedAudio {
        let (file, info) = try open(path)
        defer { sf_close(file) }
        let channels = Int(info.channels)
        let sampleRate = Int(info.samplerate)
        // A file converted up to a higher rate takes more once converted than decoded.
        let growth = max(1, Double(engineRate ?? sampleRate) / Double(sampleRate))
        let affordable = Double(byteLimit / (channels * MemoryLayout<Float>.size)) / growth
        let maximumFrames = min(Int(maximumSeconds * Double(sampleRate)), Int(min(affordable, Double(Int.max / 2))))

        // Read in chunks rather than trusting the declared length: a corrupt
        // header may declare gigabytes that are not there.
        var buffer = AudioBuffer(channelCount: channels)
        let chunkFrames = 65_536
        var chunk = [Float](repeating: 0, count: chunkFrames * channels)
        while true {
            let read = chunk.withUnsafeMutableBufferPointer {
                Int(sf_readf_float(file, $0.baseAddress, sf_count_t(chunkFrames)))
            }
            if read <= 0 { break }
            chunk.withUnsafeBufferPointer {
                buffer.append(interleaved: UnsafeBufferPointer(rebasing: $0[0..<(read * channels)]))
            }
            if buffer.frameCount > maximumFrames {
                guard Double(buffer.frameCount) > maximumSeconds * Double(sampleRate) else {
                    throw AudioFileProblem(path: path, reason: "decodes to more than the \(ByteCount(byteLimit)) left of the memory budget")
                }
                throw AudioFileProblem(path: path, reason: "is longer than \(Int(maximumSeconds)) s")
            }
        }
        if sf_error(file) != 0 {
            throw SndFileError.pending("sf_readf_float", path: path, file: file)
        }
        guard buffer.frameCount > 0 else {
            throw AudioFileProblem(path: path, reason: "holds no audio frames")
        }
        // A float file may hold NaN, infinities or absurd values; silenced
        // here, they never reach a resampler or a filter, whose state they would poison.
        buffer.silenceCorruptSamples()
        return DecodedAudio(buffer: buffer, sampleRate: sampleRate)
    }

    /// Opens `path` for reading and refuses headers no real recording has.
    private static func open(_ path: String) throws -> (OpaquePointer, SF_INFO) {
        switch FileKind(path: path) {
        // A pipe or a device could keep the reader waiting, or reading, forever.
        case .pipe, .device: throw AudioFileProblem(path: path, reason: "is not a regular file")
        case .directory: throw AudioFileProblem(path: path, reason: "is a folder, not an audio file")
        case .missing, .regular: break
        }
        var info = SF_INFO()
        guard let file = sf_open(path, Int32(SFM_READ), &info) else {
            throw SndFileError.pending("sf_open", path: path, file: nil)
        }
        let channels = Int(info.channels)
        let sampleRate = Int(info.samplerate)
        if !(1...maximumChannels).contains(channels) {
            sf_close(file)
            throw AudioFileProblem(path: path, reason: "has \(channels) channels; at most \(maximumChannels) are supported")
        }
        if !plausibleSampleRates.contains(sampleRate) {
            sf_close(file)
            throw AudioFileProblem(path: path, reason: "declares a sample rate of \(sampleRate) Hz, outside \(plausibleSampleRates.lowerBound)-\(plausibleSampleRates.upperBound) Hz")
        }
        return (file, info)
    }
}
