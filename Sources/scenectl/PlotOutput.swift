import ArgumentParser
import Engine
import Foundation

/// A `--plot` file: the SVG as it is drawn, or a PNG of it that
/// rsvg-convert makes. Opened as every other output is.
struct PlotOutput {
    enum Format { case svg, png }

    static let converter = "rsvg-convert", converterPackage = "librsvg2-bin"

    let path: String
    let format: Format
    private let file: OutputFile

    static func format(of path: String) -> Format? {
        switch (path as NSString).pathExtension.lowercased() {
        case "svg": .svg
        case "png": .png
        default: nil
        }
    }

    /// Checks each of `paths` before anything is rendered: its extension,
    /// that it is none of the other outputs, and that a PNG's converter is installed.
    static func validate(_ paths: [String], others: [(option: String, path: String?)]) throws {
        for (index, path) in paths.enumerated() {
            guard let format = format(of: path) else {
                throw ValidationError("--plot must name a .svg or .png file, got \"\(path)\"")
            }
            for case let (option, other?) in others + paths[..<index].map({ ("--plot", $0) }) where OutputFile.sameFile(path, other) {
                throw ValidationError("--plot \"\(path)\" is also the \(option) file; it would be overwritten")
            }
            if format == .png && converterPath() == nil {
                throw ValidationError("--plot \"\(path)\": a PNG is made by \(converter), which is not on PATH; "
                    + "install the Debian package \(converterPackage) (apt-get install \(converterPackage)), or ask for a .svg")
            }
        }
    }

    /// Opens the plot as an output that may be none of `inputs`.
    init(_ path: String, inputs: [String]) throws {
        self.path = path
        format = Self.format(of: path)!
        do {
            file = try OutputFile(path, policy: .replace(streams: true), inputs: inputs)
        } catch let error as OutputFileError {
            throw ValidationError("--plot \(error)")
        }
    }

    /// Writes the plot, drawn as `svg`; `commit` puts it in place.
    func write(svg: String) throws {
        switch format {
        case .svg: try file.write(svg)
        case .png: try convert(svg)
        }
    }

    func commit() throws { try file.commit() }

    /// rsvg-convert reads the SVG from a temporary file and writes the PNG straight into the output.
    private func convert(_ svg: String) throws {
        guard let converter = Self.converterPath() else {
            throw ValidationError("--plot \"\(path)\": \(Self.converter) is gone; install \(Self.converterPackage)")
        }
        let source = FileManager.default.temporaryDirectory.appendingPathComponent("scenectl-plot-\(UUID().uuidString).svg")
        try svg.write(to: source, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: source) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: converter)
        // At the SVG's own size: one pixel a unit.
        process.arguments = ["--format", "png", source.path]
        process.standardOutput = FileHandle(fileDescriptor: file.descriptor, closeOnDealloc: false)
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw PlotError(description: "\(path): \(Self.converter) failed (exit \(process.terminationStatus)): "
                + message.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    static func converterPath() -> String? {
        let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
        return folders.map { "\($0)/\(converter)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}

/// A plot that could not be made.
struct PlotError: Error, CustomStringConvertible {
    let description: String
}
