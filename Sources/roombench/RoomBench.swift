import ArgumentParser
import CAllocationCounter
import Engine
import AudioCore
import Foundation
import Scene
import Spatial
import Voice

#if canImport(Glibc)
import Glibc
#endif

@main
struct RoomBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roombench",
        abstract: "Measure what the engine's parts cost. Build with -c release.",
        subcommands: [Report.self, OpenALComparison.self, VoiceChain.self, EngineBlocks.self, LiveBlocks.self, NetworkBench.self,
                      NetworkLatency.self, Soak.self, Instructions.self, Play.self, WriteCrowdScene.self]
    )

    /// Runs the command; usage errors exit with 2, as roomd's and scenectl's do.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }
}

/// CPU time of the calling thread, in seconds: what the work cost, whatever else the machine runs.
func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
}

/// Repeatable white noise, uniform in [-1, 1), from a linear congruential generator.
struct NoiseGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> Float {
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return Float(Int64(bitPattern: state) >> 40) / Float(1 << 23)
    }
}

struct VoiceChain: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "voice",
        abstract: "The uplink chain's share of one core: echo cancellation, noise suppression, gain, voice activity and the resamplers.",
        discussion: "It also counts the heap allocations the chain makes, which must be none, and fails if there are any."
    )

    @Option(help: "Seconds of audio per run.")
    var seconds = 60.0

    @Option(help: "Runs; the median is reported.")
    var runs = 5

    func validate() throws {
        guard seconds >= 1 && seconds <= 3_600 else { throw ValidationError("--seconds must be between 1 and 3600") }
        guard runs >= 1 && runs <= 100 else { throw ValidationError("--runs must be between 1 and 100") }
    }

    func run() throws {
        let cost = try measureVoiceChain(seconds: seconds, runs: runs)
        print(String(format: "voice chain: %.3f%% of one core (median of %d runs of %.0f s; runs %.3f-%.3f%%), %.1f us per 10 ms block",
                     cost.median, runs, seconds, cost.lowest, cost.highest, cost.median / 100 * 10_000))
        print("voice chain: \(cost.allocations) heap allocations in \(cost.blocks) blocks")
        if cost.allocations > 0 { throw ExitCode(1) }
    }
}

/// The uplink chain's share of one core, in percent, and its heap allocations.
struct VoiceChainCost {
    var median: Double
    var lowest: Double
    var highest: Double
    var allocations: Int
    var blocks: Int
}

func measureVoiceChain(seconds: Double, runs: Int) throws -> VoiceChainCost {
    let blocks = Int(seconds * 100)
    let block = MicrophoneUplink.blockFrames
    // The far end talks in bursts of noise shaped like speech; the
    // microphone hears its echo, a quieter near talker half the time, and room noise.
    var generator = NoiseGenerator(seed: 7)
    func noise() -> Float { generator.next() }
    var shares: [Double] = []
    var totalAllocations = 0
    for _ in 0..<runs {
        let uplink = try MicrophoneUplink(echoCancellation: true)
        var far = [Float](repeating: 0, count: block), mic = [Float](repeating: 0, count: block)
        var out = [Float](repeating: 0, count: block)
        var echo: Float = 0, cpu = 0.0, allocations = 0
        for index in 0..<blocks {
            let farTalks = (index / 150) % 2 == 0, nearTalks = (index / 230) % 2 == 1
            for sample in 0..<block {
                far[sample] = farTalks ? 0.1 * noise() : 0
                echo = 0.97 * echo + 0.03 * far[sample]
                mic[sample] = 3 * echo + (nearTalks ? 0.05 * noise() : 0) + 0.0005 * noise()
            }
            let started = threadCPUSeconds(), allocated = room_allocation_count()
            _ = far.withUnsafeBufferPointer { far in
                mic.withUnsafeBufferPointer { mic in
                    out.withUnsafeMutableBufferPointer { uplink.process(mic: mic, reference: far, uplink: $0) }
                }
            }
            allocations += room_allocation_count() - allocated
            cpu += threadCPUSeconds() - started
        }
        shares.append(cpu / seconds * 100)
        totalAllocations += allocations
    }
    shares.sort()
    return VoiceChainCost(median: shares[shares.count / 2], lowest: shares.first!, highest: shares.last!,
                          allocations: totalAllocations, blocks: runs * blocks)
}

struct EngineBlocks: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "engine",
        abstract: "The room engine's render block with moving sources and a voice session: its share of one core and its heap allocations.",
        discussion: "It fails if any block allocates."
    )

    @Option(help: "Point sources in the scene.")
    var sources = 8

    @Option(help: "Seconds of audio.")
    var seconds = 20.0

    func validate() throws {
        guard (1...256).contains(sources) else { throw ValidationError("--sources must be between 1 and 256") }
        guard seconds >= 1 && seconds <= 3_600 else { throw ValidationError("--seconds must be between 1 and 3600") }
    }

    func run() throws {
        let cost = try measureVoiceSession(sources: sources, seconds: seconds)
        print(String(format: "engine, %d moving HRTF sources and a voice session: %.2f%% of one core (%.0f us per 10 ms block)",
                     sources, cost.cpuPerAudioSecond * 100, cost.cpuPerAudioSecond * 1e4))
        print("engine: \(cost.allocations) heap allocations in \(cost.blocks) blocks")
        if cost.allocations > 0 { throw ExitCode(1) }
    }
}

/// The room engine with a voice session: the orbiting sources, a remote
/// talker in bursts, a pushed microphone with echo cancellation on, and
/// advanced ducking.
func measureVoiceSession(sources: Int, seconds: Double) throws -> EngineRunCost {
    var room = OrbitScene.room(sources: sources)
    let talk = (0..<Int(seconds * 48_000)).map { index -> Float in
        guard (index / 96_000) % 2 == 0 else { return 0 }
        return Float(sin(Double(index) * 0.03)) * 0.2
    }
    let guest = Participant(id: "guest", audioPath: "generated", audioField: FieldLocation(file: "bench", line: nil, field: "guest"),
                            position: Position(1, 0, -1))
    var voice = VoiceDescription()
    voice.participants = [guest]
    voice.advancedDucking = true
    room.scene.voice = voice
    room.sources.append(RoomSource(guest.source, audio: AudioBuffer(mono: talk)))
    let engine = try RoomEngine(room: room, microphone: PushedAudioSource(), sink: NullAudioSink(),
                                microphoneIsCapture: true, outputIsPlayback: true)
    return try measureBlocks(of: engine, seconds: seconds)
}
