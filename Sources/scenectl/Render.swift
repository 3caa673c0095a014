import ArgumentParser
import Control
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

    @Option(name: .long, parsing: .unconditional, help: "Seconds to render (default: the scene's duration, or 10).",
            transform: Self.parseSeconds)
    var seconds: Double?

    @Option(name: .long, help: "Output route: \(OutputRoute.allCases.map(\.rawValue).joined(separator: ", ")) (default: the scene's).")
    var route: OutputRoute?

    @Option(name: .customLong("route-change"), parsing: .unconditionalSingleValue,
            help: "Change the route at a time, e.g. 5:speakers, crossfading; repeatable. Routes keep the output's channel count.",
            transform: RouteChange.parse)
    var routeChanges: [RouteChange] = []

    @Option(name: .long, help: "File encoding: \(AudioFileFormat.allCases.map(\.rawValue).joined(separator: ", ")) (default: wav-float for .wav, flac for .flac).")
    var format: AudioFileFormat?

    @Flag(name: .long, help: "Print the summary as JSON.")
    var json = false

    @Option(name: .long, help: "A microphone recording (one channel, any rate) in place of the scene's voice.mic.")
    var mic: String?

    @Option(name: .long, help: "An impulse response (any rate) through which the output reaches the microphone, as a room's echo.")
    var echo: String?

    @Option(name: .long, help: "Write the events, one JSON object per line, timed on the room's timeline.")
    var events: String?

    @Option(name: .customLong("prompt"), parsing: .unconditionalSingleValue, help: "Trigger a prompt at a time, e.g. 3.5:welcome; repeatable.",
            transform: PromptTrigger.parse)
    var prompts: [PromptTrigger] = []

    @Option(name: .customLong("plot"),
            help: "Draw the session on one time axis: levels per channel, ducking, who talks, events. .svg, or .png (made by rsvg-convert); repeatable.")
    var plots: [String] = []

    @Option(parsing: .unconditional,
            help: "The most decoded audio the room may hold (2G, 512M, ...): a scene over it is refused before anything is decoded (default: \(MemoryBudget.standard)).",
            transform: MemoryBudget.parse)
    var memoryBudget = MemoryBudget.standard

    static let defaultSeconds = 10.0

    /// `--seconds`, refused in terms of what was written: `1e-400` reads as 0.
    static func parseSeconds(_ text: String) throws -> Double {
        guard let seconds = TimedArgument.decimal(text) else { throw ValidationError("not a number of seconds, such as 90 or 2.5") }
        guard seconds >= 0 && seconds <= SceneDescription.longestDuration else {
            throw ValidationError("expected more than 0 and at most \(Int(SceneDescription.longestDuration)) s")
        }
        guard Room.frame(atSeconds: seconds) >= 1 else {
            throw ValidationError("less than one sample at \(Room.sampleRate) Hz; nothing would be rendered")
        }
        return seconds
    }

    func validate() throws {
        guard let implied = AudioFileFormat(path: out) else {
            throw ValidationError("--out must name a .wav or .flac file, got \"\(out)\"")
        }
        if let problem = RouteChange.problem(in: routeChanges, renderingFrames: seconds.map(Room.frame(atSeconds:)) ?? .max) {
            throw ValidationError("--route-change: \(problem)")
        }
        if let format, (format == .flac) != (implied == .flac) {
            throw ValidationError("--format \(format) does not fit the file name \"\(out)\"")
        }
        if let seconds { try Self.requirePromptsInside(prompts, seconds: seconds) }
        try OutputOptions.requireDistinct([("--out", out), ("--events", events)])
        try PlotOutput.validate(plots, others: [("--out", out), ("--events", events)])
    }

    func run() throws {
        var logger = Logger(label: "scenectl")
        logger.logLevel = .info
        let room: Room
        do {
            room = try Room.load(path: scene, budget: memoryBudget)
        } catch let error as SceneValidationError {
            Console.error("\(error)")
            let count = error.issues.count
            Console.error("\(scene): \(count) problem\(count == 1 ? "" : "s"); nothing rendered")
            throw ExitCode(ExitStatus.usage)
        }

        let seconds = seconds ?? room.scene.duration ?? Self.defaultSeconds
        let format = format ?? AudioFileFormat(path: out)!
        let layout = (route ?? room.requestedRoute).layout
        if let problem = RouteChange.problem(in: routeChanges, renderingFrames: Room.frame(atSeconds: seconds)) {
            throw ValidationError("--route-change: \(problem)")
        }
        for change in routeChanges {
            guard change.route.layout == layout else {
                throw ValidationError("--route-change to \(change.route) needs \(change.route.layout.rawValue), "
                    + "but the file is \(layout.rawValue); a file keeps its channels")
            }
        }
        let voice = try offlineVoice(room: room, seconds: seconds)
        // Nothing the room reads is written over; an interrupted render leaves no half file under either name.
        let inputs = room.inputFiles + [mic, echo].compactMap { $0 }
        let audio: OutputFile, eventsFile: OutputFile?
        do {
            audio = try OutputFile(out, policy: .replace(streams: false), inputs: inputs)
            eventsFile = try events.map { try OutputFile($0, policy: .replace(streams: true), inputs: inputs) }
        } catch let error as OutputFileError {
            throw ValidationError("\(error)")
        }
        let plotFiles = try plots.map { try PlotOutput($0, inputs: inputs) }
        var trace = RenderTrace(seconds: seconds)
        var posted: [EngineEvent] = []
        OutputFile.removeUncommittedOnSignals()
        let writer = try AudioFileWriter(output: audio, format: format, layout: layout, sampleRate: Room.sampleRate)
        var reported = 0
        var eventsError: Error?
        var summary = try OfflineRender.run(room: room, route: route, seconds: seconds, routeChanges: routeChanges,
                                            writer: writer, format: format, voice: voice,
                                            events: { event in
                                                do { try eventsFile?.write(event.jsonLine + "\n") } catch { eventsError = eventsError ?? error }
                                                if !plotFiles.isEmpty { posted.append(event) }
                                            },
                                            blocks: { block in if !plotFiles.isEmpty { trace.add(block) } }) { done in
            guard seconds > Self.progressThreshold else { return }
            let quarter = Int(done * 4)
            if quarter > reported {
                reported = quarter
                logger.info("rendering \(room.scene.name): \(quarter * 25)% of \(seconds) s")
            }
        }
        if let eventsError { throw eventsError }
        // The writer wrote under a temporary name; the file is `out` once committed.
        summary.output = out
        if !plotFiles.isEmpty {
            let svg = SessionPlot.render(summary: summary, routeChanges: routeChanges, trace: trace, events: posted).svg()
            for file in plotFiles { try file.write(svg: svg) }
        }
        try audio.commit()
        try eventsFile?.commit()
        for file in plotFiles { try file.commit() }
        if room.scene.voice == nil && (mic != nil || echo != nil) {
            logger.warning("\(scene) has no voice section: --mic and --echo have no uplink to feed")
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(summary), as: UTF8.self))
        } else {
            print(summary)
        }
    }

    /// The voice options, checked against the room.
    /// A prompt starts on a block; one that would start after the render ends would never be heard.
    private static func requirePromptsInside(_ prompts: [PromptTrigger], seconds: Double) throws {
        let end = Room.frame(atSeconds: seconds)
        for prompt in prompts where prompt.startFrame >= end {
            let start = Double(prompt.startFrame) / Double(Room.sampleRate)
            let when = start == prompt.seconds ? "" : String(format: ", which starts at %.2f s (prompts start on the engine's 10 ms blocks),", start)
            throw ValidationError("--prompt at \(prompt.seconds) s\(when) is not inside the \(seconds) s rendered")
        }
    }

    private func offlineVoice(room: Room, seconds: Double) throws -> OfflineVoice {
        var voice = OfflineVoice(microphonePath: mic, prompts: prompts)
        let known = room.prompts.map(\.id)
        for prompt in prompts where !known.contains(prompt.id) {
            throw ValidationError("--prompt \"\(prompt.id)\": the room has no such prompt" + (known.isEmpty ? "" : "; it has \(known.joined(separator: ", "))"))
        }
        try Self.requirePromptsInside(prompts, seconds: seconds)
        if let mic {
            let header: (channels: Int, sampleRate: Int, frames: Int)
            do { header = try AudioFileReader.header(path: mic) } catch { throw ValidationError("--mic \"\(mic)\": \(error)") }
            guard header.channels == 1 else {
                throw ValidationError("--mic \"\(mic)\" has \(header.channels) channels; a microphone recording has one")
            }
        }
        if let echo {
            do {
                let response = try AudioFileReader.read(path: echo)
                guard response.seconds <= 2 else {
                    throw ValidationError("--echo \"\(echo)\" is \(String(format: "%.2f", response.seconds)) s; an echo path is at most 2 s")
                }
                voice.echoPath = try response.monoSamples(at: Room.sampleRate)
                voice.echoPathName = echo
            } catch let error as ValidationError {
                throw error
            } catch {
                throw ValidationError("--echo \"\(echo)\": \(error)")
            }
        }
        return voice
    }
}
