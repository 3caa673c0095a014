import AudioMeasurements
import Engine
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
