import ArgumentParser
import AudioCore
import CAllocationCounter
import Control
import Engine
import Foundation
import Scene
import Spatial
import Synchronization
import Voice

/// roomd's render path under steering: a render thread pulls the room
/// through `LiveRoom.render` in the odd-sized pieces a sound server asks
/// for, pushing the microphone first as a capture callback would, while a
/// control thread drives `RoomSession` as scenectl does.
struct LiveBlocks: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "live",
        abstract: "roomd's render callback while the room is steered: heap allocations, frees and lock waits on the render thread, and its CPU per block.",
        discussion: """
            The scene plays with its microphone as a device fed from its recording and the echo of \
            the output, echo cancellation on and the talker unmuted. A control thread, paced on the \
            room's frame, glides sources, changes gains, plays and stops, ducks, mutes, switches echo \
            cancellation, turns the listener, forces routes, triggers prompts, reports echo delays, \
            adds and removes sources, sets their paths, and streams a talker it adds and removes. \
            Meanwhile remote talkers of a Mumble room fed by hand (no server) join, talk in Opus \
            packets with moving positions, and leave, every 4 s: decoded on the room's talker thread, \
            they reach the render thread as streamed voices, and the output's level while they talk \
            and while none does is reported. \
            Only the render thread's allocations, frees and mutex locks are counted, from its first block. \
            It fails if it allocates or frees anything.
            """
    )

    @Option(help: "A scene with a voice section, participants and point sources.")
    var scene = "Scenes/tavern.yaml"

    @Option(help: "Engine blocks of 10 ms to render.")
    var blocks = 10_000

    @Option(help: "How many times faster than real time the render thread runs.")
    var speed = 2.0

    @Flag(help: "Print the figures as JSON.")
    var json = false

    @Option(help: "Remote talkers who join, talk 2 s and leave every 4 s of the room's time (0 for none).")
    var remoteTalkers = 8

    @Flag(help: "Force no routes: OpenAL devices are then made only before the first block, so every lock wait is the engine's own.")
    var steadyRoute = false

    func validate() throws {
        guard blocks >= 100 && blocks <= 1_000_000 else { throw ValidationError("--blocks must be between 100 and 1000000") }
        guard speed >= 0.5 && speed <= 10 else { throw ValidationError("--speed must be between 0.5 and 10") }
        // The talkers have 16 places; the steering's own talker takes one.
        guard (0...15).contains(remoteTalkers) else { throw ValidationError("--remote-talkers must be between 0 and 15") }
        guard FileManager.default.fileExists(atPath: scene) else { throw ValidationError("--scene \(scene): no such file") }
    }

    func run() throws {
        var room = try Room.load(path: scene)
        guard room.scene.voice != nil else { throw ValidationError("--scene \(scene): needs a voice section") }
        // A scene whose microphone is the device has no recording: the echo alone feeds it.
        let microphone = room.microphone ?? [Float](repeating: 0, count: Room.sampleRate)
        room.scene.voice?.microphone = .device
        room.scene.voice?.muted = false
        room.scene.voice?.echoCancellation = .on
        let session = try RoomSession(room: room, devices: (true, true), deviceRoute: .headphones)
        session.startPumping()
        let steering = Steering(room: room, changesRoutes: !steadyRoute)
        guard !steering.movable.isEmpty else { throw ValidationError("--scene \(scene): needs a point source to move") }

        let counts = EventCounts()
        let events = try session.subscribe().events
        let listening = Task { for await event in events { counts.add(event) } }

        let crowd = remoteTalkers > 0 ? try RemoteCrowd(session: session, talkers: remoteTalkers) : nil
        let render = RenderThread(live: session.live, microphone: session.deviceMicrophone, recording: microphone,
                                  blocks: blocks, speed: speed)
        render.start()
        var sent = 0, refused = 0
        while !render.finished {
            let frame = session.live.frame
            // What the server sends arrives on the network's thread; here, the control thread stands in for it.
            crowd?.advance(to: frame)
            if frame >= steering.nextFrame {
                do {
                    try steering.next(on: session, at: frame)
                    sent += 1
                } catch {
                    refused += 1
                }
            }
            Thread.sleep(forTimeInterval: 0.001)
        }
        let result = render.result
        let renderersMade = session.status()["renderersMade"] as? Int ?? 0
        crowd?.close()
        Thread.sleep(forTimeInterval: 0.1)
        listening.cancel()
        session.close()

        let kinds = counts.snapshot
        if json {
            let object: [String: Any] = [
                "blocks": result.blocks, "renderCalls": result.calls, "allocations": result.allocations, "frees": result.frees,
                "locks": result.locks, "contendedLocks": result.contendedLocks, "microsecondsPerBlock": result.cpuSeconds / Double(result.blocks) * 1e6,
                "outputDecibels": result.outputDecibels, "commands": sent, "refused": refused, "events": kinds,
                "droppedEvents": session.live.droppedEvents, "renderersMade": renderersMade,
                "remoteTalkers": remoteTalkers, "remoteJoins": crowd?.joins ?? 0, "remoteLeaves": crowd?.leaves ?? 0,
                "remotePackets": crowd?.packetsSent ?? 0, "remoteTalkingDecibels": result.remoteTalkingDecibels,
                "remoteSilentDecibels": result.remoteSilentDecibels,
            ]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(String(format: "live render: %d blocks in %d device-sized calls at %.1fx real time, %.0f us of CPU per block, output %.1f dBFS",
                         result.blocks, result.calls, speed, result.cpuSeconds / Double(result.blocks) * 1e6, result.outputDecibels))
            print("steering: \(sent) commands (\(refused) refused), \(renderersMade) renderers made; events: "
                  + kinds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            if let crowd {
                print(String(format: "remote talkers: %d joins and %d leaves of %d talkers, %d Opus packets; output %.1f dBFS while they talk, %.1f dBFS while none does",
                             crowd.joins, crowd.leaves, crowd.talkers, crowd.packetsSent, result.remoteTalkingDecibels,
                             result.remoteSilentDecibels))
            }
            print("render thread: \(result.allocations) heap allocations and \(result.frees) frees in \(result.blocks) blocks; "
                  + "\(result.locks) mutex locks, \(result.contendedLocks) of them waited for")
        }
        if result.allocations > 0 || result.frees > 0 { throw ExitCode(1) }
    }
}

/// What the control thread does next, in turn, every 20 ms of the room's time.
final class Steering {
    let movable: [String]
    let points: [String]
    let prompt: String?
    /// A mono file of the room's, for the sources it adds.
    let file: String?
    private var joined: [String] = []
    private var joins = 0
    private var stream: SourceStream?
    private var talkerSamples = [Float](repeating: 0, count: 2 * RoomEngine.blockFrames)
    private(set) var nextFrame = 0
    private var step = 0
    private var generator = NoiseGenerator(seed: 11)
    private let changesRoutes: Bool

    init(room: Room, changesRoutes: Bool) {
        self.changesRoutes = changesRoutes
        points = room.sources.filter(\.isPoint).map(\.description.id)
        // Sources on a motion path keep it; the others glide where they are sent.
        movable = room.sources.filter {
            guard case .point = $0.rendering, case .fixed = $0.description.placement else { return false }
            return true
        }.map(\.description.id)
        prompt = room.scene.prompts.first?.id
        file = room.sources.first { $0.audio.channelCount == 1 && $0.fileChannels == 1 }?.description.audioPath
    }

    func next(on session: RoomSession, at frame: Int) throws {
        defer {
            step += 1
            nextFrame = frame + 2 * RoomEngine.blockFrames
        }
        func random(_ range: ClosedRange<Double>) -> Double {
            range.lowerBound + (Double(generator.next()) + 1) / 2 * (range.upperBound - range.lowerBound)
        }
        // A talker's voice arrives every 20 ms, as a network delivers it.
        if let stream {
            for index in talkerSamples.indices { talkerSamples[index] = Float(random(-0.1...0.1)) }
            stream.push(talkerSamples)
        }
        // Every 100 ms, what the output's tick reports; otherwise one command of the cycle.
        if step % 5 == 4 { return session.reportEchoDelay(frames: 1_400 + Int(random(-300...300))) }
        switch step % 50 {
        case 0, 10, 20, 30, 40:
            try session.setGain(points[step / 50 % points.count], decibels: random(-12...0))
        case 5, 15, 25, 35, 45:
            try session.setDucking(level: DuckingLevel.allCases[step / 5 % 4], advanced: step % 100 < 50)
        case 11: try session.setMuted(step % 200 < 100)
        case 21: try session.setEchoCancellation(step % 300 < 150 ? .on : .off)
        case 31: try session.setListener(position: nil, yaw: random(-90...90), pitch: nil, roll: nil)
        case 41:
            let id = points[step / 50 % points.count]
            try step % 100 < 50 ? session.stop(id) : session.play(id)
        case 46 where step % 350 == 46 && changesRoutes: try session.forceRoute(step % 700 < 350 ? .speakers : nil)
        case 47 where step % 250 == 47:
            // Now and then more at once than may wait: the rest are dropped, and said to be, on the render thread.
            let count = step % 1_000 == 47 ? RoomEngine.promptQueueCapacity + 4 : 1
            if let prompt { for _ in 0..<count { try session.triggerPrompt(prompt) } }
        case 3, 23:
            guard let file else { break }
            joins += 1
            let id = "joined\(joins)"
            // Every way a source can join: a point on the route's bus, in the field, as it is, bypassing inside the head, faster.
            let position = "position: [\(random(-4...4)), 0, \(random(-4...4))]"
            let kind = ["\(position)", "\(position), algorithm: soundField", "mode: bypass", "\(position), inHead: bypass",
                        "\(position), rate: 1.5"][joins % 5]
            try session.add(entry: "{id: \(id), file: \"\(file)\", loop: true, \(kind)}", relativeTo: "/")
            joined.append(id)
        case 17:
            // A source that joined changes how it renders: another bus, the field, as it is.
            if let id = joined.last {
                try session.set(id, key: "algorithm", value: ["soundField", "passthrough", "hrtf", "panning", "auto"][step / 50 % 5])
            }
        case 13, 33:
            if !joined.isEmpty { try session.remove(joined.removeFirst()) }
        case 7:
            if let stream {
                self.stream = nil
                try session.remove(stream.id)
            } else {
                stream = try session.addStream(id: "talker", at: Position(random(-3...3), 0, -2))
            }
        case 43: try session.set(points[step / 50 % points.count], key: "reverbBlend", value: "\(random(0...1))")
        default:
            try session.move(movable[step % movable.count], to: Position(random(-4...4), random(-1...1), random(-4...4)),
                                overMilliseconds: random(50...400))
        }
    }
}

/// The render thread: a capture push and a render per device period, at
/// `speed` times real time, counting only its own allocations.
final class RenderThread: @unchecked Sendable {
    struct Result {
        var blocks = 0
        var calls = 0
        var allocations = 0
        var frees = 0
        var locks = 0
        var contendedLocks = 0
        var cpuSeconds = 0.0
        var outputDecibels = -Double.infinity
        /// The output's level while every remote talker talks, and while none is in the channel or talking.
        var remoteTalkingDecibels = -200.0
        var remoteSilentDecibels = -200.0
    }

    /// Periods a server might ask for, in frames: never the engine's block.
    static let periods = [441, 512, 960, 333, 1_024, 480, 137]

    private let live: LiveRoom
    private let microphone: PushedAudioSource
    private let recording: [Float]
    private let blocks: Int
    private let speed: Double
    private let done = Atomic<Bool>(false)
    private var finalResult = Result()

    init(live: LiveRoom, microphone: PushedAudioSource, recording: [Float], blocks: Int, speed: Double) {
        self.live = live
        self.microphone = microphone
        self.recording = recording
        self.blocks = blocks
        self.speed = speed
    }

    var finished: Bool { done.load(ordering: .acquiring) }
    /// The figures, once `finished`.
    var result: Result { finished ? finalResult : Result() }

    func start() {
        let thread = Thread { [self] in
            finalResult = run()
            done.store(true, ordering: .releasing)
        }
        thread.start()
    }

    private func run() -> Result {
        let widest = Self.periods.max()! * ChannelLayout.surround71.channelCount
        let output = UnsafeMutableBufferPointer<Float>.allocate(capacity: widest)
        let captured = UnsafeMutableBufferPointer<Float>.allocate(capacity: Self.periods.max()!)
        defer {
            output.deallocate()
            captured.deallocate()
        }
        output.initialize(repeating: 0)
        captured.initialize(repeating: 0)
        let endFrame = blocks * RoomEngine.blockFrames
        let start = ContinuousClock.now
        var result = Result(), played = 0, recordingIndex = 0, energy = 0.0
        // The output's energy and samples by where the remote talkers' cycle is: 1 talking, 2 silent.
        var talking = (energy: 0.0, samples: 0), silent = (energy: 0.0, samples: 0)
        var previous = (frames: 0, channels: 1)
        while live.frame < endFrame {
            let frames = Self.periods[result.calls % Self.periods.count], channels = live.channelCount
            let piece = UnsafeMutableBufferPointer(rebasing: output[0..<(frames * channels)])
            let window = RemoteCrowd.Schedule.window(at: live.frame)
            let allocated = room_thread_allocation_count(), freed = room_thread_free_count(), cpu = threadCPUSeconds()
            let locked = room_thread_lock_count(), contended = room_thread_contended_lock_count()
            // The capture callback: the talker's recording and the echo of the last period's left channel.
            for index in 0..<frames {
                let echo = index < previous.frames ? output[index * previous.channels] : 0
                captured[index] = recording[recordingIndex] + 0.3 * echo
                recordingIndex = (recordingIndex + 1) % recording.count
            }
            _ = microphone.push(UnsafeBufferPointer(rebasing: captured[0..<frames]))
            live.render(into: piece, channels: channels)
            result.cpuSeconds += threadCPUSeconds() - cpu
            result.allocations += room_thread_allocation_count() - allocated
            result.frees += room_thread_free_count() - freed
            result.locks += room_thread_lock_count() - locked
            result.contendedLocks += room_thread_contended_lock_count() - contended
            var pieceEnergy = 0.0
            for sample in piece { pieceEnergy += Double(sample * sample) }
            energy += pieceEnergy
            if window == 1 {
                talking.energy += pieceEnergy
                talking.samples += piece.count
            } else if window == 2 {
                silent.energy += pieceEnergy
                silent.samples += piece.count
            }
            played += frames
            previous = (frames, channels)
            result.calls += 1
            let due = start + .seconds(Double(played) / Double(Room.sampleRate) / speed)
            if due > .now { Thread.sleep(forTimeInterval: (due - .now) / .seconds(1)) }
        }
        result.blocks = live.frame / RoomEngine.blockFrames
        // Floored, so that JSON can carry silence.
        result.outputDecibels = max(-200, Level.decibels(fromLinear: (energy / Double(max(1, played * live.channelCount))).squareRoot()))
        result.remoteTalkingDecibels = max(-200, Level.decibels(fromLinear: (talking.energy / Double(max(1, talking.samples))).squareRoot()))
        result.remoteSilentDecibels = max(-200, Level.decibels(fromLinear: (silent.energy / Double(max(1, silent.samples))).squareRoot()))
        return result
    }
}

/// Events the room told its subscribers, by kind.
final class EventCounts: @unchecked Sendable {
    private let lock = NSLock()
    private var counts: [String: Int] = [:]

    func add(_ event: EngineEvent) {
        let fields = try? JSONSerialization.jsonObject(with: Data(event.jsonLine.utf8)) as? [String: Any]
        let name = fields?["event"] as? String ?? "unknown"
        // A remote talker's speech carries its session on the server.
        let remote = fields?["session"] != nil && (name == "speechStarted" || name == "speechEnded")
        lock.withLock {
            counts[name, default: 0] += 1
            if remote { counts[name == "speechStarted" ? "remoteSpeechStarted" : "remoteSpeechEnded", default: 0] += 1 }
        }
    }

    var snapshot: [String: Int] { lock.withLock { counts } }
}
