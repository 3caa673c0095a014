import ArgumentParser
import AudioCore
import AudioMeasurements
import Engine
import Foundation
import Scene
import Spatial

#if canImport(Glibc)
import Glibc
#endif

/// Every benchmark in one run, as one Markdown section.
struct Report: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Run every benchmark and print one table; --append adds it, dated, to a file such as BENCHMARKS.md.",
        discussion: "Tools/benchmark.sh builds what it needs and runs it."
    )

    @Option(help: "The raw OpenAL baseline executable (Tools/openal-baseline).")
    var baseline: String

    @Option(help: "Seconds of audio per engine and baseline run.")
    var seconds = 10.0

    @Option(help: "Alternating runs of engine and baseline; medians are reported.")
    var runs = 5

    @Option(help: "The demo rooms whose offline render speed is measured.")
    var scenes: [String] = ["Scenes/tavern.yaml", "Scenes/forest_camp.yaml", "Scenes/arena_lobby.yaml"]

    @Option(help: "Append the section to this file.")
    var append: String?

    func validate() throws {
        guard FileManager.default.isExecutableFile(atPath: baseline) else {
            throw ValidationError("--baseline \(baseline): no executable there")
        }
        guard seconds >= 1 && seconds <= 600 else { throw ValidationError("--seconds must be between 1 and 600") }
        guard (1...21).contains(runs) else { throw ValidationError("--runs must be between 1 and 21") }
        for scene in scenes + [Self.networkScene, Self.networkSpeech] where !FileManager.default.fileExists(atPath: scene) {
            throw ValidationError("--scenes: no file \(scene) (Tools/make_assets.sh makes the demo audio)")
        }
    }

    func run() throws {
        var lines = ["## \(Self.timestamp()) on \(Self.machine())", ""]
        func say(_ line: String) {
            print(line)
            lines.append(line)
        }
        say("Engine against raw OpenAL Soft 1.19.1 (Tools/openal-baseline), moving HRTF point sources, 10 ms blocks,")
        say("median of \(runs) alternating runs of \(Int(seconds)) s:")
        say("")
        say("| sources | engine CPU-s per audio s | raw OpenAL CPU-s per audio s | ratio | heap allocations |")
        say("| --- | --- | --- | --- | --- |")
        var allocations = 0, blocks = 0
        for count in [1, 16, 64, 256] {
            let row = try compare(sources: count, baseline: baseline, seconds: seconds, runs: runs)
            say(String(format: "| %d | %.4f | %.4f | %.3f | %d in %d blocks |", count, row.engine, row.baseline, row.ratio,
                       row.allocations, row.blocks))
            allocations += row.allocations
            blocks += row.blocks
        }
        let crowd = try compare(sources: 1_024, baselineSources: 256, baseline: baseline, seconds: seconds, runs: runs,
                                levelOfDetail: .standard)
        say(String(format: "| 1024, as a crowd | %.4f | %.4f (256 sources) | %.3f | %d in %d blocks |", crowd.engine, crowd.baseline,
                   crowd.ratio, crowd.allocations, crowd.blocks))
        allocations += crowd.allocations
        blocks += crowd.blocks
        say("")

        let session = try measureVoiceSession(sources: 32, seconds: 60)
        allocations += session.allocations
        blocks += session.blocks
        say(String(format: "- Voice session (32 moving sources, a remote talker, echo cancellation, advanced ducking): %.4f CPU-s per audio s.",
                   session.cpuPerAudioSecond))
        say("- Heap allocations in the render blocks, from the first, every run above: \(allocations) in \(blocks) blocks.")
        let voice = try measureVoiceChain(seconds: 20, runs: 5)
        say(String(format: "- Voice chain: %.3f%% of one core (median of 5 runs of 20 s; %.3f-%.3f%%), %d heap allocations in %d blocks.",
                   voice.median, voice.lowest, voice.highest, voice.allocations, voice.blocks))

        let talkers = SessionControls.joinCapacityPerMix
        let network = try compareNetwork(scene: Self.networkScene, talkers: talkers, audio: Self.networkSpeech, seconds: seconds,
                                         runs: min(runs, 3), speed: 2, baseline: baseline)
        say(String(format: "- Remote talkers (a Mumble room fed by hand, %@ on headphones, median of %d runs): %d talkers cost %.2f%%"
                   + " of one core beyond the room without them, %.3f%% each (decoding and jitter buffers %.2f%%, spatialising and"
                   + " mixing %.2f%%), %.2f times raw OpenAL Soft rendering %d moving HRTF sources (spatialising and mixing alone"
                   + " %.2f times); %d heap allocations in %d blocks"
                   + " after their first seconds.", (Self.networkScene as NSString).lastPathComponent, min(runs, 3), talkers,
                   network.extra * 100, network.extra / Double(talkers) * 100, network.decode * 100, network.render * 100,
                   network.ratio ?? 0, talkers, network.renderRatio ?? 0, network.allocations, network.renderBlocks))

        let error = try CrowdError.measure()
        say(String(format: "- Crowd direction error, third order: a source in the field is heard (by its ITD below 1 kHz, against the"
                   + " same source alone) at most %.1f degrees off, at %.0f degrees.", error.worstDegrees, error.worstAzimuth))
        say(String(format: "- Crowd loudness: 1024 sources as a crowd against all 1024 alone: left %+.2f dB, right %+.2f dB.",
                   error.loudness.left, error.loudness.right))

        var speeds: [String] = []
        for path in scenes {
            let room = try Room.load(path: path)
            let summary = try OfflineRender.run(room: room, route: nil, seconds: room.scene.duration ?? 10, writer: nil, format: nil)
            speeds.append(String(format: "%@ %.0fx", (path as NSString).lastPathComponent, summary.realTimeFactor))
        }
        say("- Offline render speed, as a multiple of real time: " + speeds.joined(separator: ", ") + ".")
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        say(String(format: "- Peak memory (resident) of the whole run: %.0f MB.", Double(usage.ru_maxrss) / 1_024))
        say("")

        if let append {
            let existing = (try? String(contentsOfFile: append, encoding: .utf8)) ?? "# Benchmarks\n\nWritten by Tools/benchmark.sh.\n"
            try (existing + "\n" + lines.joined(separator: "\n")).write(toFile: append, atomically: true, encoding: .utf8)
        }
    }

    /// The room and the speech of the remote-talker figure.
    static let networkScene = "Scenes/network/tavern.yaml"
    static let networkSpeech = "Scenes/audio/barkeep.wav"

    static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd HH:mm 'UTC'"
        return formatter.string(from: Date())
    }

    /// The processor's name and how many cores the run had.
    static func machine() -> String {
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "an unknown processor"
        return "\(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores"
    }
}

/// What the crowd costs in direction and level against rendering every source alone.
enum CrowdError {
    /// Every source in the field, none alone.
    static let allInTheField = LevelOfDetail(crowdThreshold: 0, perSourceVoices: 0)

    static func measure() throws -> (worstDegrees: Double, worstAzimuth: Double, loudness: (left: Double, right: Double)) {
        let azimuths = stride(from: 0.0, through: 90, by: 15).map { $0 }
        let alone = try azimuths.map { try itd(azimuth: $0, .full) }
        var worst = (degrees: 0.0, azimuth: 0.0)
        for azimuth in azimuths.dropFirst() {
            let heard = Measure.azimuth(ofTimeDifference: try itd(azimuth: azimuth, allInTheField), measured: alone, at: azimuths)
            if abs(heard - azimuth) > worst.degrees { worst = (abs(heard - azimuth), azimuth) }
        }
        let room = OrbitScene.room(sources: 1_024)
        let crowd = try RoomRenderer(room: room).render(seconds: 3)
        let full = try RoomRenderer(room: room, levelOfDetail: .full).render(seconds: 3)
        func level(_ buffer: AudioBuffer, _ channel: Int) -> Double {
            Measure.rmsDecibels(Array(buffer.channel(channel).dropFirst(4_800)))
        }
        let loudness = (level(crowd, 0) - level(full, 0), level(crowd, 1) - level(full, 1))
        return (worst.degrees, worst.azimuth, loudness)
    }

    /// A noise source's interaural time difference below 1 kHz at `azimuth`, 2 m away.
    static func itd(azimuth: Double, _ detail: LevelOfDetail) throws -> Double {
        let radians = azimuth * .pi / 180
        var generator = NoiseGenerator(seed: 11)
        let noise = (0..<48_000).map { _ in generator.next() * 0.1 }
        let source = RoomSource(SourceDescription(id: "probe", audioPath: "generated", audioField: FieldLocation(file: "probe", line: nil, field: "probe"),
                                                  mode: .point, placement: .fixed(Position(2 * sin(radians), 0, -2 * cos(radians)))),
                                audio: AudioBuffer(mono: noise))
        let room = Room(scene: SceneDescription(file: "probe", name: "probe", route: .headphones, sources: [source.description]),
                        sources: [source])
        let output = try RoomRenderer(room: room, levelOfDetail: detail).render(seconds: 1)
        let left = Biquad.lowPassed(Array(output.channel(0).dropFirst(4_800)), cutoff: 1_000)
        let right = Biquad.lowPassed(Array(output.channel(1).dropFirst(4_800)), cutoff: 1_000)
        return Measure.timeDifference(left: left, right: right)
    }
}
