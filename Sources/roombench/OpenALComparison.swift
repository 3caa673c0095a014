import ArgumentParser
import CAllocationCounter
import Engine
import Foundation
import Scene

/// What one engine run cost.
struct EngineRunCost {
    var cpuPerAudioSecond: Double
    /// Heap allocations in the render blocks, from the first.
    var allocations: Int
    var blocks: Int
}

/// The room engine rendering `room` with no voice session.
func measureEngine(_ room: Room, seconds: Double, levelOfDetail: LevelOfDetail) throws -> EngineRunCost {
    let engine = try RoomEngine(room: room, microphone: nil, sink: NullAudioSink(),
                                microphoneIsCapture: false, outputIsPlayback: false, levelOfDetail: levelOfDetail)
    return try measureBlocks(of: engine, seconds: seconds)
}

/// Renders `seconds` of `engine`'s room and measures the render blocks
/// only: CPU on this thread, and heap allocations from the first block.
/// The control side's drain of the events runs between blocks, outside
/// the measure.
func measureBlocks(of engine: RoomEngine, seconds: Double) throws -> EngineRunCost {
    let blocks = Int(seconds * 100)
    var cpu = 0.0, allocations = 0
    for _ in 0..<blocks {
        let allocated = room_allocation_count(), started = threadCPUSeconds()
        try engine.renderBlock()
        cpu += threadCPUSeconds() - started
        allocations += room_allocation_count() - allocated
        _ = engine.takeEvents()
    }
    return EngineRunCost(cpuPerAudioSecond: cpu / seconds, allocations: allocations, blocks: blocks)
}

/// Runs the raw OpenAL Soft loop of Tools/openal-baseline on the same scene.
func measureBaseline(_ executable: String, sources: Int, seconds: Double) throws -> Double {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = [String(sources), String(seconds)]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    let fields = output.split(separator: " ")
    guard process.terminationStatus == 0, fields.count == 2, fields[0] == "cpu_seconds_per_audio_second",
          let value = Double(fields[1].trimmingCharacters(in: .whitespacesAndNewlines)) else {
        throw ValidationError("the baseline \(executable) failed (exit \(process.terminationStatus)): \(output)")
    }
    return value
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// One row of the engine-against-OpenAL table.
struct ComparisonRow {
    var sources: Int
    var engine: Double
    var baseline: Double
    var ratio: Double
    var allocations: Int
    var blocks: Int
}

/// Measures the engine and the baseline alternately, `runs` times each, so
/// both see the same machine; the ratio is the median of the runs' ratios.
/// Sources render alone, as OpenAL's do, unless `levelOfDetail` says otherwise.
func compare(sources: Int, baselineSources: Int? = nil, baseline executable: String, seconds: Double, runs: Int,
             levelOfDetail: LevelOfDetail = .full) throws -> ComparisonRow {
    var engine: [Double] = [], raw: [Double] = [], ratios: [Double] = []
    var allocations = 0, blocks = 0
    let scene = OrbitScene.room(sources: sources)
    for _ in 0..<runs {
        let rawCost = try measureBaseline(executable, sources: baselineSources ?? sources, seconds: seconds)
        let cost = try measureEngine(scene, seconds: seconds, levelOfDetail: levelOfDetail)
        engine.append(cost.cpuPerAudioSecond)
        raw.append(rawCost)
        ratios.append(cost.cpuPerAudioSecond / rawCost)
        allocations += cost.allocations
        blocks += cost.blocks
    }
    return ComparisonRow(sources: sources, engine: median(engine), baseline: median(raw), ratio: median(ratios),
                         allocations: allocations, blocks: blocks)
}

struct OpenALComparison: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "openal",
        abstract: "The engine against raw OpenAL Soft on the same moving HRTF sources, measured alternately.",
        discussion: "Build the baseline first: Tools/benchmark.sh does, or gcc Tools/openal-baseline/openal_baseline.c."
    )

    @Option(help: "The raw OpenAL baseline executable.")
    var baseline: String

    @Option(parsing: .upToNextOption, help: "Source counts to measure.")
    var sources: [Int] = [1, 16, 64, 256]

    @Option(help: "Seconds of audio per run.")
    var seconds = 10.0

    @Option(help: "Runs of each; medians are reported.")
    var runs = 3

    @Option(help: "A crowd of moving sources to render against OpenAL's 256; 0 skips it.")
    var crowd = 1_024

    func validate() throws {
        guard FileManager.default.isExecutableFile(atPath: baseline) else {
            throw ValidationError("--baseline \(baseline): no executable there")
        }
        guard sources.allSatisfy({ (1...256).contains($0) }) else { throw ValidationError("--sources must be between 1 and 256") }
        guard crowd == 0 || (257...4_096).contains(crowd) else { throw ValidationError("--crowd must be 0 or between 257 and 4096") }
        guard seconds >= 1 && seconds <= 600 else { throw ValidationError("--seconds must be between 1 and 600") }
        guard (1...21).contains(runs) else { throw ValidationError("--runs must be between 1 and 21") }
    }

    func run() throws {
        print("sources  engine cpu-s/s  OpenAL cpu-s/s  ratio  allocations/block")
        for count in sources {
            let row = try compare(sources: count, baseline: baseline, seconds: seconds, runs: runs)
            print(String(format: "%7d  %14.4f  %14.4f  %5.3f  %d in %d", row.sources, row.engine, row.baseline, row.ratio,
                         row.allocations, row.blocks))
        }
        if crowd > 0 {
            let row = try compare(sources: crowd, baselineSources: 256, baseline: baseline, seconds: seconds, runs: runs,
                                  levelOfDetail: .standard)
            print(String(format: "%7d  %14.4f  %14.4f  %5.3f  %d in %d  (OpenAL at 256)", row.sources, row.engine, row.baseline,
                         row.ratio, row.allocations, row.blocks))
        }
    }
}
