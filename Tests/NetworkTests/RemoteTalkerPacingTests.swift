import AudioCore
import AudioMeasurements
import Engine
import Foundation
import Network
import Testing

/// The talkers' decoder keeps a remote talker's stream fed as the room
/// plays: woken by each block the uplink hands over in a room with a voice
/// bus, and looking on its own in a room without one (after a load of such
/// a scene), so the talker is heard without a gap either way.
@Suite struct RemoteTalkerPacingTests {
    @Test(arguments: ["network/tavern.yaml", "forest_camp.yaml"])
    func aTalkerIsHeardWithoutAGapAsTheRoomPlays(scene: String) throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Scenes/\(scene)").standardized.path
        let room = try Room.load(path: path)
        let settings = room.scene.voice?.mumble ?? MumbleSettings(host: "127.0.0.1", channel: "Test", user: "test", context: "test")
        let uplink = MumbleUplink(settings: settings)
        let session = try RoomSession(room: room, devices: (false, false), deviceRoute: .headphones, voiceUplink: uplink)
        let trust = ServerTrust(storePath: FileManager.default.temporaryDirectory
            .appendingPathComponent("pacing-known-servers-\(getpid())").path)
        let network = MumbleRoom(settings: settings, session: session, uplink: uplink, trust: trust)
        network.start(connect: false)
        defer {
            network.close()
            uplink.close()
            session.close()
        }
        network.userEntered(session: 7, name: "tone")

        // A 1 kHz tone at -12 dBFS in 20 ms Opus packets, each handed over once the
        // room has played past the end of the audio it carries, as a server would.
        let frame = OpusVoiceEncoder.frameSamples, seconds = 3
        let tone = Signals.sine(frequency: 1_000, frames: seconds * Room.sampleRate, amplitude: Float(Level.linear(fromDecibels: -12)))
        let packets = try OpusCodecTests.encode(tone, bitrate: 40_000)

        // The room played in real time, a block each 10 ms, as a device would take it.
        let block = RoomEngine.blockFrames, channels = session.live.channelCount
        var output = [Float](repeating: 0, count: block * channels)
        var levels: [Double] = [], sent = 0
        let start = ContinuousClock.now
        for index in 0..<(seconds * 100) {
            while sent < packets.count && (sent + 1) * frame <= index * block {
                network.voice(VoicePacket(session: 7, sequence: Int64(2 * sent), opus: packets[sent]))
                sent += 1
            }
            output.withUnsafeMutableBufferPointer { session.live.render(into: $0, channels: channels) }
            session.pump()
            levels.append(Self.toneLevel(output, channels: channels))
            let due = start + .milliseconds(10 * (index + 1))
            if due > .now { Thread.sleep(forTimeInterval: (due - .now) / .seconds(1)) }
        }
        // From 0.5 s, when the talker's first packets have passed its jitter buffer and fade in, to the tone's end.
        let talking = Array(levels[50..<(seconds * 100 - 10)])
        let median = talking.sorted()[talking.count / 2]
        let gaps = talking.indices.filter { talking[$0] < median - 20 }
        print("\(scene): the talker's tone at \(median) dBFS per block, \(gaps.count) blocks 20 dB under it")
        #expect(median > -45, "the talker's tone is not heard: \(median) dBFS")
        #expect(gaps.isEmpty, "blocks 20 dB under the talker, at \(gaps.map { 50 + $0 })")
    }

    /// The level in dBFS of the 1 kHz tone in a block of 10 ms (ten whole
    /// periods), its channels averaged: the talker alone, whatever else the room plays.
    static func toneLevel(_ block: [Float], channels: Int) -> Double {
        let mono = stride(from: 0, to: block.count - channels + 1, by: channels).map { frame in
            (0..<channels).reduce(Float(0)) { $0 + block[frame + $1] } / Float(channels)
        }
        return Level.decibels(fromLinear: Measure.toneAmplitude(mono[...], frequency: 1_000, sampleRate: Double(Room.sampleRate)))
    }
}
