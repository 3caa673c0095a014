import AudioCore
import AudioMeasurements
import Devices
import Engine
import Foundation
import Scene
import Spatial
import Voice

/// Rooms with a voice session, built in memory around the demo rooms' speech.
enum VoiceRoom {
    static let rate = 48_000

    /// A spoken line of the demo rooms (Tools/make_assets.sh), mono at 48 kHz, peaking at 0.5.
    static func speech(_ name: String) throws -> [Float] {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Scenes/audio/\(name).wav").standardized.path
        let decoded = try AudioFileReader.read(path: path)
        let samples = try decoded.monoSamples(at: rate)
        let peak = samples.map(abs).max() ?? 1
        return samples.map { $0 / peak * 0.5 }
    }

    /// `speech` after `lead` seconds of silence, then silence up to `total`
    /// seconds; with the frames where the speech starts and ends.
    static func talk(_ speech: [Float], after lead: Double, total: Double) -> (signal: [Float], onset: Int, end: Int) {
        let start = Int(lead * Double(rate))
        var signal = [Float](repeating: 0, count: Int(total * Double(rate)))
        for (index, sample) in speech.enumerated() where start + index < signal.count { signal[start + index] = sample }
        let threshold: Float = 0.01
        return (signal, signal.firstIndex { abs($0) > threshold }!, signal.lastIndex { abs($0) > threshold }!)
    }

    /// A 1 kHz tone played as it is, in the scene category: its level is the ducking gain.
    static let toneAmplitude: Float = 0.1
    static func tone(seconds: Double) -> RoomSource {
        Fixture.headLocked(AudioBuffer(mono: Signals.sine(frequency: 1_000, frames: Int(seconds * Double(rate)), amplitude: toneAmplitude)),
                           id: "tone", mode: .bypass)
    }

    /// A remote talker: heard at `gain` dB, listened to for voice activity at full level.
    static func participant(_ id: String, _ signal: [Float], gain: Double = 0) -> (Participant, RoomSource) {
        let participant = Participant(id: id, audioPath: "generated", audioField: Fixture.field(id), position: Position(1, 0, -2))
        var description = participant.source
        description.gainDecibels = gain
        return (participant, RoomSource(description, audio: AudioBuffer(mono: signal)))
    }

    static func room(scene: [RoomSource], participants: [(Participant, RoomSource)] = [], voice: VoiceDescription? = VoiceDescription(),
                     prompts: [RoomPrompt] = [], route: OutputRoute = .headphones) -> Room {
        var voice = voice
        voice?.participants = participants.map(\.0)
        let sources = scene + participants.map(\.1)
        return Room(scene: SceneDescription(file: "test.yaml", name: "test", route: RouteName(route), sources: scene.map(\.description),
                                            voice: voice),
                    sources: sources, prompts: prompts)
    }

    /// Renders `seconds`; returns the left channel and the events.
    static func run(_ engine: RoomEngine, seconds: Double, each: (RoomEngine, Int) throws -> Void = { _, _ in }) throws
        -> (left: [Float], events: [EngineEvent]) {
        var left: [Float] = [], events: [EngineEvent] = []
        let blocks = Int(seconds * 100)
        for block in 0..<blocks {
            try each(engine, block)
            let master = try engine.renderBlock()
            for frame in 0..<RoomEngine.blockFrames { left.append(master[frame * engine.channelCount]) }
            events += engine.takeEvents()
        }
        return (left, events)
    }

    static func engine(_ room: Room, microphone: AudioSource? = nil, sink: AudioSink = NullAudioSink(), echoPath: [Float]? = nil) throws -> RoomEngine {
        try RoomEngine(room: room, microphone: microphone, sink: sink, echoPath: echoPath,
                       microphoneIsCapture: echoPath != nil, outputIsPlayback: echoPath != nil)
    }

    /// The tone's level per millisecond (one period of 1 kHz), in dB against its own level: the ducking gain.
    static func envelope(_ left: [Float]) -> [Double] {
        stride(from: 0, to: left.count - 47, by: 48).map { start in
            Measure.decibels(Measure.rms(left[start..<(start + 48)]) * 2.0.squareRoot() / Double(toneAmplitude))
        }
    }

    /// A room's echo path at 48 kHz: 5 ms of flight, then a decaying noise tail of `rt60` seconds.
    static func echoPath(rt60: Double = 0.25, gain: Float = 0.3, seed: UInt64 = 3) -> [Float] {
        let length = Int(0.3 * Double(rate)), delay = Int(0.005 * Double(rate))
        var response = [Float](repeating: 0, count: length)
        let noise = Signals.whiteNoise(frames: length, rms: 1, seed: seed)
        for index in delay..<length {
            response[index] = noise[index] * Float(exp(-6.9 * Double(index - delay) / Double(rate) / rt60)) * 0.05 * gain
        }
        response[delay] += gain
        return response
    }
}

/// Keeps what it is given.
final class CollectingSink: AudioSink {
    var samples: [Float] = []
    var blocks = 0

    func play(_ block: UnsafeBufferPointer<Float>, channels: Int) throws {
        samples += block
        blocks += 1
    }
}
