import AudioCore
import AudioMeasurements
import Engine
import Scene
import Testing
import Voice

#if canImport(Glibc)
import Glibc
#endif

@Suite struct VoiceSessionTests {
    static func styles(_ events: [EngineEvent]) -> [(Double, PromptStyle)] {
        events.compactMap { if case .promptStyleChanged(let style) = $0.kind { ($0.seconds, style) } else { nil } }
    }

    @Test func promptStyleFollowsTheSessionAndItsTalkers() throws {
        let speech = try VoiceRoom.speech("barkeep")
        let talk = VoiceRoom.talk(speech, after: 1, total: 1 + Double(speech.count) / 48_000 + 1.5)
        let room = VoiceRoom.room(scene: [], participants: [VoiceRoom.participant("remote", talk.signal)])
        let events = try VoiceRoom.run(VoiceRoom.engine(room), seconds: Double(talk.signal.count) / 48_000).events
        let styles = Self.styles(events)
        // Short as the session starts, none while the remote talks, short once they stop.
        #expect(styles.first.map { $0.1 == .short && $0.0 <= 0.01 } == true, "\(styles)")
        #expect(styles.last?.1 == .short)
        #expect(styles.map(\.1).contains(.none))
        let noneAt = styles.first { $0.1 == .none }!.0
        #expect(noneAt >= Double(talk.onset) / 48_000 && noneAt - Double(talk.onset) / 48_000 < 0.15, "none \(noneAt) s")
        let gaps = zip(styles, styles.dropFirst()).map { $1.0 - $0.0 }
        #expect(gaps.allSatisfy { $0 >= 0.3 - 1e-9 }, "a style lasted only \(gaps.min()!) s")
        // The talker's own events frame the none.
        let talkerEvents = events.filter { if case .speechStarted("remote", _) = $0.kind { true } else if case .speechEnded("remote", _) = $0.kind { true } else { false } }
        #expect(talkerEvents.count >= 2 && talkerEvents.count % 2 == 0)

        let noSession = VoiceRoom.room(scene: [VoiceRoom.tone(seconds: 1)], voice: nil)
        #expect(Self.styles(try VoiceRoom.run(VoiceRoom.engine(noSession), seconds: 1).events).isEmpty)
    }

    @Test func aPromptPlaysTheVariantItsStyleAllowsOrWaitsOrIsDropped() throws {
        let normal = Signals.sine(frequency: 500, frames: 24_000, amplitude: 0.2)
        let short = Signals.sine(frequency: 2_000, frames: 9_600, amplitude: 0.2)
        let prompts = [RoomPrompt(id: "welcome", normal: normal, short: short)]
        // Without a session the style is normal: the long variant plays at once.
        let quiet = VoiceRoom.room(scene: [], voice: nil, prompts: prompts)
        let plain = try VoiceRoom.run(VoiceRoom.engine(quiet), seconds: 1) { engine, block in
            if block == 10 { try engine.triggerPrompt("welcome") }
        }
        let expected = EngineEvent.Kind.promptPlayed(id: "welcome", variant: .normal, waited: 0)
        #expect(plain.events.contains { $0.kind == expected })
        #expect(abs(Measure.frequency(Array(plain.left[(6_000)..<(24_000)])) - 500) < 20)

        // While the remote talks, it waits for short and plays the short variant.
        let speech = try VoiceRoom.speech("barkeep")
        let talk = VoiceRoom.talk(speech, after: 0.5, total: 0.5 + Double(speech.count) / 48_000 + 2)
        let remote = VoiceRoom.participant("remote", talk.signal, gain: -120)
        let busy = VoiceRoom.room(scene: [], participants: [remote], prompts: prompts)
        let waited = try VoiceRoom.run(VoiceRoom.engine(busy), seconds: Double(talk.signal.count) / 48_000) { engine, block in
            if block == 100 { try engine.triggerPrompt("welcome") }
        }
        let played = waited.events.first { if case .promptPlayed = $0.kind { true } else { false } }
        guard case .promptPlayed(_, let variant, let wait)? = played?.kind else {
            Issue.record("no prompt played: \(waited.events)")
            return
        }
        // It played in short, when the style had been short since the talker last stopped.
        let styleThen = Self.styles(waited.events).last { $0.0 <= played!.seconds }?.1
        #expect(variant == .short && styleThen == .short && wait > 0, "\(played!)")
        let start = Int(played!.seconds * 48_000)
        #expect(abs(Measure.frequency(Array(waited.left[(start + 1_000)..<(start + 9_000)])) - 2_000) < 50)

        // One who never stops talking: dropped after the timeout.
        // A voiced buzz at 140 Hz with its harmonics, swelling at a syllable rate but never pausing.
        let buzz = (0..<(8 * 48_000)).map { index -> Float in
            let time = Double(index) / 48_000
            let voiced = (1...12).reduce(0.0) { $0 + sin(2 * Double.pi * 140 * Double($1) * time) / Double($1) }
            return Float(0.1 * (0.65 + 0.35 * sin(2 * Double.pi * 4 * time)) * voiced)
        }
        let endless = VoiceRoom.participant("remote", buzz, gain: -120)
        let talkative = VoiceRoom.room(scene: [], participants: [endless], prompts: prompts)
        // Three asked for at once are dropped at once.
        let dropped = try VoiceRoom.run(VoiceRoom.engine(talkative), seconds: 7) { engine, block in
            if block == 100 { for _ in 0..<3 { try engine.triggerPrompt("welcome") } }
        }.events
        let drops = dropped.filter { if case .promptDropped("welcome", let waited) = $0.kind { waited >= RoomEngine.promptTimeoutSeconds } else { false } }
        #expect(drops.count == 3 && Set(drops.map(\.seconds)).count == 1,
                "\(drops) \(dropped.filter { if case .promptStyleChanged = $0.kind { true } else { false } })")
        #expect(throws: UnknownPromptError.self) { try VoiceRoom.engine(quiet).triggerPrompt("farewell") }
    }

    /// Prompts wait one behind another, 16 at most: every one is played or
    /// reported dropped, and those still waiting when the render stops are named.
    @Test func promptsBeyondTheQueueAreDroppedAtOnceAndTheRestPlayInTurn() throws {
        // 50 ms each, a whole number of blocks, so the prompts follow one another without a gap.
        let beep = Signals.sine(frequency: 500, frames: 2_400, amplitude: 0.2)
        let room = VoiceRoom.room(scene: [], voice: nil, prompts: [RoomPrompt(id: "beep", normal: beep, short: beep)])
        let engine = try VoiceRoom.engine(room)
        let asked = RoomEngine.promptQueueCapacity + 2
        let early = try VoiceRoom.run(engine, seconds: 0.5) { engine, block in
            if block == 10 { for _ in 0..<asked { try engine.triggerPrompt("beep") } }
        }
        let drops = early.events.filter { if case .promptDropped("beep", 0) = $0.kind { true } else { false } }
        #expect(drops.count == 2 && drops.allSatisfy { abs($0.seconds - 0.1) < 1e-9 }, "\(early.events)")
        // 0.4 s after the trigger 8 have played, one of them still playing, and 8 wait.
        let playedEarly = early.events.filter { if case .promptPlayed = $0.kind { true } else { false } }.count
        #expect(playedEarly == 8 && engine.waitingPrompts(at: engine.framesRendered).count == RoomEngine.promptQueueCapacity - 8, "\(playedEarly) played")
        #expect(engine.waitingPrompts(at: engine.framesRendered).allSatisfy { $0.id == "beep" && abs($0.waited - 0.4) < 1e-9 })

        let late = try VoiceRoom.run(engine, seconds: 1)
        #expect(late.events.filter { if case .promptPlayed = $0.kind { true } else { false } }.count == 8 && engine.waitingPrompts(at: engine.framesRendered).isEmpty)
        // What played: the beep without a break for the 16 that queued, then nothing.
        let left = early.left + late.left
        let start = 4_800, end = start + RoomEngine.promptQueueCapacity * beep.count
        let windows = stride(from: start, to: end, by: 480).map { Measure.decibels(Measure.rms(left[$0..<($0 + 480)])) }
        #expect(windows[0] > -30 && windows.allSatisfy { abs($0 - windows[0]) < 0.5 }, "\(windows.map { Int($0) })")
        #expect(Measure.rms(left[end..<(end + 24_000)]) == 0)
    }

    @Test func echoCancellationAutoRules() throws {
        let auto = EchoCancellationMode.auto
        #expect(auto.resolve(microphoneIsCapture: true, outputIsPlayback: true).on)
        #expect(!auto.resolve(microphoneIsCapture: false, outputIsPlayback: true).on)
        #expect(!auto.resolve(microphoneIsCapture: true, outputIsPlayback: false).on)
        #expect(EchoCancellationMode.on.resolve(microphoneIsCapture: false, outputIsPlayback: false).on)
        #expect(!EchoCancellationMode.off.resolve(microphoneIsCapture: true, outputIsPlayback: true).on)
        // Offline: a file renders for nobody, unless an echo path stands for a room.
        let room = VoiceRoom.room(scene: [VoiceRoom.tone(seconds: 1)])
        let toFile = try VoiceRoom.engine(room)
        #expect(!toFile.echoCancellation.on && toFile.echoCancellation.reason.contains("not a capture device"))
        #expect(toFile.takeEvents().first?.kind == .echoCancellation(on: false, reason: toFile.echoCancellation.reason))
        #expect(try VoiceRoom.engine(room, echoPath: VoiceRoom.echoPath()).echoCancellation.on)
    }

    @Test func theWholeLoopCancelsTheRoomsEcho() throws {
        // The scene talks, the echo path brings it back to a silent microphone; the uplink should carry nothing.
        let speech = try VoiceRoom.speech("announcer")
        let seconds = 2 * Double(speech.count) / 48_000
        let announcer = Fixture.headLocked(AudioBuffer(mono: speech + speech), id: "announcer", mode: .bypass)
        let path = VoiceRoom.echoPath()
        func loop(_ mode: EchoCancellationMode) throws -> (played: [Float], uplink: [Float], on: Bool) {
            var voice = VoiceDescription()
            voice.echoCancellation = mode
            let uplink = CollectingSink()
            let engine = try VoiceRoom.engine(VoiceRoom.room(scene: [announcer], voice: voice), echoPath: path)
            engine.uplinkSink = uplink
            return (try VoiceRoom.run(engine, seconds: seconds).left, uplink.samples, engine.echoCancellation.on)
        }
        let (played, cancelled, on) = try loop(.auto)
        let uncancelled = try loop(.off).uplink
        #expect(on)
        // The echo the microphone heard, rebuilt from the mono master (both ears carry the same).
        var echo = [Float](repeating: 0, count: played.count)
        for (tap, weight) in path.enumerated() where weight != 0 {
            for index in tap..<played.count { echo[index] += played[index - tap] * weight }
        }
        let second = (played.count / 2)..<played.count
        let erle = Measure.decibels(Measure.rms(echo[second]) / max(Measure.rms(cancelled[second]), 1e-12))
        print(String(format: "closed loop: echo %.1f dBFS, uplink %.1f dBFS with cancellation, %.1f dBFS without",
                     Measure.rmsDecibels(Array(echo[second])), Measure.rmsDecibels(Array(cancelled[second])),
                     Measure.rmsDecibels(Array(uncancelled[second]))))
        #expect(erle >= 30)
        // Without cancellation the echo reaches the uplink: the loop is real.
        #expect(Measure.rmsDecibels(Array(uncancelled[second])) > Measure.rmsDecibels(Array(echo[second])) - 10)
    }

    @Test func customSourceAndSinkReplaceTheDevicesUntilReset() throws {
        let speech = try VoiceRoom.speech("barkeep")
        let room = VoiceRoom.room(scene: [VoiceRoom.tone(seconds: 4)])
        let device = CollectingSink(), custom = CollectingSink(), uplink = CollectingSink()
        let engine = try VoiceRoom.engine(room, sink: device)
        engine.uplinkSink = uplink
        let talker = PushedAudioSource(capacity: speech.count)
        speech.withUnsafeBufferPointer { _ = talker.push($0) }
        let run = try VoiceRoom.run(engine, seconds: 4) { engine, block in
            if block == 100 {
                engine.setAudioSource(talker)
                engine.setAudioSink(custom)
            }
            if block == 300 {
                engine.resetAudioSource()
                engine.resetAudioSink()
            }
        }
        #expect(device.blocks == 200 && custom.blocks == 200, "device \(device.blocks), custom \(custom.blocks) blocks")
        // The custom sink got the scene while it was set, ducked 12 dB for the session.
        let left = custom.samples.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        #expect(abs(Measure.rmsDecibels(left) - (Measure.decibels(Double(VoiceRoom.toneAmplitude) / 2.0.squareRoot()) - 12)) < 1)
        // The uplink carried the pushed talker, and silence from the device before and after.
        let block = RoomEngine.blockFrames
        #expect(Measure.rms(uplink.samples[0..<(100 * block)]) < 1e-4)
        #expect(Measure.rmsDecibels(Array(uplink.samples[(100 * block)..<(300 * block)])) > -40)
        #expect(Measure.rms(uplink.samples[(320 * block)...]) < 1e-4)
        #expect(run.events.contains { $0.kind == .speechStarted(talker: "local") })
    }

    @Test func aSinkThatMixesItsOwnAudioGivesTheReference() throws {
        // The sink adds a ring tone of its own, and the room carries all it
        // plays back into the microphone along a sparse echo path.
        final class RingingSink: AudioSink {
            weak var engine: RoomEngine?
            let microphone = PushedAudioSource()
            let echoTaps: [(delay: Int, gain: Float)] = [(240, 0.3), (290, 0.12), (700, 0.05)]
            var played: [Float] = []
            func play(_ block: UnsafeBufferPointer<Float>, channels: Int) throws {
                let start = played.count
                for frame in 0..<(block.count / channels) {
                    let time = start + frame
                    let ring = (time / 4_800) % 2 == 0 ? Float(0.2 * sin(2 * Double.pi * 700 * Double(time) / 48_000)) : 0
                    var sum: Float = 0
                    for channel in 0..<channels { sum += block[frame * channels + channel] }
                    played.append(sum / Float(channels) + ring)
                }
                played[start...].withContiguousStorageIfAvailable { engine?.putEchoReference($0) }
                let heard = (start..<played.count).map { time in
                    echoTaps.reduce(Float(0)) { $0 + (time >= $1.delay ? played[time - $1.delay] * $1.gain : 0) }
                }
                heard.withUnsafeBufferPointer { _ = microphone.push($0) }
            }
        }
        func uplinkLevel(reporting: Bool) throws -> Double {
            var voice = VoiceDescription()
            voice.echoCancellation = .on
            let engine = try VoiceRoom.engine(VoiceRoom.room(scene: [VoiceRoom.tone(seconds: 4)], voice: voice))
            let sink = RingingSink(), uplink = CollectingSink()
            sink.engine = engine
            engine.setAudioSink(sink)
            engine.setAudioSource(sink.microphone)
            if reporting { engine.startEchoReference() }
            engine.uplinkSink = uplink
            _ = try VoiceRoom.run(engine, seconds: 4)
            return Measure.rmsDecibels(Array(uplink.samples[(200 * 480)...]))
        }
        let reported = try uplinkLevel(reporting: true), unreported = try uplinkLevel(reporting: false)
        print(String(format: "ring tone in the uplink: %.1f dBFS with the sink's reference, %.1f dBFS without", reported, unreported))
        // Without the reference the canceller never hears the ring, and the room's echo of it reaches the uplink.
        #expect(reported < -50 && unreported > -40, "uplink at \(reported) dBFS, and \(unreported) without the reference")
    }

    @Test func mutedTalkerEventsInTheRoom() throws {
        let speech = try VoiceRoom.speech("barkeep")
        let talk = VoiceRoom.talk(speech, after: 1, total: 1 + Double(speech.count) / 48_000 + 1.5)
        var voice = VoiceDescription()
        voice.muted = true
        let room = VoiceRoom.room(scene: [VoiceRoom.tone(seconds: 1)], voice: voice)
        let uplink = CollectingSink()
        let engine = try VoiceRoom.engine(room, microphone: FileAudioSource(samples: talk.signal))
        engine.uplinkSink = uplink
        let events = try VoiceRoom.run(engine, seconds: Double(talk.signal.count) / 48_000).events
        let muted = events.filter { $0.kind == .mutedSpeechStarted || $0.kind == .mutedSpeechEnded }
        #expect(muted.map(\.kind) == [.mutedSpeechStarted, .mutedSpeechEnded])
        if muted.count == 2 {
            #expect(muted[0].seconds - Double(talk.onset) / 48_000 <= 0.3)
            #expect(muted[1].seconds - Double(talk.end) / 48_000 >= 0.5)
        }
        #expect(!events.contains { $0.kind == .speechStarted(talker: "local") }, "a muted talker is not heard in the room")
        #expect(uplink.samples.allSatisfy { $0 == 0 })
    }
}
