import ArgumentParser
import Devices
import Engine
import Foundation
import Logging
import Scene
import Spatial

struct Render: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Render a scene offline into a WAV or FLAC file and print a summary.",
        discussion: """
        Validates the scene first: a scene with problems prints each of them \
        (file:line: field: value: reason) and renders nothing (exit code 2).
        """
    )

    /// Renders longer than this report their progress on standard error.
    static let progressThreshold = 5.0

    @Argument(help: "The scene file (YAML or JSON).")
    var scene: String

    @Option(name: .long, help: "The file to write: .wav or .flac.")
    var out: String

    @Option(name: .long, help: "Seconds to render (default: the scene's duration, or 10).")
    var seconds: Double?

    @Option(name: .long, help: "Output route: \(OutputRoute.allCases.map(\.rawValue).joined(separator: ", ")) (default: the scene's).")
    var route: OutputRoute?

    @Option(name: .customLong("route-change"),
            help: "Change the route at a time, e.g. 5:speakers, crossfading; repeatable. Routes keep the output's channel count.")
    var routeChanges: [RouteChange] = []

    @Option(name: .long, help: "File encoding: \(AudioFileFormat.allCases.map(\.rawValue).joined(separator: ", ")) (default: wav-float for .wav, flac for .flac).")
    var format: AudioFileFormat?

    @Flag(name: .long, help: "Print the summary as JSON.")
    var json = false

    static let defaultSeconds = 10.0

    func validate() throws {
        if let seconds, !(seconds > 0 && seconds <= 3_600) {
            throw ValidationError("--seconds must be more than 0 and at most 3600, got \(seconds)")
        }
        guard let implied = AudioFileFormat(path: out) else {
            throw ValidationError("--out must name a .wav or .flac file, got \"\(out)\"")
        }
        for change in routeChanges where seconds.map({ change.seconds >= $0 }) ?? false {
            throw ValidationError("--route-change at \(change.seconds) s is not inside the \(seconds!) s rendered")
        }
        if let format, (format == .flac) != (implied == .flac) {
            throw ValidationError("--format \(format) does not fit the file name \"\(out)\"")
        }
    }

    func run() throws {
        var logger = Logger(label: "scenectl")
        logger.logLevel = .info
        let room: Room
        do {
            room = try Room.load(path: scene)
        } catch let error as SceneValidationError {
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            let count = error.issues.count
            FileHandle.standardError.write(Data("\(scene): \(count) problem\(count == 1 ? "" : "s"); nothing rendered\n".utf8))
            throw ExitCode(ExitStatus.usage)
        }

        let seconds = seconds ?? room.scene.duration ?? Self.defaultSeconds
        let format = format ?? AudioFileFormat(path: out)!
        let layout = (route ?? room.scene.route).layout
        for change in routeChanges {
            guard change.seconds < seconds else {
                throw ValidationError("--route-change at \(change.seconds) s is not inside the \(seconds) s rendered")
            }
            guard change.route.layout == layout else {
                throw ValidationError("--route-change to \(change.route) needs \(change.route.layout.rawValue), "
                    + "but the file is \(layout.rawValue); a file keeps its channels")
            }
        }
        let writer = try AudioFileWriter(path: out, format: format, layout: layout, sampleRate: Room.sampleRate)
        var reported = 0
        let summary = try OfflineRender.run(room: room, route: route, seconds: seconds, routeChanges: routeChanges,
                                            writer: writer, format: format) { done in
            guard seconds > Self.progressThreshold else { return }
            let quarter = Int(done * 4)
            if quarter > reported {
                reported = quarter
                logger.info("rendering \(room.scene.name): \(quarter * 25)% of \(seconds) s")
            }
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(summary), as: UTF8.self))
        } else {
            print(summary)
        }
    }
}
