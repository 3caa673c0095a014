import ArgumentParser
import Control
import Devices
import Engine
import Foundation

struct ProcessVoice: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "process-voice",
        abstract: "Run the engine's uplink chain over a recorded microphone and what was played.",
        discussion: """
        The chain is the engine's own: echo cancellation against the far end, \
        noise suppression, gain control, voice activity and the mute gate. \
        Files of any rate are converted to the engine's 48 kHz and the uplink \
        is written at the microphone's rate, lined up with it.
        """
    )

    @Option(name: .long, help: "What the output played while the microphone recorded (any rate; channels are averaged). Absent: silence.")
    var far: String?

    @Option(name: .long, help: "The microphone recording: one channel, any rate.")
    var mic: String

    @Option(name: .long, help: "The uplink to write: .wav or .flac.")
    var out: String

    @Option(name: .customLong("vad-out"), help: "Write one 0/1 voice-activity decision per 10 ms frame, one per line.")
    var vadOut: String?

    @Option(name: .long, help: "Write the events, one JSON object per line.")
    var events: String?

    @Flag(name: .long, help: "Mute the uplink; voice activity and muted-talker events keep running.")
    var muted = false

    @Option(name: .long, help: "Echo cancellation: on or off (default: on).")
    var aec: EchoCancellationSwitch = .on

    @Option(name: .customLong("plot"),
            help: "Draw the run on one time axis: levels, echo reduction, voice activity, events. .svg, or .png (made by rsvg-convert); repeatable.")
    var plots: [String] = []

    enum EchoCancellationSwitch: String, ExpressibleByArgument, CaseIterable {
        case on, off
    }

    func validate() throws {
        guard AudioFileFormat(path: out) != nil else {
            throw ValidationError("--out must name a .wav or .flac file, got \"\(out)\"")
        }
        let inputs = [("--mic", mic)] + (far.map { [("--far", $0)] } ?? [])
        for (option, path) in inputs where ([out, vadOut, events] + plots).contains(path) {
            throw ValidationError("\(option) \"\(path)\" is also an output file; it would be overwritten")
        }
        let outputs = [("--out", out), ("--vad-out", vadOut), ("--events", events)]
        try OutputOptions.requireDistinct(outputs)
        try PlotOutput.validate(plots, others: outputs)
    }

    func run() throws {
        let micAudio = try read(mic, as: "--mic")
        guard micAudio.buffer.channelCount == 1 else {
            throw ValidationError("--mic \"\(mic)\" has \(micAudio.buffer.channelCount) channels; a microphone recording has one")
        }
        let farAudio = try far.map { try read($0, as: "--far") }
        if let far, let farAudio {
            if farAudio.sampleRate != micAudio.sampleRate {
                note("--far \"\(far)\" is at \(farAudio.sampleRate) Hz and --mic at \(micAudio.sampleRate) Hz; both are converted to 48000 Hz")
            }
            if farAudio.seconds < micAudio.seconds {
                note(String(format: "--far \"%@\" is %.2f s, shorter than the microphone's %.2f s; padded with silence",
                            far, farAudio.seconds, micAudio.seconds))
            }
        }
        // Every output is written whole and renamed into place, so an interrupted run leaves none half written.
        let inputs = [mic] + (far.map { [$0] } ?? [])
        let audio = try open(out, as: "--out", streams: false, inputs: inputs)
        let decisions = try vadOut.map { try open($0, as: "--vad-out", streams: true, inputs: inputs) }
        let eventsFile = try events.map { try open($0, as: "--events", streams: true, inputs: inputs) }
        let plotFiles = try plots.map { try PlotOutput($0, inputs: inputs) }
        OutputFile.removeUncommittedOnSignals()
        let result = try VoiceFileProcessor.run(mic: micAudio, far: farAudio, muted: muted, echoCancellation: aec == .on)
        let writer = try AudioFileWriter(output: audio, format: AudioFileFormat(path: out)!, channelCount: 1,
                                         sampleRate: micAudio.sampleRate)
        try writer.write(result.uplink)
        try writer.close()
        if !plotFiles.isEmpty {
            let svg = SessionPlot.voice(micPath: mic, farPath: far, outPath: out, mic: micAudio, far: farAudio,
                                        result: result, muted: muted, echoCancellation: aec == .on).svg()
            for file in plotFiles { try file.write(svg: svg) }
        }
        try decisions?.write(result.decisions.map { $0 ? "1" : "0" }.joined(separator: "\n") + "\n")
        try eventsFile?.write(result.events.map { $0.jsonLine + "\n" }.joined())
        // Put in place only once every output is written: one that cannot be (a full disk) leaves none of them new.
        try audio.commit()
        try decisions?.commit()
        try eventsFile?.commit()
        for file in plotFiles { try file.commit() }
        let speechFrames = result.decisions.filter { $0 }.count
        print(String(format: "%@ -> %@: %.2f s at %d Hz, echo cancellation %@%@; speech in %d of %d frames, %d events",
                     mic, out, micAudio.seconds, micAudio.sampleRate, aec.rawValue, muted ? ", muted" : "",
                     speechFrames, result.decisions.count, result.events.count))
    }

    private func read(_ path: String, as option: String) throws -> DecodedAudio {
        do {
            return try AudioFileReader.read(path: path)
        } catch {
            throw ValidationError("\(option) \"\(path)\": \(error)")
        }
    }

    private func open(_ path: String, as option: String, streams: Bool, inputs: [String]) throws -> OutputFile {
        do {
            return try OutputFile(path, policy: .replace(streams: streams), inputs: inputs)
        } catch let error as OutputFileError {
            throw ValidationError("\(option) \(error)")
        }
    }

    private func note(_ text: String) {
        Console.error("scenectl: \(text)")
    }
}
