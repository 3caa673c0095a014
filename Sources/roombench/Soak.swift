import ArgumentParser
import Engine
import Foundation
import Scene

#if canImport(Glibc)
import Glibc
#endif

/// A demo room rendered offline for an hour with its voice session
/// looping, watching memory, the clocks and the CPU per block.
struct Soak: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Render a room with a voice session for an hour: memory growth, drift between the scene and voice clocks, CPU per block over time.",
        discussion: """
        The room's participants and its microphone recording loop, unmuted, so voice activity goes on all hour. \
        It fails if memory grows by 1 MB or more after the first minute, if the clocks disagree, if a \
        participant's onsets or the uplink's delay behind the microphone move by more than a block, or if \
        the last minute costs 20% more CPU than the first.
        """
    )

    @Option(help: "The room, with a voice section.")
    var scene = "Scenes/tavern.yaml"

    @Option(help: "Seconds of audio.")
    var seconds = 3_600.0

    func validate() throws {
        guard seconds >= 120 && seconds <= 86_400 else { throw ValidationError("--seconds must be between 120 and 86400") }
        guard FileManager.default.fileExists(atPath: scene) else { throw ValidationError("--scene \(scene): no such file") }
    }

    func run() throws {
        var room = try Room.load(path: scene)
        guard let voice = room.scene.voice, let microphone = room.microphone, !voice.participants.isEmpty else {
            throw ValidationError("--scene \(scene): needs a voice section with a microphone file and a participant")
        }
        let talkers = Set(voice.participants.map(\.id))
        var loopFrames: [String: Int] = [:]
        for index in room.sources.indices where talkers.contains(room.sources[index].description.id) {
            room.sources[index].description.loop = true
            loopFrames[room.sources[index].description.id] = room.sources[index].audio.frameCount
        }
        room.scene.voice?.muted = false
        let engine = try RoomEngine(room: room, microphone: FileAudioSource(samples: microphone, loop: true), sink: NullAudioSink(),
                                    microphoneIsCapture: true, outputIsPlayback: true)

        let blocks = Int(seconds * 100), blocksPerMinute = 6_000
        var minuteCPU: [Double] = [], cpu = 0.0, slowestBlock = 0.0
        var residentAfterWarmUp = 0, residentPeak = 0
        // The frames where each talker starts talking: against their loop, they must not move.
        var starts: [String: [Int]] = [:]
        // The uplink over one turn of the microphone's loop after the first
        // minute and over the last whole turn at the same phase, to find its delay behind the microphone.
        let blockFrames = RoomEngine.blockFrames, window = (microphone.count + blockFrames - 1) / blockFrames
        let turns = ((blocks - blocksPerMinute - window) * blockFrames) / microphone.count
        let lateStart = (blocksPerMinute * blockFrames + turns * microphone.count) / blockFrames
        let earlyWindow = blocksPerMinute..<(blocksPerMinute + window), lateWindow = lateStart..<(lateStart + window)
        // Written through before the run (zeros would be left to the kernel's
        // zero pages), so they are resident before memory is first measured.
        var earlyUplink = [Float](repeating: 1, count: window * RoomEngine.blockFrames)
        var lateUplink = [Float](repeating: 1, count: window * RoomEngine.blockFrames)
        for block in 0..<blocks {
            let started = threadCPUSeconds()
            try engine.renderBlock()
            let spent = threadCPUSeconds() - started
            if earlyWindow.contains(block) { Self.copy(engine.uplinkBlock, into: &earlyUplink, block: block - earlyWindow.lowerBound) }
            if lateWindow.contains(block) { Self.copy(engine.uplinkBlock, into: &lateUplink, block: block - lateWindow.lowerBound) }
            cpu += spent
            slowestBlock = max(slowestBlock, spent)
            for event in engine.takeEvents() {
                if case .speechStarted(let talker, _) = event.kind, loopFrames[talker] != nil {
                    starts[talker, default: []].append(event.frame)
                }
            }
            if (block + 1) % blocksPerMinute == 0 {
                minuteCPU.append(cpu / 60)
                cpu = 0
                let resident = Self.residentBytes()
                if minuteCPU.count == 1 { residentAfterWarmUp = resident }
                residentPeak = max(residentPeak, resident)
                let line = String(format: "minute %3d: %.4f CPU-s per audio s, resident %.1f MB", minuteCPU.count, minuteCPU.last!,
                                  Double(resident) / 1_048_576)
                FileHandle.standardError.write(Data((line + "\n").utf8))
            }
        }
        let growth = residentPeak - residentAfterWarmUp
        let sceneClock = engine.renderer.framesRendered, engineClock = engine.framesRendered
        print(String(format: "soak: %@, %.0f s of audio in %d blocks", (scene as NSString).lastPathComponent, seconds, blocks))
        print(String(format: "memory: resident %.1f MB after the first minute, peak %.1f MB after it: growth %d bytes",
                     Double(residentAfterWarmUp) / 1_048_576, Double(residentPeak) / 1_048_576, growth))
        print("clocks: scene renderer at frame \(sceneClock), engine (voice bus) at frame \(engineClock)")
        var worstDrift = 0
        for (talker, frames) in starts.sorted(by: { $0.key < $1.key }) {
            let loop = loopFrames[talker]!, loops = engineClock / loop
            // The second time round (the first has the chain settling) against the last whole one.
            func phases(_ pass: Int) -> [Int] { frames.filter { $0 / loop == pass }.map { $0 % loop } }
            let early = phases(1), late = phases(loops - 1)
            let shifts = early.map { phase in
                late.map { other in min(abs(other - phase), loop - abs(other - phase)) }.min() ?? loop
            }.sorted()
            let drift = shifts.isEmpty ? loop : shifts[shifts.count / 2]
            worstDrift = max(worstDrift, drift)
            print(String(format: "drift: %@ started talking %d times in %d loops of %.1f s; between the 2nd and the %dth loop their onsets"
                         + " moved %.1f ms (median; largest %.1f ms)", talker, frames.count, loops, Double(loop) / 48_000, loops,
                         Double(drift) / 48, Double(shifts.last ?? loop) / 48))
        }
        let earlyDelay = Self.delay(of: earlyUplink, behind: microphone, from: earlyWindow.lowerBound * RoomEngine.blockFrames)
        let lateDelay = Self.delay(of: lateUplink, behind: microphone, from: lateWindow.lowerBound * RoomEngine.blockFrames)
        print(String(format: "drift: the uplink follows the microphone by %.3f ms after the first minute and by %.3f ms at the end",
                     Double(earlyDelay) / 48, Double(lateDelay) / 48))
        worstDrift = max(worstDrift, abs(lateDelay - earlyDelay))
        let first = minuteCPU.first ?? 0, last = minuteCPU.last ?? 0
        print(String(format: "CPU: first minute %.4f, last %.4f CPU-s per audio s (ratio %.3f), lowest %.4f, highest %.4f; slowest block %.2f ms",
                     first, last, last / first, minuteCPU.min() ?? 0, minuteCPU.max() ?? 0, slowestBlock * 1_000))
        let clocksAgree = sceneClock == engineClock && engineClock == blocks * RoomEngine.blockFrames
        if growth >= 1 << 20 || !clocksAgree || worstDrift > RoomEngine.blockFrames || starts.count < talkers.count || last > first * 1.2 {
            throw ExitCode(1)
        }
    }

    static func copy(_ samples: UnsafeBufferPointer<Float>, into window: inout [Float], block: Int) {
        for index in samples.indices { window[block * samples.count + index] = samples[index] }
    }

    /// The lag, up to 20 ms, at which `uplink` correlates best with the
    /// looping microphone recording from timeline frame `start`.
    static func delay(of uplink: [Float], behind microphone: [Float], from start: Int) -> Int {
        var best = (lag: 0, value: -Double.infinity)
        for lag in 0...960 {
            var sum = 0.0
            for index in lag..<uplink.count { sum += Double(uplink[index]) * Double(microphone[(start + index - lag) % microphone.count]) }
            if sum > best.value { best = (lag, sum) }
        }
        return best.lag
    }

    /// The process's resident memory, from /proc/self/statm.
    static func residentBytes() -> Int {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }
}
