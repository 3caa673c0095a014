import AudioCore
import CSndFile

#if canImport(Glibc)
import Glibc
#endif

/// Container and sample encoding of a written file.
public enum AudioFileFormat: String, Sendable, CaseIterable, CustomStringConvertible {
    /// WAV of 32-bit float samples (`wav-float`), the default for `.wav`.
    case wavFloat = "wav-float"
    /// WAV of 16-bit integer samples (`wav-16`), clipped at full scale.
    case wav16 = "wav-16"
    /// FLAC of 24-bit integer samples (`flac`), clipped at full scale.
    case flac = "flac"

    /// The format's name, as `--format` takes it.
    public var description: String { rawValue }

    /// The format a path's extension implies: WAV as float, FLAC as 24-bit.
    public init?(path: String) {
        let lowered = path.lowercased()
        if lowered.hasSuffix(".wav") { self = .wavFloat }
        else if lowered.hasSuffix(".flac") { self = .flac }
        else { return nil }
    }

    /// libsndfile's format; WAV with more than two channels is written as
    /// WAVE_FORMAT_EXTENSIBLE so the file says which speaker each channel feeds.
    func sndFileFormat(channelCount: Int) -> Int32 {
        let wav = channelCount > 2 ? SF_FORMAT_WAVEX : SF_FORMAT_WAV
        return switch self {
        case .wavFloat: Int32(wav | SF_FORMAT_FLOAT)
        case .wav16: Int32(wav | SF_FORMAT_PCM_16)
        case .flac: Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_24)
        }
    }
}

/// Streams interleaved float blocks into an audio file.
public final class AudioFileWriter {
    /// The file being written.
    public let path: String
    /// Channels per frame of the blocks it takes.
    public let channelCount: Int
    private var file: OpaquePointer?

    /// A file for an output layout; WAV files record which speaker each channel feeds.
    public convenience init(path: String, format: AudioFileFormat, layout: ChannelLayout, sampleRate: Int) throws {
        try self.init(destination: .path(path), format: format, layout: layout, sampleRate: sampleRate)
    }

    /// Writes into the file `output` opened, for an output layout: through its
    /// descriptor, so a name swapped since (for a symlink to another file)
    /// changes nothing of where the samples go.
    public convenience init(output: OutputFile, format: AudioFileFormat, layout: ChannelLayout, sampleRate: Int) throws {
        try self.init(destination: .output(output), format: format, layout: layout, sampleRate: sampleRate)
    }

    /// Creates or truncates the file at `path`, at `sampleRate` Hz, with no speaker map;
    /// throws `SndFileError` when libsndfile refuses, `AudioFileProblem` for a pipe.
    public convenience init(path: String, format: AudioFileFormat, channelCount: Int, sampleRate: Int) throws {
        try self.init(destination: .path(path), format: format, channelCount: channelCount, sampleRate: sampleRate)
    }

    /// Writes into the file `output` opened, through its descriptor, at
    /// `sampleRate` Hz, with no speaker map.
    public convenience init(output: OutputFile, format: AudioFileFormat, channelCount: Int, sampleRate: Int) throws {
        try self.init(destination: .output(output), format: format, channelCount: channelCount, sampleRate: sampleRate)
    }

    /// Where the samples go: a path opened here, or a file already open.
    private enum Destination {
        case path(String)
        case output(OutputFile)
    }

    private convenience init(destination: Destination, format: AudioFileFormat, layout: ChannelLayout, sampleRate: Int) throws {
        try self.init(destination: destination, format: format, channelCount: layout.channelCount, sampleRate: sampleRate)
        if format != .flac && layout.channelCount > 2 {
            // FLAC fixes its channel order, which is already WAV's.
            var map = layout.speakers.map(Self.channelMapEntry)
            let size = Int32(map.count * MemoryLayout<Int32>.size)
            if sf_command(file, Int32(SFC_SET_CHANNEL_MAP_INFO), &map, size) != SF_TRUE {
                throw SndFileError.pending("sf_command(SFC_SET_CHANNEL_MAP_INFO)", path: path, file: file)
            }
        }
    }

    private init(destination: Destination, format: AudioFileFormat, channelCount: Int, sampleRate: Int) throws {
        let path = switch destination {
        case .path(let path): path
        case .output(let output): output.path
        }
        var info = SF_INFO()
        info.channels = Int32(channelCount)
        info.samplerate = Int32(sampleRate)
        info.format = format.sndFileFormat(channelCount: channelCount)
        guard sf_format_check(&info) == SF_TRUE else {
            throw SndFileError(call: "sf_format_check", path: path,
                               reason: "\(format) with \(channelCount) channels at \(sampleRate) Hz is not a valid format")
        }
        let opened: OpaquePointer?
        switch destination {
        case .path(let path):
            // Opening a pipe to write waits for a reader; a device such as /dev/null is fine.
            if FileKind(path: path) == .pipe { throw AudioFileProblem(path: path, reason: "is a pipe or a socket, not a file to write") }
            opened = sf_open(path, Int32(SFM_WRITE), &info)
        case .output(let output):
            // Its own descriptor: the output may close its own (a recording's commit does) while this writes on.
            let descriptor = fcntl(output.descriptor, F_DUPFD_CLOEXEC, 0)
            guard descriptor >= 0 else {
                throw SndFileError(call: "fcntl(F_DUPFD_CLOEXEC)", path: path, reason: String(cString: strerror(errno)))
            }
            // libsndfile closes it with the file, and on failing to open it as well.
            opened = sf_open_fd(descriptor, Int32(SFM_WRITE), &info, Int32(SF_TRUE))
        }
        guard let file = opened else {
            let call = if case .output = destination { "sf_open_fd" } else { "sf_open" }
            throw SndFileError.pending(call, path: path, file: nil)
        }
        // Integer encodings clip at full scale instead of wrapping.
        sf_command(file, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        self.file = file
        self.path = path
        self.channelCount = channelCount
    }

    deinit { if let file { sf_close(file) } }

    private static func channelMapEntry(_ speaker: Speaker) -> Int32 {
        let entry = switch speaker {
        case .frontLeft: SF_CHANNEL_MAP_LEFT
        case .frontRight: SF_CHANNEL_MAP_RIGHT
        case .frontCenter: SF_CHANNEL_MAP_CENTER
        case .lowFrequency: SF_CHANNEL_MAP_LFE
        case .sideLeft: SF_CHANNEL_MAP_SIDE_LEFT
        case .sideRight: SF_CHANNEL_MAP_SIDE_RIGHT
        case .backLeft: SF_CHANNEL_MAP_REAR_LEFT
        case .backRight: SF_CHANNEL_MAP_REAR_RIGHT
        }
        return Int32(entry)
    }

    /// Writes the header for what the file holds so far, so it reads back whole if the program stops now.
    public func updateHeaderNow() {
        if let file { sf_command(file, Int32(SFC_UPDATE_HEADER_NOW), nil, 0) }
    }

    /// Keeps the header current after every write, so a file still being
    /// written (a live recording) reads whole at any moment.
    public func updateHeaderOnEveryWrite() {
        if let file { sf_command(file, Int32(SFC_SET_UPDATE_HEADER_AUTO), nil, Int32(SF_TRUE)) }
    }

    /// Appends the whole frames of an interleaved `block`; throws `SndFileError` once closed or when libsndfile writes fewer.
    public func write(interleaved block: UnsafeBufferPointer<Float>) throws {
        guard let file else { throw SndFileError(call: "sf_writef_float", path: path, reason: "file already closed") }
        let frames = block.count / channelCount
        let written = sf_writef_float(file, block.baseAddress, sf_count_t(frames))
        if written != frames { throw SndFileError.pending("sf_writef_float", path: path, file: file) }
    }

    /// Appends every frame of `buffer`, which should have `channelCount` channels.
    public func write(_ buffer: AudioBuffer) throws {
        try buffer.samples.withUnsafeBufferPointer { try write(interleaved: $0) }
    }

    /// Flushes and closes; the writer accepts nothing afterwards.
    public func close() throws {
        guard let file else { return }
        self.file = nil
        if sf_close(file) != 0 { throw SndFileError.pending("sf_close", path: path, file: nil) }
    }
}
