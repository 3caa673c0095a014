import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A file the program was asked to write, opened the one way every writer
/// of the engine opens its outputs.
///
/// - A regular file, or a path where nothing is: written under a temporary
///   name in the same folder and renamed over the asked name on `commit`,
///   so an interrupted write leaves the old file, or nothing, under it. An
///   existing file's mode is kept.
/// - A symlink is followed: the file it names is written, the link stays.
/// - A character device, a FIFO, or the standard output (`-` or
///   /dev/stdout) is opened and written as it is, where `streams` allows:
///   /dev/null stays a device.
/// - A `record` output (a recording, `save`) is a new regular file written
///   under its own name as it grows; an existing one is replaced only when
///   forced, and a symlink, a device or a FIFO is refused.
/// - No output may be one of the `inputs` (the scene, the audio it reads),
///   nor one of the `outputs` the program writes already: the same file,
///   by device and inode, whatever path names it.
public final class OutputFile {
    /// How an output is opened: what it may be, and whether it replaces what is there.
    public enum Policy: Sendable {
        /// Written whole and renamed into place; devices, FIFOs and the standard output as they are.
        case replace(streams: Bool)
        /// A new regular file, written in place as it grows; an existing one only with `force`.
        case record(force: Bool)
        /// A new regular file written whole and renamed into place; an existing one only with `force`.
        case document(force: Bool)
    }

    /// The path as it was asked for.
    public let path: String
    /// Where the bytes go now: the temporary file, or the output itself.
    let writingPath: String
    /// Open for writing at `writingPath`.
    public let descriptor: Int32
    /// A device, a FIFO or the standard output: written as it is, not seekable.
    public let isStream: Bool
    /// The file the temporary one is renamed over; nil when written in place.
    private let target: String?
    /// A new file was asked for: one made under its name since the check is not replaced.
    private let keepsExisting: Bool
    private var finished = false

    /// Temporary files not yet committed, removed if the program is interrupted.
    nonisolated(unsafe) private static var pending = Set<String>()
    private static let pendingLock = NSLock()

    /// Opens `path` for writing as `policy` says; throws `OutputFileError` when it
    /// may not be written, among other reasons because it is one of `inputs`, or
    /// one of `outputs`, which the program writes already.
    public init(_ path: String, policy: Policy, inputs: [String] = [], outputs: [String] = []) throws {
        self.path = path
        keepsExisting = switch policy {
        case .record(let force), .document(let force): !force
        case .replace: false
        }
        func refuse(_ reason: String) -> OutputFileError { OutputFileError(path: path, reason: reason) }
        if path == "-" || path == "/dev/stdout" {
            guard case .replace(streams: true) = policy else { throw refuse("the standard output cannot take this output: it needs a file") }
            (writingPath, descriptor, isStream, target) = (path, dup(STDOUT_FILENO), true, nil)
            return
        }
        var link = stat()
        let exists = lstat(path, &link) == 0
        if !exists && errno != ENOENT { throw refuse(String(cString: strerror(errno))) }
        var info = stat()
        let resolves = exists && stat(path, &info) == 0
        if exists && !resolves {
            throw refuse(link.st_mode & S_IFMT == S_IFLNK ? "it is a symlink to nothing" : String(cString: strerror(errno)))
        }
        if let clash = Self.clash(path, inputs: inputs) { throw refuse(clash) }
        var streams = false
        switch policy {
        case .record(let force), .document(let force):
            if exists {
                switch link.st_mode & S_IFMT {
                case S_IFLNK: throw refuse("it is a symlink; name the file itself")
                case S_IFREG: if !force { throw refuse(Self.exists) }
                case S_IFDIR: throw refuse("it is a folder")
                default: throw refuse("it is a device, a FIFO or a socket, not a file")
                }
            }
        case .replace(let allowed):
            streams = allowed
        }
        if let clash = Self.clash(path, outputs: outputs) { throw refuse(clash) }
        if case .record = policy {
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | (keepsExisting ? O_EXCL : 0), 0o644)
            guard descriptor >= 0 else { throw refuse(errno == EEXIST ? Self.exists : String(cString: strerror(errno))) }
            (writingPath, self.descriptor, isStream, target) = (path, descriptor, false, nil)
        } else {
            let kind = resolves ? info.st_mode & S_IFMT : S_IFREG
            switch kind {
            case S_IFREG:
                // Follow a symlink to the file it names, and write beside that.
                var real = path
                if exists && link.st_mode & S_IFMT == S_IFLNK, let resolved = realpath(path, nil) {
                    real = String(cString: resolved)
                    free(resolved)
                }
                let folder = URL(fileURLWithPath: real).deletingLastPathComponent().path
                // Beside it, under its name cut short enough that the dot and the six random letters still fit a name.
                var name = Substring(URL(fileURLWithPath: real).lastPathComponent)
                while name.utf8.count > Self.longestName - 8 { name = name.dropLast() }
                var template = Array("\(folder)/.\(name).XXXXXX".utf8CString)
                let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
                guard descriptor >= 0 else { throw refuse("cannot write in \(folder): \(String(cString: strerror(errno)))") }
                let temporary = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
                _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
                // The mode the file has, or the one a new file gets.
                let mask = umask(0)
                umask(mask)
                fchmod(descriptor, resolves ? info.st_mode & 0o7777 : 0o666 & ~mask)
                Self.pendingLock.withLock { _ = Self.pending.insert(temporary) }
                (writingPath, self.descriptor, isStream, target) = (temporary, descriptor, false, real)
            case S_IFDIR:
                throw refuse("it is a folder")
            default:
                guard streams, kind == S_IFCHR || kind == S_IFIFO else { throw refuse("it is a device, a FIFO or a socket, not a file") }
                let descriptor = open(path, O_WRONLY | O_CLOEXEC)
                guard descriptor >= 0 else { throw refuse(String(cString: strerror(errno))) }
                (writingPath, self.descriptor, isStream, target) = (path, descriptor, true, nil)
            }
        }
    }

    /// Why `path` may not be written: it is the same file as one of
    /// `inputs`, by device and inode, whatever names it. Nil when it is none.
    public static func clash(_ path: String, inputs: [String]) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        for input in inputs {
            var other = stat()
            if stat(input, &other) == 0 && other.st_dev == info.st_dev && other.st_ino == info.st_ino {
                return input == path ? "it is one of the room's own inputs; choose another output"
                                     : "it is \(input), one of the room's own inputs; choose another output"
            }
        }
        return nil
    }

    /// Why `path` may not be written: it is one of `outputs`, which the
    /// program writes already, by name or by device and inode. Nil when it is none.
    public static func clash(_ path: String, outputs: [String]) -> String? {
        outputs.first { sameFile(path, $0) }.map {
            $0 == path ? "the room writes it already; choose another output" : "it is \($0), which the room writes already; choose another output"
        }
    }

    /// Whether two paths name one file: the same path, or, where both exist, the same device and inode.
    public static func sameFile(_ first: String, _ second: String) -> Bool {
        URL(fileURLWithPath: first).standardizedFileURL == URL(fileURLWithPath: second).standardizedFileURL
            || clash(first, inputs: [second]) != nil
    }

    /// The first of `outputs` that names the file one before it names, with
    /// that one's option; nil when none does. A stream (a character device
    /// such as /dev/null, a FIFO, the standard output) takes each output
    /// after the other and replaces none: it may repeat.
    public static func repeated(in outputs: [(option: String, path: String?)]) -> (option: String, path: String, earlier: String)? {
        let named = outputs.compactMap { output in output.path.map { (option: output.option, path: $0) } }
        for (index, output) in named.enumerated() {
            if output.path == "-" || output.path == "/dev/stdout" { continue }
            // What is not a file is opened as a stream or refused for what it is, never replaced.
            switch FileKind(path: output.path) {
            case .pipe, .device: continue
            case .missing, .regular, .directory: break
            }
            if let earlier = named[..<index].first(where: { sameFile(output.path, $0.path) }) {
                return (output.option, output.path, earlier.option)
            }
        }
        return nil
    }

    deinit { if !finished { abandon() } }

    /// Writes all of `bytes`.
    public func write(_ bytes: some Collection<UInt8>) throws {
        if let code = Self.write(bytes, to: descriptor) {
            throw OutputFileError(path: path, reason: "cannot write: \(String(cString: strerror(code)))")
        }
    }

    /// Writes all of `bytes` to `descriptor`, going on after interruptions
    /// and short writes; the errno of a write that failed, or nil.
    public static func write(_ bytes: some Collection<UInt8>, to descriptor: Int32) -> Int32? {
        var remaining = Array(bytes)[...]
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if written > 0 {
                remaining = remaining.dropFirst(written)
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return written < 0 ? errno : EIO
            }
        }
        return nil
    }

    /// Writes `text` as UTF-8.
    public func write(_ text: String) throws { try write(Array(text.utf8)) }

    /// Finishes the output: a temporary file is flushed to disk and renamed over the asked name.
    public func commit() throws {
        guard !finished else { return }
        finished = true
        defer { close(descriptor) }
        guard let target else { return }
        Self.pendingLock.withLock { _ = Self.pending.remove(writingPath) }
        func fail(_ reason: String) -> OutputFileError {
            unlink(writingPath)
            return OutputFileError(path: path, reason: reason)
        }
        guard fsync(descriptor) == 0 else { throw fail("cannot write: \(String(cString: strerror(errno)))") }
        if keepsExisting {
            // A link, unlike a rename, fails on a file another writer made under the name meanwhile.
            if link(writingPath, target) == 0 {
                unlink(writingPath)
                return
            }
            let code = errno
            guard code == EPERM || code == EOPNOTSUPP || code == ENOSYS else {
                throw fail(code == EEXIST ? Self.exists : "cannot write: \(String(cString: strerror(code)))")
            }
            // A filesystem without hard links: the check, then the rename.
            var info = stat()
            guard lstat(target, &info) != 0 && errno == ENOENT else { throw fail(Self.exists) }
        }
        guard rename(writingPath, target) == 0 else { throw fail("cannot write: \(String(cString: strerror(errno)))") }
    }

    private static let exists = "it exists; pass --force to replace it"
    /// The longest file name, in bytes, that Linux filesystems take.
    private static let longestName = Int(NAME_MAX)

    /// Gives the output up: a temporary file is removed, and the asked name keeps what it had.
    public func abandon() {
        guard !finished else { return }
        finished = true
        close(descriptor)
        if target != nil {
            unlink(writingPath)
            Self.pendingLock.withLock { _ = Self.pending.remove(writingPath) }
        }
    }

    /// Removes every temporary file not yet committed: for a program
    /// stopping on a signal, so no half-written output is left behind.
    public static func removeUncommitted() {
        pendingLock.withLock { for path in pending { unlink(path) } }
    }

    /// On SIGINT, SIGTERM or SIGHUP, removes what is not yet committed and
    /// exits with 128 plus the signal, as a shell reports it: an interrupted
    /// program leaves its outputs as they were.
    public static func removeUncommittedOnSignals() {
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: signalQueue)
            source.setEventHandler {
                removeUncommitted()
                _exit(128 + number)
            }
            source.resume()
            signalSources.append(source)
        }
    }

    private static let signalQueue = DispatchQueue(label: "output files on signals")
    nonisolated(unsafe) private static var signalSources: [DispatchSourceSignal] = []
}

/// An output that cannot be written as asked.
public struct OutputFileError: Error, CustomStringConvertible, Sendable {
    /// The output's path as it was asked for.
    public let path: String
    /// Why it cannot be written, worded to follow the path ("it is a folder").
    public let reason: String
    /// The path and the reason, on one line.
    public var description: String { "\(path): \(reason)" }
}
