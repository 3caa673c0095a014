import ArgumentParser
import Engine
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The benchmark's crowd rooms as scene files: OrbitScene's paths, every
/// source playing one shared second of noise from a start in the room's
/// first half second, so their noise is not in step.
enum CrowdScene {
    /// Writes `crowd-N-ROUTE.yaml` and the noise it plays into `folder`; returns the scene's path.
    static func write(sources count: Int, route: RouteName, into folder: String) throws -> String {
        let noise = folder + "/noise.wav"
        if !FileManager.default.fileExists(atPath: noise) {
            var generator = NoiseGenerator(seed: 3)
            let samples = (0..<Room.sampleRate).map { _ in generator.next() * 0.02 }
            let writer = try AudioFileWriter(path: noise, format: .wavFloat, channelCount: 1, sampleRate: Room.sampleRate)
            try samples.withUnsafeBufferPointer { try writer.write(interleaved: $0) }
        }
        var lines = ["version: 1", "name: Crowd of \(count)", "output: { route: \(route.rawValue) }",
                     "distance: { model: inverse, reference: 1, maximum: 50, rolloff: 1 }", "sources:"]
        func number(_ value: Double) -> String { String(format: "%.3f", value) }
        for index in 0..<count {
            let keyframes = OrbitScene.path(index, of: count).keyframes.map { keyframe in
                "{ time: \(number(keyframe.time)), position: [\(number(keyframe.position.x)), 0, \(number(keyframe.position.z))] }"
            }
            lines += ["  - { id: s\(index), file: noise.wav, mode: point, loop: true, start: \(number(Double((index * 7_919) % 4_096) / 8_192)),",
                      "      motion: { repeat: true, keyframes: [\(keyframes.joined(separator: ", "))] } }"]
        }
        let path = "\(folder)/crowd-\(count)-\(route.rawValue).yaml"
        try (lines.joined(separator: "\n") + "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}

/// Writes a crowd room for other tools, such as Tools/crowd-live.py.
struct WriteCrowdScene: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "crowd-scene",
        abstract: "Write the benchmark's crowd room (circling sources playing one shared file) into a folder; print the scene's path."
    )

    @Option(help: "Sources in the room.")
    var sources = 4_096

    @Option(help: "The room's route.")
    var route = "headphones"

    @Option(help: "An existing folder to write the scene and its noise into.")
    var folder: String

    func validate() throws {
        guard (1...4_096).contains(sources) else { throw ValidationError("--sources must be between 1 and 4096") }
        guard RouteName(rawValue: route) != nil else {
            throw ValidationError("--route \(route): expected one of \(RouteName.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw ValidationError("--folder \(folder): no folder there")
        }
    }

    func run() throws {
        print(try CrowdScene.write(sources: sources, route: RouteName(rawValue: route)!, into: folder))
    }
}

/// Opens a scene and renders it to nowhere: what the instruction count runs under callgrind.
struct Play: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Open a scene file and render it to nowhere; print the time the room took to open and the peak resident memory."
    )

    @Argument(help: "The scene file.")
    var scene: String

    @Option(help: "Seconds of audio to render after opening.")
    var seconds = 1.0

    func validate() throws {
        guard seconds >= 0 && seconds <= 600 else { throw ValidationError("--seconds must be between 0 and 600") }
    }

    func run() throws {
        let started = wallSeconds()
        let room = try Room.load(path: scene)
        let engine = try RoomEngine(room: room, microphone: nil, sink: NullAudioSink(), microphoneIsCapture: false, outputIsPlayback: false)
        let opened = wallSeconds() - started
        for _ in 0..<Int(seconds * 100) {
            _ = try engine.renderBlock()
            _ = engine.takeEvents()
        }
        print(String(format: "opened %d sources in %.3f s; peak resident %.0f MB", room.sources.count, opened, peakResidentMegabytes()))
    }
}

func wallSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
}

/// The most memory the process has held resident (VmHWM), in MB.
func peakResidentMegabytes() -> Double {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
    let kilobytes = line.flatMap { Double($0.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") } ?? 0
    return kilobytes / 1_000
}

/// The engine against raw OpenAL Soft in instructions, which do not move
/// with the machine's load, counted by valgrind's callgrind.
struct Instructions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "instructions",
        abstract: "Instructions per audio second of crowd rooms against the raw OpenAL loop, counted by callgrind; set-up apart.",
        discussion: """
            Each program renders the same room for 1 s and for 3 s; the difference over 2 s is the cost of an \
            audio second. A run that renders nothing is the set-up. Valgrind 3.19 reads only a stripped \
            binary: Tools/benchmark.sh --instructions makes one and runs this.
            """
    )

    @Option(help: "A stripped release roombench, which runs each room under callgrind.")
    var engine: String

    @Option(help: "The raw OpenAL baseline executable (Tools/openal-baseline).")
    var baseline: String

    @Option(help: "valgrind.")
    var valgrind = "/usr/bin/valgrind"

    @Option(parsing: .upToNextOption, help: "Source counts, each rendered on headphones.")
    var sources: [Int] = [64, 256, 1_024, 4_096]

    @Option(parsing: .upToNextOption, help: "Source counts rendered on 5.1 as well.")
    var surround: [Int] = [4_096]

    @Option(help: "Append the section to this file.")
    var append: String?

    func validate() throws {
        for (name, path) in [("--engine", engine), ("--baseline", baseline), ("--valgrind", valgrind)]
        where !FileManager.default.isExecutableFile(atPath: path) {
            throw ValidationError("\(name) \(path): no executable there")
        }
        guard (sources + surround).allSatisfy({ (1...4_096).contains($0) }) else {
            throw ValidationError("--sources and --surround must be between 1 and 4096")
        }
    }

    /// Instructions callgrind counted for one run of `arguments`.
    private func count(_ arguments: [String]) throws -> Double {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: valgrind)
        process.arguments = ["--tool=callgrind", "--callgrind-out-file=/dev/null"] + arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let said = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0,
              let line = said.split(separator: "\n").last(where: { $0.contains("Collected :") }),
              let value = Double(line.split(separator: ":").last!.trimmingCharacters(in: .whitespaces)) else {
            throw ValidationError("\(arguments.joined(separator: " ")) under callgrind failed (exit \(process.terminationStatus)): \(said.suffix(2_000))")
        }
        return value
    }

    /// Per audio second, from runs of 1 s and 3 s (the sources all play
    /// from the room's first half second on), and set-up, from a run of none.
    private func cost(_ arguments: (Double) -> [String]) throws -> (perSecond: Double, setUp: Double) {
        let opening = try count(arguments(0)), short = try count(arguments(1)), long = try count(arguments(3))
        return ((long - short) / 2, opening)
    }

    func run() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("roombench-\(getpid())").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        func giga(_ value: Double) -> String { String(format: "%.0f M", value / 1e6) }

        var lines = ["## \(Report.timestamp()) on \(Report.machine()): instructions per audio second (callgrind)", ""]
        func say(_ line: String) {
            print(line)
            lines.append(line)
        }
        let reference = try cost { [baseline, "256", String($0), "static"] }
        say("Crowd rooms of N sources, each on its own circling path and all playing one shared 1 s file, 10 ms blocks, against")
        say("raw OpenAL Soft 1.19.1 (Tools/openal-baseline) with the same sources moving (up to 256) and with 256 static HRTF points")
        say("(\(giga(reference.perSecond)) per audio second, set-up \(giga(reference.setUp))). Each program rendered 1 s and 3 s;")
        say("the difference over 2 s is an audio second. The set-up is a run that renders nothing (for the engine, opening the scene file).")
        say("")
        say("| sources | route | engine per audio s | engine set-up | raw OpenAL, same sources moving | ratio | ratio to raw OpenAL's 256 static |")
        say("| --- | --- | --- | --- | --- | --- | --- |")
        let rows = sources.map { ($0, RouteName.headphones) } + surround.map { ($0, RouteName.surround51) }
        for (count, route) in rows {
            let scene = try CrowdScene.write(sources: count, route: route, into: folder)
            let measured = try cost { [engine, "play", scene, "--seconds", String($0)] }
            var raw = "-", ratio = "-"
            if count <= 256 && route == .headphones {
                let moving = try cost { [baseline, String(count), String($0)] }
                raw = giga(moving.perSecond)
                ratio = String(format: "%.2f", measured.perSecond / moving.perSecond)
            }
            say("| \(count) | \(route.rawValue) | \(giga(measured.perSecond)) | \(giga(measured.setUp)) | \(raw) | \(ratio) | "
                + String(format: "%.2f |", measured.perSecond / reference.perSecond))
        }
        say("")
        if let append {
            let existing = (try? String(contentsOfFile: append, encoding: .utf8)) ?? "# Benchmarks\n\nWritten by Tools/benchmark.sh.\n"
            try (existing + "\n" + lines.joined(separator: "\n")).write(toFile: append, atomically: true, encoding: .utf8)
        }
    }
}
