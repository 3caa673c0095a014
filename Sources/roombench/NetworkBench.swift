import ArgumentParser
import AudioCore
import CAllocationCounter
import Engine
import Foundation
import Network
import Scene
import Spatial
import Synchronization

/// What remote talkers cost: a room rendered by hand, block by block, with
/// a Mumble room fed as a server would feed it (no server): each talker's
/// 20 ms Opus packets, with a moving position, arrive as the room's clock
/// reaches the end of the audio they carry, go through the talker's jitter
/// buffer and decoder on the room's talker thread, and play as a voice of
/// the room. Against the same room with no talkers.
struct NetworkBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "network",
        abstract: "CPU per remote talker of a Mumble room (packets in, jitter buffer, Opus decoding, spatialisation), against the same room without them.",
        discussion: """
            Each run renders the scene on headphones (HRTF) block by block at --speed times real time, \
            once with no remote talkers and once with --talkers, alternately; a talker's packets arrive \
            when the room's clock reaches the end of the 20 ms they carry, and the room's decoder keeps \
            each talker's stream 20 to 30 ms ahead of the render. The CPU counted is the render thread's \
            (render and pump), the Mumble room's threads' (the talkers' decoder, and its event loop, \
            idle without a server) and the packets' hand-over, after the first second; \
            the whole process's is reported too, and libopus alone decoding the same packets for as many \
            talkers in a loop, the floor under the decoding. The output's level with and without the talkers shows \
            what plays is the talkers, and blocks far below the run's median would show their streams \
            running dry. It fails if the render thread allocates or frees after its first second \
            (`roombench live` counts from the first block), or the talkers are not heard.
            """
    )

    @Option(help: "The room; its voice.network.mumble settings are used when it has them.")
    var scene = "Scenes/network/tavern.yaml"

    @Option(help: "Remote talkers (the talkers' places hold 16).")
    var talkers = 16

    @Option(help: "What each talker says, looped from its first to its last loud 20 ms, from a different point for each.")
    var audio = "Scenes/audio/barkeep.wav"

    @Option(help: "Seconds of audio measured per run, after a first second that is not.")
    var seconds = 10.0

    @Option(help: "Runs of each room; medians are reported.")
    var runs = 3

    @Option(help: "How many times faster than real time the room renders.")
    var speed = 2.0

    @Option(help: "The raw OpenAL baseline executable (Tools/openal-baseline), for the ratio against it.")
    var baseline: String?

    @Flag(help: "Print the figures as JSON.")
    var json = false

    func validate() throws {
        guard (1...SessionControls.joinCapacityPerMix).contains(talkers) else {
            throw ValidationError("--talkers must be between 1 and \(SessionControls.joinCapacityPerMix)")
        }
        guard seconds >= 1 && seconds <= 600 else { throw ValidationError("--seconds must be between 1 and 600") }
        guard (1...21).contains(runs) else { throw ValidationError("--runs must be between 1 and 21") }
        guard speed >= 0.5 && speed <= 8 else { throw ValidationError("--speed must be between 0.5 and 8") }
        for path in [scene, audio] where !FileManager.default.fileExists(atPath: path) {
            throw ValidationError("\(path): no such file")
        }
        if let baseline, !FileManager.default.isExecutableFile(atPath: baseline) {
            throw ValidationError("--baseline \(baseline): no executable there")
        }
    }

    func run() throws {
        let cost = try compareNetwork(scene: scene, talkers: talkers, audio: audio, seconds: seconds, runs: runs, speed: speed,
                                      baseline: baseline)
        if json {
            var object: [String: Any] = [
                "talkers": cost.talkers, "runs": runs, "seconds": seconds, "speed": speed, "route": "headphones",
                "scene": (scene as NSString).lastPathComponent,
                "coreFraction": cost.extra, "coreFractionPerTalker": cost.extra / Double(cost.talkers),
                "decodeCoreFraction": cost.decode, "renderCoreFraction": cost.render, "receiveCoreFraction": cost.receive,
                "processCoreFraction": cost.process,
                "roomCoreFraction": cost.withoutTalkers.work, "roomWithTalkersCoreFraction": cost.withTalkers.work,
                "outputDecibels": cost.withTalkers.outputDecibels, "outputDecibelsWithoutTalkers": cost.withoutTalkers.outputDecibels,
                "quietBlocks": cost.quietBlocks, "blocks": cost.measuredBlocks,
                "packetsSent": cost.packetsSent, "packetsReceived": cost.packetsReceived, "packetsConcealed": cost.packetsLost,
                "packetsUnplayable": cost.packetsUnplayable,
                "allocations": cost.allocations, "frees": cost.frees, "measuredRenderBlocks": cost.renderBlocks,
                "warmUpAllocations": cost.warmUpAllocations, "warmUpFrees": cost.warmUpFrees,
                "networkThreads": cost.withTalkers.networkThreads, "longestFeederWaitMs": cost.longestFeederWait * 1_000,
            ]
            object["opusCoreFraction"] = cost.rawDecoding
            object["decodeRatioToOpus"] = cost.decodeRatio
            if let raw = cost.baseline, let ratio = cost.ratio {
                object["openALCoreFraction"] = raw
                object["ratioToOpenAL"] = ratio
                object["renderRatioToOpenAL"] = cost.renderRatio ?? 0
            }
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            for line in cost.lines(scene: scene, runs: runs, seconds: seconds, speed: speed) { print(line) }
        }
        if cost.allocations > 0 || cost.frees > 0 || !cost.talkersHeard { throw ExitCode(1) }
    }
}

/// One render of the room, with or without remote talkers.
struct NetworkRun {
    var talkers: Int
    /// The names of the threads the Mumble room started, whose CPU is `decode`.
    var networkThreads: [String] = []
    /// CPU-seconds per audio second after the first second: the render
    /// thread (render and pump), the Mumble room's threads (the talkers' decoder), the packets'
    /// hand-over to the room (what the network thread does), the whole process.
    var render = 0.0
    var decode = 0.0
    var receive = 0.0
    var process = 0.0
    var outputDecibels = -200.0
    /// Measured blocks more than 20 dB below the run's median block.
    var quietBlocks = 0
    var measuredBlocks = 0
    var renderBlocks = 0
    /// The render thread's heap allocations and frees in the measured blocks, and in the first second.
    var allocations = 0
    var frees = 0
    var warmUpAllocations = 0
    var warmUpFrees = 0
    var packetsSent = 0
    var packetsReceived = 0
    var packetsLost = 0
    var packetsUnplayable = 0
    /// The longest the packets' thread waited between two looks at the room's clock, in seconds:
    /// a long one, on a busy machine, delivers packets late.
    var longestFeederWait = 0.0

    /// What the talkers' work and the room's cost together, as a fraction of one core.
    var work: Double { render + decode + receive }
}

/// The figures of alternate runs with and without talkers: medians of the runs' differences.
struct NetworkComparison {
    var talkers: Int
    var withTalkers: NetworkRun
    var withoutTalkers: NetworkRun
    /// The talkers' extra work, as a fraction of one core, and its parts.
    var extra: Double
    var decode: Double
    var render: Double
    var receive: Double
    /// The whole process's extra CPU.
    var process: Double
    /// Raw OpenAL Soft rendering as many moving HRTF sources, and the extra work against it.
    var baseline: Double?
    var ratio: Double?
    /// The spatialising and mixing alone against raw OpenAL, which decodes nothing.
    var renderRatio: Double?
    /// libopus alone decoding the same packets for as many talkers, in a
    /// loop on one thread: the floor under `decode`.
    var rawDecoding: Double
    /// The room's decoding and jitter buffers against that floor.
    var decodeRatio: Double { decode / rawDecoding }
    var quietBlocks: Int
    var measuredBlocks: Int
    /// The measured blocks of every run, with and without talkers, and the render thread's allocations and frees in them.
    var renderBlocks: Int
    var allocations: Int
    var frees: Int
    var warmUpAllocations: Int
    var warmUpFrees: Int
    var packetsSent: Int
    var packetsReceived: Int
    var packetsLost: Int
    var packetsUnplayable: Int
    var longestFeederWait: Double

    /// The talkers played: the output is well above the room alone, and no stretch of it fell silent.
    var talkersHeard: Bool {
        withTalkers.outputDecibels > withoutTalkers.outputDecibels + 6 && quietBlocks * 100 <= measuredBlocks
            && packetsReceived == packetsSent
    }

    func lines(scene: String, runs: Int, seconds: Double, speed: Double) -> [String] {
        func percent(_ fraction: Double) -> String { String(format: "%.2f%%", fraction * 100) }
        var lines = [
            String(format: "network: %d remote talkers in %@ on headphones, Opus %d kbit/s in 20 ms packets with moving positions, "
                   + "median of %d runs of %.0f s at %.1fx real time", talkers, (scene as NSString).lastPathComponent,
                   TalkerVoice.bitrate / 1_000, runs, seconds, speed),
            "network: \(talkers) talkers cost \(percent(extra)) of one core beyond the same room without them, "
                + "\(String(format: "%.3f%%", extra / Double(talkers) * 100)) per talker: decoding and jitter buffers \(percent(decode)), "
                + "spatialising and mixing \(percent(render)), packets in \(percent(receive)) (whole process: +\(percent(process)); "
                + "the room alone \(percent(withoutTalkers.work)))",
        ]
        if let baseline, let ratio {
            lines.append("network: against raw OpenAL Soft rendering \(talkers) moving HRTF sources (\(percent(baseline)) of one core): "
                         + String(format: "ratio %.2f; spatialising and mixing alone %.2f", ratio, renderRatio ?? 0))
        }
        lines.append("network: libopus alone decoding the same packets for \(talkers) talkers: \(percent(rawDecoding)) of one core; "
                     + String(format: "decoding and jitter buffers above are %.2f times that", decodeRatio))
        lines.append(String(format: "network: output %.1f dBFS with the talkers, %.1f dBFS without; %d of %d blocks fell 20 dB below "
                            + "the median; %d packets sent, %d received, %d concealed, %d unplayable (the packets' thread waited up to %.0f ms)",
                            withTalkers.outputDecibels, withoutTalkers.outputDecibels, quietBlocks, measuredBlocks, packetsSent,
                            packetsReceived, packetsLost, packetsUnplayable, longestFeederWait * 1_000))
        lines.append("network: render thread: \(allocations) heap allocations and \(frees) frees in the \(renderBlocks) measured blocks "
                     + "of both rooms (\(warmUpAllocations) and \(warmUpFrees) in their first seconds)")
        return lines
    }
}

/// Runs the room without talkers and with `talkers`, alternately, `runs` times each, and raw OpenAL with as many
/// moving HRTF sources if `baseline` is given.
func compareNetwork(scene: String, talkers: Int, audio: String, seconds: Double, runs: Int, speed: Double,
                    baseline: String?) throws -> NetworkComparison {
    let room = try Room.load(path: scene)
    let packets = try TalkerVoice.packets(of: TalkerVoice.speech(file: audio))
    var with: [NetworkRun] = [], without: [NetworkRun] = [], raw: [Double] = [], opus: [Double] = []
    for _ in 0..<runs {
        without.append(try measureNetwork(room: room, talkers: 0, packets: packets, seconds: seconds, speed: speed))
        with.append(try measureNetwork(room: room, talkers: talkers, packets: packets, seconds: seconds, speed: speed))
        if let baseline { raw.append(try measureBaseline(baseline, sources: talkers, seconds: seconds)) }
        opus.append(try measureRawDecoding(packets: packets, talkers: talkers, seconds: seconds))
    }
    func differences(_ part: (NetworkRun) -> Double) -> Double { median(zip(with, without).map { part($0) - part($1) }) }
    let extra = differences(\.work)
    let all = with + without
    let middle = with.sorted { $0.work < $1.work }[with.count / 2], alone = without.sorted { $0.work < $1.work }[without.count / 2]
    return NetworkComparison(
        talkers: talkers, withTalkers: middle, withoutTalkers: alone, extra: extra, decode: differences(\.decode),
        render: differences(\.render), receive: differences(\.receive), process: differences(\.process),
        baseline: raw.isEmpty ? nil : median(raw), ratio: raw.isEmpty ? nil : median(zip(with, without).enumerated().map {
            ($0.element.0.work - $0.element.1.work) / raw[$0.offset]
        }),
        renderRatio: raw.isEmpty ? nil : median(zip(with, without).enumerated().map {
            ($0.element.0.render - $0.element.1.render) / raw[$0.offset]
        }),
        rawDecoding: median(opus),
        quietBlocks: with.map(\.quietBlocks).reduce(0, +), measuredBlocks: with.map(\.measuredBlocks).reduce(0, +),
        renderBlocks: all.map(\.measuredBlocks).reduce(0, +), allocations: all.map(\.allocations).reduce(0, +),
        frees: all.map(\.frees).reduce(0, +), warmUpAllocations: all.map(\.warmUpAllocations).reduce(0, +),
        warmUpFrees: all.map(\.warmUpFrees).reduce(0, +), packetsSent: with.map(\.packetsSent).reduce(0, +),
        packetsReceived: with.map(\.packetsReceived).reduce(0, +), packetsLost: with.map(\.packetsLost).reduce(0, +),
        packetsUnplayable: with.map(\.packetsUnplayable).reduce(0, +), longestFeederWait: with.map(\.longestFeederWait).max() ?? 0)
}

/// CPU-seconds per audio second that libopus alone takes to decode
/// `seconds` of `packets` for each of `talkers`, as the packets' thread
/// sends them, with a decoder apiece.
func measureRawDecoding(packets: [[UInt8]], talkers: Int, seconds: Double) throws -> Double {
    let decoders = try (0..<talkers).map { _ in try OpusVoiceDecoder() }
    var pcm = [Float](repeating: 0, count: TalkerVoice.frameSamples)
    let steps = Int(seconds * Double(Room.sampleRate)) / TalkerVoice.frameSamples
    var decoded = 0
    let started = threadCPUSeconds()
    for step in 0..<steps {
        for (talker, decoder) in decoders.enumerated() {
            decoded += try TalkerVoice.packet(packets, talker: talker, step: step).withUnsafeBytes { packet in
                try pcm.withUnsafeMutableBufferPointer { try decoder.decode(packet, into: $0) }
            }
        }
    }
    let cpu = threadCPUSeconds() - started
    guard decoded == steps * talkers * TalkerVoice.frameSamples else {
        throw ValidationError("libopus decoded \(decoded) samples of \(steps * talkers * TalkerVoice.frameSamples)")
    }
    return cpu / (Double(steps * TalkerVoice.frameSamples) / Double(Room.sampleRate))
}

/// Renders `room` by hand for a second and then `seconds` more, measured, with `talkers` remote talkers
/// saying `packets`, each from its own point in them.
func measureNetwork(room: Room, talkers: Int, packets: [[UInt8]], seconds: Double, speed: Double) throws -> NetworkRun {
    let settings = room.scene.voice?.mumble
    let uplink = MumbleUplink(settings: settings ?? MumbleSettings(host: "127.0.0.1", channel: "Bench", user: "bench",
                                                                    context: "roombench"))
    let session = try RoomSession(room: room, devices: (true, true), deviceRoute: .headphones, voiceUplink: uplink)
    let earlier = Set(threadIDs().keys)
    let mumble = HandFedMumbleRoom(session: session, uplink: uplink, settings: settings)
    defer {
        mumble.close()
        session.close()
    }
    // The threads the Mumble room started: its talkers' decoder, and its event loop, which idles without a server.
    Thread.sleep(forTimeInterval: 0.1)
    let networkThreads = threadIDs().filter { !earlier.contains($0.key) }
    guard !networkThreads.isEmpty else { throw ValidationError("the Mumble room's threads did not show in /proc/self/task") }
    func networkCPU() -> Double { networkThreads.keys.reduce(0) { $0 + (threadCPUSeconds(thread: $1) ?? 0) } }

    for talker in 0..<talkers {
        mumble.network.userEntered(session: UInt32(talker + 1), name: "remote\(talker + 1)")
    }
    let warmUp = 100, measured = Int(seconds * 100), block = RoomEngine.blockFrames
    let feeder = PacketFeeder(network: mumble.network, live: session.live, talkers: talkers, packets: packets,
                              measuredFrom: warmUp * block)
    feeder.start()

    var run = NetworkRun(talkers: talkers)
    let output = UnsafeMutableBufferPointer<Float>.allocate(capacity: block * ChannelLayout.surround71.channelCount)
    defer { output.deallocate() }
    output.initialize(repeating: 0)
    var levels = [Double](repeating: -200, count: measured)
    var energy = 0.0, samples = 0
    run.networkThreads = networkThreads.values.sorted()
    var decodeStart = 0.0, processStart = 0.0, renderCPU = 0.0
    let start = ContinuousClock.now
    for index in 0..<(warmUp + measured) {
        let counted = index >= warmUp
        if index == warmUp {
            decodeStart = networkCPU()
            processStart = processCPUSeconds()
        }
        let channels = session.live.channelCount
        let piece = UnsafeMutableBufferPointer(rebasing: output[0..<(block * channels)])
        let cpu = threadCPUSeconds(), allocated = room_thread_allocation_count(), freed = room_thread_free_count()
        session.live.render(into: piece, channels: channels)
        if counted {
            run.allocations += room_thread_allocation_count() - allocated
            run.frees += room_thread_free_count() - freed
        } else {
            run.warmUpAllocations += room_thread_allocation_count() - allocated
            run.warmUpFrees += room_thread_free_count() - freed
        }
        session.pump()
        if counted {
            renderCPU += threadCPUSeconds() - cpu
            var blockEnergy = 0.0
            for sample in piece { blockEnergy += Double(sample * sample) }
            energy += blockEnergy
            samples += piece.count
            levels[index - warmUp] = max(-200, Level.decibels(fromLinear: (blockEnergy / Double(piece.count)).squareRoot()))
        }
        run.renderBlocks += 1
        let due = start + .seconds(Double((index + 1) * block) / Double(Room.sampleRate) / speed)
        if due > .now { Thread.sleep(forTimeInterval: (due - .now) / .seconds(1)) }
    }
    let decodeEnd = networkCPU(), processEnd = processCPUSeconds()
    feeder.stop()
    let audioSeconds = Double(measured) / 100
    run.render = renderCPU / audioSeconds
    run.decode = (decodeEnd - decodeStart) / audioSeconds
    run.receive = feeder.cpu / audioSeconds
    run.process = (processEnd - processStart) / audioSeconds
    run.outputDecibels = max(-200, Level.decibels(fromLinear: (energy / Double(max(1, samples))).squareRoot()))
    let middle = levels.sorted()[levels.count / 2]
    run.quietBlocks = levels.filter { $0 < middle - 20 }.count
    run.measuredBlocks = measured
    run.packetsSent = feeder.sent
    run.longestFeederWait = feeder.longestGap
    (run.packetsReceived, run.packetsLost, run.packetsUnplayable) = mumble.packetCounts()
    for talker in 0..<talkers { mumble.network.userLeft(session: UInt32(talker + 1), reason: "the benchmark ended") }
    return run
}

/// The network's thread for `roombench network`: hands each talker's packet
/// to the room once the room's clock has passed the end of the 20 ms it
/// carries, timing only the hand-over.
final class PacketFeeder: @unchecked Sendable {
    private let network: MumbleRoom
    private let live: LiveRoom
    private let talkers: Int
    private let packets: [[UInt8]]
    private let measuredFrom: Int
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)
    /// CPU-seconds spent handing packets over from `measuredFrom` on, and packets handed; read after `stop`.
    private(set) var cpu = 0.0
    private(set) var sent = 0
    /// The longest wall-clock wait between two looks at the room's clock, in seconds.
    private(set) var longestGap = 0.0

    init(network: MumbleRoom, live: LiveRoom, talkers: Int, packets: [[UInt8]], measuredFrom: Int) {
        self.network = network
        self.live = live
        self.talkers = talkers
        self.packets = packets
        self.measuredFrom = measuredFrom
    }

    func start() {
        let thread = Thread { [self] in
            defer { finished.signal() }
            var step = 0
            let frames = TalkerVoice.frameSamples
            var last = ContinuousClock.now
            while running.load(ordering: .relaxed) {
                let now = ContinuousClock.now
                longestGap = max(longestGap, (now - last) / .seconds(1))
                last = now
                let frame = live.frame
                while (step + 1) * frames <= frame {
                    let started = threadCPUSeconds()
                    for talker in 0..<talkers {
                        network.voice(VoicePacket(session: UInt32(talker + 1), sequence: Int64(2 * step),
                                                  opus: TalkerVoice.packet(packets, talker: talker, step: step),
                                                  position: HandFedMumbleRoom.position(talker: talker, of: talkers, step: step)))
                    }
                    if step * frames >= measuredFrom { cpu += threadCPUSeconds() - started }
                    sent += talkers
                    step += 1
                }
                Thread.sleep(forTimeInterval: 0.001)
            }
        }
        thread.name = "bench-network"
        thread.start()
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        finished.wait()
    }
}
