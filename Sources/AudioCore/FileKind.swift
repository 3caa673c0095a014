#if canImport(Glibc)
import Glibc
#endif

/// What a path names, for refusing what a reader or writer would wait on:
/// a pipe waits for the other end, a terminal for its user, and a device
/// such as /dev/zero may never end.
public enum FileKind: Equatable, Sendable {
    /// Nothing the path can reach: no such file, a dangling symlink, or no permission to look.
    case missing
    /// A regular file.
    case regular
    /// A folder.
    case directory
    /// A named pipe or a socket.
    case pipe
    /// A character or block device.
    case device

    /// Follows symbolic links.
    public init(path: String) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            self = .missing
            return
        }
        switch status.st_mode & S_IFMT {
        case S_IFREG: self = .regular
        case S_IFDIR: self = .directory
        case S_IFIFO, S_IFSOCK: self = .pipe
        default: self = .device
        }
    }
}
