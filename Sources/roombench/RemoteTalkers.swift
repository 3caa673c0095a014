import ArgumentParser
import AudioCore
import Devices
import Engine
import Foundation
import Network
import Scene

#if canImport(Glibc)
import Glibc
#endif

/// What remote talkers say in the benchmarks: 20 ms Opus packets, made once
/// before anything is measured, as a Mumble client would send them.
enum TalkerVoice {
    /// Samples of one packet: Mumble's 20 ms at 48 kHz.
    static let frameSamples = OpusVoiceEncoder.frameSamples
    /// Mumble's default voice bit rate.
    static let bitrate = 40_000

    /// Packets of `samples` (mono, 48 kHz), one per 20 ms, in order; the last partial frame is dropped.
    static func packets(of samples: [Float], bitrate: Int = TalkerVoice.bitrate) throws -> [[UInt8]] {
        let encoder = try OpusVoiceEncoder(bitrate: bitrate)
        var packet = [UInt8](repeating: 0, count: 1_275)
        var packets: [[UInt8]] = []
        for start in stride(from: 0, to: samples.count - frameSamples + 1, by: frameSamples) {
            let length = try samples.withUnsafeBufferPointer { all in
                try packet.withUnsafeMutableBufferPointer {
                    try encoder.encode(UnsafeBufferPointer(rebasing: all[start..<(start + frameSamples)]), into: $0)
                }
            }
            packets.append(Array(packet[..<length]))
        }
        return packets
    }

    /// The packet `talker` sends at `step`: each talker says `packets` from
    /// its own point in them, 41 packets (0.82 s) after the last talker's.
    static func packet(_ packets: [[UInt8]], talker: Int, step: Int) -> [UInt8] {
        packets[(step + 41 * talker) % packets.count]
    }

    /// The talking part of a speech file, mono at 48 kHz: from its first
    /// 20 ms louder than -50 dBFS to its last, so that a loop of it talks on.
    static func speech(file path: String) throws -> [Float] {
        let samples = try AudioFileReader.read(path: path, engineRate: Room.sampleRate).monoSamples(at: Room.sampleRate)
        let frames = samples.count / frameSamples
        func loud(_ frame: Int) -> Bool {
            var energy = 0.0
            for index in (frame * frameSamples)..<((frame + 1) * frameSamples) { energy += Double(samples[index] * samples[index]) }
            return Level.decibels(fromLinear: (energy / Double(frameSamples)).squareRoot()) > -50
        }
        guard let first = (0..<frames).first(where: loud), let last = (0..<frames).last(where: loud) else {
            throw ValidationError("\(path): no speech louder than -50 dBFS in it")
        }
        return Array(samples[(first * frameSamples)..<((last + 1) * frameSamples)])
    }

    /// `seconds` of noise shaped like speech: a voiced buzz (a pitch gliding
    /// 95-190 Hz) and breath through two moving formants, in syllables of
    /// 120-280 ms with short gaps and a longer pause now and then; about -14 dBFS RMS.
    static func speechLike(seconds: Double, seed: UInt64) -> [Float] {
        let rate = Double(Room.sampleRate), count = Int(seconds * rate)
        var generator = NoiseGenerator(seed: seed)
        func random() -> Double { (Double(generator.next()) + 1) / 2 }
        var output = [Float](repeating: 0, count: count)
        var phase = 0.0, index = 0
        // Two resonators: a formant pair per syllable.
        var state = [0.0, 0.0, 0.0, 0.0]
        while index < count {
            let syllable = Int((0.12 + 0.16 * random()) * rate)
            let gap = Int((random() < 0.15 ? 0.25 + 0.2 * random() : 0.03 + 0.05 * random()) * rate)
            let f1 = 300 + 500 * random(), f2 = 900 + 1_500 * random(), pitch = 95 + 95 * random()
            func coefficients(_ frequency: Double) -> (Double, Double) {
                let radius = 0.985, angle = 2 * Double.pi * frequency / rate
                return (2 * radius * cos(angle), -radius * radius)
            }
            let (a1, b1) = coefficients(f1), (a2, b2) = coefficients(f2)
            for step in 0..<syllable where index + step < count {
                let t = Double(step) / Double(syllable)
                let envelope = sin(Double.pi * t)
                phase += pitch * (1 + 0.1 * sin(2 * Double.pi * t)) / rate
                phase -= phase.rounded(.down)
                let excitation = (2 * phase - 1) * 0.6 + 0.4 * (2 * random() - 1)
                let first = excitation + a1 * state[0] + b1 * state[1]
                state[1] = state[0]
                state[0] = first
                let second = excitation + a2 * state[2] + b2 * state[3]
                state[3] = state[2]
                state[2] = second
                output[index + step] = Float(envelope * (first + 0.5 * second) * 0.004)
            }
            index += syllable + gap
        }
        var energy = 0.0
        for sample in output { energy += Double(sample * sample) }
        let gain = Float(0.2 / max(1e-9, (energy / Double(max(1, count))).squareRoot()))
        for index in output.indices { output[index] = max(-1, min(1, output[index] * gain)) }
        return output
    }
}

/// A Mumble room started without a server (`start(connect: false)`), fed
/// by hand through the calls its client makes, as a server would feed it.
final class HandFedMumbleRoom: @unchecked Sendable {
    let settings: MumbleSettings
    let network: MumbleRoom
    private let uplink: MumbleUplink

    /// `session` joined to no server; `uplink` is the one the session sends to, if it was given one.
    init(session: RoomSession, uplink: MumbleUplink?, settings: MumbleSettings? = nil) {
        let settings = settings ?? MumbleSettings(host: "127.0.0.1", channel: "Bench", user: "bench", context: "roombench")
        self.settings = settings
        self.uplink = uplink ?? MumbleUplink(settings: settings)
        // Never read: the room connects nowhere.
        let trust = ServerTrust(storePath: FileManager.default.temporaryDirectory.appendingPathComponent("roombench-known-servers").path)
        network = MumbleRoom(settings: settings, session: session, uplink: self.uplink, trust: trust)
        network.start(connect: false)
    }

    /// Stops the talkers' decoder and the uplink's encoder.
    func close() {
        network.close()
        uplink.close()
    }

    /// The talkers' packet counts, summed: received, concealed (lost), unplayable.
    func packetCounts() -> (received: Int, lost: Int, unplayable: Int) {
        network.talkers().reduce(into: (0, 0, 0)) { sum, talker in
            sum.0 += talker["packetsReceived"] as? Int ?? 0
            sum.1 += talker["packetsLost"] as? Int ?? 0
            sum.2 += talker["packetsUnplayable"] as? Int ?? 0
        }
    }

    /// Where talker `index` of `count` stands at packet `step`, in Mumble's
    /// frame (x right, y up, z ahead): on a circle of 1.5 m round the
    /// listener, each in its own direction, walking round it at 0.5 m/s.
    static func position(talker index: Int, of count: Int, step: Int) -> SIMD3<Float> {
        let degrees = Double(index) * 360 / Double(max(1, count)) + Double(step) * 0.382
        let radians = degrees * .pi / 180
        return SIMD3(Float(1.5 * sin(radians)), 0, Float(1.5 * cos(radians)))
    }
}

/// Remote talkers for `roombench live`: `talkers` users of the channel
/// who, every 4 s of the room's time, join a few at a time, talk for 2 s
/// (real Opus packets with moving positions, ended as a spurt), and leave
/// again, each time with a new session as a server gives. Driven by the
/// control thread with the room's frame, as packets arrive on the network's.
final class RemoteCrowd: @unchecked Sendable {
    /// The talkers' cycle in 20 ms steps of the room's time; the render thread reads where a frame falls.
    struct Schedule: Sendable {
        static let stepFrames = TalkerVoice.frameSamples
        static let cycleSteps = 200
        /// Talker i joins at `joinStep + 2i` and leaves at `leaveStep + 2i`.
        static let joinStep = 5
        static let leaveStep = 150
        /// Every talker sends a packet each step of `talkSteps`.
        static let talkSteps = 25..<125

        /// Where a frame of the output falls: 1 while every talker is heard (with a
        /// margin for the decoder's lead, the jitter buffer and the fades),
        /// 2 while none is in the channel or talking, 0 otherwise.
        static func window(at frame: Int) -> Int {
            let step = (frame / stepFrames) % cycleSteps
            if step >= 40 && step < 120 { return 1 }
            if step >= leaveStep + 20 || step < 22 { return 2 }
            return 0
        }
    }

    let talkers: Int
    private let room: HandFedMumbleRoom
    private let packets: [[UInt8]]
    private var nextStep = 0
    /// Each talker's session while in the channel, and its next sequence number.
    private var sessions: [UInt32?]
    private var sequences: [Int64]
    private(set) var joins = 0
    private(set) var leaves = 0
    private(set) var packetsSent = 0

    init(session: RoomSession, talkers: Int) throws {
        self.talkers = talkers
        room = HandFedMumbleRoom(session: session, uplink: nil)
        packets = try TalkerVoice.packets(of: TalkerVoice.speechLike(seconds: 6, seed: 23))
        sessions = Array(repeating: nil, count: talkers)
        sequences = Array(repeating: 0, count: talkers)
    }

    /// Does what the server would have told the room by the room's `frame`.
    func advance(to frame: Int) {
        while nextStep * Schedule.stepFrames <= frame {
            perform(step: nextStep)
            nextStep += 1
        }
    }

    private func perform(step: Int) {
        let cycle = step / Schedule.cycleSteps, local = step % Schedule.cycleSteps
        for talker in 0..<talkers {
            if local == Schedule.joinStep + 2 * talker {
                let number = UInt32(1 + cycle * talkers + talker)
                sessions[talker] = number
                joins += 1
                room.network.userEntered(session: number, name: "remote\(talker + 1)")
            }
            if let number = sessions[talker], Schedule.talkSteps.contains(local) {
                let packet = VoicePacket(session: number, sequence: sequences[talker],
                                         opus: TalkerVoice.packet(packets, talker: talker, step: step),
                                         isLastInSpurt: local == Schedule.talkSteps.upperBound - 1,
                                         position: HandFedMumbleRoom.position(talker: talker, of: talkers, step: step))
                sequences[talker] += 2
                packetsSent += 1
                room.network.voice(packet)
            }
            if local == Schedule.leaveStep + 2 * talker, let number = sessions[talker] {
                sessions[talker] = nil
                leaves += 1
                room.network.userLeft(session: number, reason: "left the channel")
            }
        }
    }

    /// Takes the talkers still in the channel out and stops the room's network threads.
    func close() {
        for talker in 0..<talkers {
            if let number = sessions[talker] {
                sessions[talker] = nil
                leaves += 1
                room.network.userLeft(session: number, reason: "the benchmark ended")
            }
        }
        room.close()
    }
}

/// The ids of this process's threads, with their names as /proc shows them
/// (Foundation's `Thread.name` names no thread on Linux, so most read as the program's).
func threadIDs() -> [Int32: String] {
    guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return [:] }
    var found: [Int32: String] = [:]
    for task in tasks {
        guard let id = Int32(task) else { continue }
        let comm = (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8)) ?? ""
        found[id] = comm.trimmingCharacters(in: .whitespacesAndNewlines)
    }
    return found
}

/// CPU time of thread `id` of this process, in seconds, from its CPU
/// clock (as glibc's pthread_getcpuclockid makes it); nil once it has ended.
func threadCPUSeconds(thread id: Int32) -> Double? {
    // The kernel's per-thread scheduler clock: the id inverted, shifted by 3, with CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED.
    let clock = clockid_t((~id) << 3 | 6)
    var time = timespec()
    guard clock_gettime(clock, &time) == 0 else { return nil }
    return Double(time.tv_sec) + Double(time.tv_nsec) * 1e-9
}

/// CPU time of the whole process, user and system, in seconds.
func processCPUSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) * 1e-6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}
