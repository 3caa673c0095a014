import AudioMeasurements
import Engine
import Foundation
import Scene
import Testing
import Voice

/// The scene's gain under voice, measured on the rendered tone's envelope
/// in 1 ms steps against when the remote talker's speech starts and ends.
@Suite struct DuckingTests {
    static func render(level: DuckingLevel, advanced: Bool) throws -> (envelope: [Double], onset: Double, end: Double) {
        let speech = try VoiceRoom.speech("barkeep")
        let seconds = 1 + Double(speech.count) / 48_000 + 1.5
        let talk = VoiceRoom.talk(speech, after: 1, total: seconds)
        // Inaudible in the mix, so the output is the ducked tone alone; its activity still ducks.
        let remote = VoiceRoom.participant("remote", talk.signal, gain: -120)
        var voice = VoiceDescription()
        voice.duckingLevel = level
        voice.advancedDucking = advanced
        let room = VoiceRoom.room(scene: [VoiceRoom.tone(seconds: seconds)], participants: [remote], voice: voice)
        let left = try VoiceRoom.run(VoiceRoom.engine(room), seconds: seconds).left
        return (VoiceRoom.envelope(left), Double(talk.onset) / 48, Double(talk.end) / 48)
    }

    @Test(arguments: DuckingLevel.allCases)
    func advancedDuckingFollowsTheTalker(level: DuckingLevel) throws {
        let depth = DuckingLevels()[level]
        let (envelope, onset, end) = try Self.render(level: level, advanced: true)
        let ms = { (time: Double) in Int(time.rounded()) }
        // From when the tone has come through the buses' latency.
        #expect(envelope[50..<ms(onset)].allSatisfy { abs($0) < 0.1 }, "ducked before anyone talked")
        let reached = envelope.indices.first { $0 >= ms(onset) && abs(envelope[$0] - depth) <= 1 }
        #expect(reached != nil && Double(reached!) - onset <= 150, "within 1 dB of \(depth) dB \(reached.map { Double($0) - onset } ?? -1) ms after the onset")
        let held = envelope[ms(end)..<ms(end + 300)]
        #expect(held.allSatisfy { abs($0 - depth) <= 1 }, "left the depth within 300 ms of the end: \(held.max()!) dB")
        let released = envelope.indices.first { $0 > ms(end) && abs(envelope[$0]) <= 1 }
        #expect(released != nil && Double(released!) - end <= 1_000, "back within 1 dB of 0 dB \(released.map { Double($0) - end } ?? -1) ms after the end")
        #expect(envelope[ms(end + 1_000)...].allSatisfy { abs($0) <= 1 })
        let steps = zip(envelope[50...], envelope[51...]).map { abs($1 - $0) }
        #expect(steps.max()! <= 1, "a step of \(steps.max()!) dB in 1 ms")
        print("ducking \(level) advanced: \(depth) dB reached \(Double(reached ?? 0) - onset) ms after the onset, released \(Double(released ?? 0) - end) ms after the end, largest step \(String(format: "%.3f", steps.max()!)) dB/ms")
    }

    @Test func nonAdvancedDuckingHoldsThroughoutTheSession() throws {
        let (envelope, _, _) = try Self.render(level: .default, advanced: false)
        // The session is active from the start: the depth is reached within 150 ms, whoever talks.
        #expect(envelope[150...].allSatisfy { abs($0 - -12) <= 1 }, "between \(envelope[150...].min()!) and \(envelope[150...].max()!) dB")
        let steps = zip(envelope[50...], envelope[51...]).map { abs($1 - $0) }
        #expect(steps.max()! <= 1)
    }

    /// The level of `frequency` in each 10 ms block of both ears, in dB,
    /// where both tones fit whole periods.
    static func toneLevels(_ ears: [[Float]], frequency: Double) -> [Double] {
        let block = RoomRenderer.blockFrames
        return stride(from: 0, to: ears[0].count - block + 1, by: block).map { start in
            let power = ears.reduce(0.0) { sum, ear in
                let amplitude = Measure.toneAmplitude(ear[start..<(start + block)], frequency: frequency)
                return sum + amplitude * amplitude
            }
            return Measure.decibels(power.squareRoot())
        }
    }

    /// A talker who joins plays on the scene's OpenAL bus and reverb. The
    /// bus's listener gain ducks the scene, and the talker's gain rises
    /// against it in the same update: the talker keeps its level through
    /// the ramps down and up, while the scene goes down by the depth: on
    /// either OpenAL bus, in the field (whose stream plays on the bus), and
    /// played as it is (whose reverb send plays on the bus); in blocks split
    /// around a source's start too, where OpenAL ramps over the first part.
    @Test(arguments: ["auto", "panning", "soundField", "passthrough"])
    func aJoinedTalkerKeepsItsLevelWhileTheSceneOnItsBusDucks(algorithm: String) throws {
        let speech = try VoiceRoom.speech("barkeep")
        let seconds = 1 + Double(speech.count) / 48_000 + 1.5
        let talk = VoiceRoom.talk(speech, after: 1, total: seconds)
        var voice = VoiceDescription()
        voice.duckingLevel = .mid
        voice.advancedDucking = true
        let remote = VoiceRoom.participant("remote", talk.signal, gain: -120)
        voice.participants = [remote.0]
        // The scene: a 1 kHz hum on the left; the talker: a 4 kHz tone on the right. Both in a reverberant room.
        let hum = Fixture.point(Signals.sine(frequency: 1_000, frames: 48_000, amplitude: 0.1), at: .fixed(Fixture.position(azimuth: -90)),
                                id: "hum", loop: true)
        // Silent sources that start mid-block through the first 200 ms of the talk: the renderer
        // splits those blocks around each start, and OpenAL's ramps of the ducking with them.
        let starts = (0..<20).map { block in
            Fixture.point([Float](repeating: 0, count: 480), at: .fixed(Fixture.position(azimuth: 0)), id: "start\(block)",
                          gain: -120, start: Double(talk.onset + block * 480 + 200) / 48_000)
        }
        let sources = [hum] + starts
        let room = Room(scene: SceneDescription(file: "test.yaml", name: "test", route: RouteName(.headphones),
                                                reverb: RoomReverb(preset: .mediumRoom), sources: sources.map(\.description), voice: voice),
                        sources: sources + [remote.1])
        let driver = try LiveSessionTests.Driver(room)
        let stream = try driver.session.addStream(id: "alice", at: Fixture.position(azimuth: 90))
        if algorithm != "auto" { try driver.session.set("alice", key: "algorithm", value: algorithm) }
        let tone = Signals.sine(frequency: 4_000, frames: Int(seconds * 48_000) + 4_800, amplitude: 0.1)
        var ears: [[Float]] = [[], []]
        for block in 0..<Int(seconds * 100) {
            stream.push(Array(tone[(block * 480)..<((block + 1) * 480)]))
            let rendered = driver.render(blocks: 1)
            ears[0] += rendered[0]
            ears[1] += rendered[1]
        }
        let talker = Self.toneLevels(ears, frequency: 4_000), scene = Self.toneLevels(ears, frequency: 1_000)
        let onset = talk.onset / 480, end = talk.end / 480
        // From half a second in, when the talker's reverb has built up, to the end: through the ramp down and up.
        let steady = talker[50..<talker.count]
        let reference = talker[50..<onset].reduce(0, +) / Double(onset - 50)
        let drift = steady.map { abs($0 - reference) }.max()!
        let sceneBefore = scene[50..<onset].reduce(0, +) / Double(onset - 50)
        let sceneDucked = scene[(end - 50)..<end].reduce(0, +) / 50
        print("a joined talker (\(algorithm)) under ducking: its level moved at most \(String(format: "%.2f", drift)) dB from \(String(format: "%.1f", reference)) dB; the scene \(String(format: "%.1f", sceneBefore)) -> \(String(format: "%.1f", sceneDucked)) dB")
        #expect(drift < 0.2, "the talker's level moved \(drift) dB while the scene ducked")
        #expect(abs(sceneDucked - sceneBefore - DuckingLevels()[.mid]) < 1, "the scene went from \(sceneBefore) to \(sceneDucked) dB")
        #expect(scene[(end + 150)...].allSatisfy { abs($0 - sceneBefore) < 1 }, "the scene came back")
    }

    @Test func aRoomsOwnLevelsAndNoSessionNoDucking() throws {
        var voice = VoiceDescription()
        voice.duckingLevels[.mid] = -30
        voice.duckingLevel = .mid
        let tone = VoiceRoom.tone(seconds: 1)
        let ducked = try VoiceRoom.run(VoiceRoom.engine(VoiceRoom.room(scene: [tone], voice: voice)), seconds: 1).left
        #expect(abs(VoiceRoom.envelope(ducked)[500] - -30) < 0.5)
        let alone = try VoiceRoom.run(VoiceRoom.engine(VoiceRoom.room(scene: [tone], voice: nil)), seconds: 1).left
        #expect(VoiceRoom.envelope(alone)[50...].allSatisfy { abs($0) < 0.1 })
    }
}
