import ArgumentParser
import CAllocationCounter
import Engine
import Foundation
import Voice

#if canImport(Glibc)
import Glibc
#endif

@main
struct RoomBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roombench",
        abstract: "Measure what the engine's parts cost. Build with -c release.",
        subcommands: [VoiceChain.self]
    )
}

/// CPU time of the calling thread, in seconds: what the work cost, whatever else the machine runs.
func threadCPUSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
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
        let blocks = Int(seconds * 100)
        let block = MicrophoneUplink.blockFrames
        // The far end talks in bursts of noise shaped like speech; the
        // microphone hears its echo, a quieter near talker half the time, and room noise.
        var state: UInt64 = 7
        func noise() -> Float {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state) >> 40) / Float(1 << 23)
        }
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
        let median = shares[shares.count / 2]
        print(String(format: "voice chain: %.3f%% of one core (median of %d runs of %.0f s; runs %.3f-%.3f%%), %.1f us per 10 ms block",
                     median, runs, seconds, shares.first!, shares.last!, median / 100 * 10_000))
        print("voice chain: \(totalAllocations) heap allocations in \(runs * blocks) blocks")
        if totalAllocations > 0 { throw ExitCode(1) }
    }
}
