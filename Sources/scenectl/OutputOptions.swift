import ArgumentParser
import Engine
import Foundation

/// The files one command writes, checked against one another before anything runs.
enum OutputOptions {
    /// Throws a usage error where two of `outputs` name one file: the later
    /// one written would replace the earlier. A character device such as
    /// /dev/null takes both and keeps neither, so it may be named twice.
    static func requireDistinct(_ outputs: [(option: String, path: String?)]) throws {
        let named = outputs.compactMap { output in output.path.map { (option: output.option, path: $0) } }
        for (index, output) in named.enumerated() where !isCharacterDevice(output.path) {
            for earlier in named[..<index] where sameFile(output.path, earlier.path) {
                throw ValidationError("\(output.option) \"\(output.path)\" is also the \(earlier.option) file; it would be overwritten")
            }
        }
    }

    private static func isCharacterDevice(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFCHR
    }

    /// Whether two paths name one file: the same path, or, where both exist, the same device and inode.
    static func sameFile(_ first: String, _ second: String) -> Bool {
        URL(fileURLWithPath: first).standardizedFileURL == URL(fileURLWithPath: second).standardizedFileURL
            || OutputFile.clash(first, inputs: [second]) != nil
    }
}
