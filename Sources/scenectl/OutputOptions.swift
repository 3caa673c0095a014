import ArgumentParser
import Engine

/// The files one command writes, checked against one another before anything runs.
enum OutputOptions {
    /// Throws a usage error where two of `outputs` name one file: the later
    /// one written would replace the earlier.
    static func requireDistinct(_ outputs: [(option: String, path: String?)]) throws {
        if let repeated = OutputFile.repeated(in: outputs) {
            throw ValidationError("\(repeated.option) \"\(repeated.path)\" is also the \(repeated.earlier) file; it would be overwritten")
        }
    }
}
