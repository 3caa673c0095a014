import AudioCore
import AudioMeasurements
import Devices
import Testing
import Voice

#if canImport(Glibc)
import Glibc
#endif

@Suite struct EchoCancellerTests {
    /// ERLE in dB over the frames where the echo is active, as the shared corpus scorer measures it.
    static func erle(mic: [Float], output: [Float], from start: Int, to end: Int) -> Double {
        var micEnergy = 0.0, outputEnergy = 0.0
        for frame in stride(from: start, to: end - 160, by: 160) {
            let m = mic[frame..<(frame + 160)].reduce(0.0) { $0 + Double($1 * $1) } / 160
            guard m > 1e-5 else { continue }
            micEnergy += m
            outputEnergy += output[frame..<(frame + 160)].reduce(0.0) { $0 + Double($1 * $1) } / 160
        }
        return 10 * log10(micEnergy / max(outputEnergy, 1e-20))
    }

    /// What `canceller`'s filter leaves of `mic` against `far` (the
    /// microphone less the echo it predicts), block by block, each block
    /// then suppressed with nobody near, or, given `start`, with a talker
    /// from that sample on.
    static func linearOutput(of canceller: EchoCanceller, mic: [Float], far: [Float], talkingFrom start: Int? = nil) -> [Float] {
        var linear: [Float] = []
        _ = VoiceSignals.cancel(mic: mic, far: far, talkingFrom: start, unsaid: .silent, with: canceller) { canceller in
            canceller.withLinearOutput { output, _ in linear += output }
        }
        return linear
    }

    /// In a quiet room: what the suppressor removes of the background
    /// comes back as comfort noise, so ERLE can be no more than the echo
    /// over the background.
    @Test func singleTalkEchoIsCancelledBy35dB() throws {
        let far = try VoiceSignals.speech("announcer")
        let noise = Signals.whiteNoise(frames: far.count, rms: 0.00005, seed: 3)
        let mic = zip(VoiceSignals.echo(of: far), noise).map { $0 + $1 }
        let output = VoiceSignals.cancel(mic: mic, far: far)
        let erle = Self.erle(mic: mic, output: output, from: 2 * 16_000, to: output.count)
        #expect(erle >= 35, "ERLE \(erle) dB after 2 s")
    }

    /// A far end that plays from the first block over a room's background:
    /// where the suppressor takes the echo away, the comfort noise stands
    /// at the background's level in every octave from 250 Hz to 7.5 kHz:
    /// from the first seconds, and later, where the echo the filter leaves
    /// would pull a floor that follows the output above the background.
    enum ComfortCase: String, CaseIterable {
        /// A voice, seconds 2 to 6.
        case voiceFromTheStart
        /// Three voices in a 0.6 s room through a small loudspeaker, seconds 18 to 24.
        case voicesThroughASmallLoudspeaker
        /// A game's music and fire through a small loudspeaker, which never pause, seconds 8 to 14.
        case game
        /// Four voices played 80 ppm fast, as `clockDriftIsMeasuredAndFollowed` plays them, in a quiet room, seconds 6 to 23.
        case voicesOnADriftingClock
    }

    @Test(arguments: ComfortCase.allCases) func comfortNoiseStandsAtTheBackgroundsLevel(_ scenario: ComfortCase) throws {
        let far: [Float], echo: [Float], seconds: Range<Int>, backgroundScale: Float
        switch scenario {
        case .voiceFromTheStart:
            far = try VoiceSignals.speech("announcer")
            echo = VoiceSignals.echo(of: far)
            seconds = 2..<6
            backgroundScale = 1
        case .voicesThroughASmallLoudspeaker:
            far = try VoiceSignals.voices(["announcer", "vendor", "announcer"], frames: 25 * 16_000)
            echo = UplinkChainTests.loudspeaker(VoiceSignals.echo(of: far, rt60: 0.6))
            seconds = 18..<24
            backgroundScale = 1
        case .game:
            far = try VoiceSignals.game(frames: 15 * 16_000)
            echo = VoiceSignals.echo(of: UplinkChainTests.loudspeaker(far), rt60: 0.45)
            seconds = 8..<14
            // The game's echo is louder than the voices': so is the room it is played in.
            backgroundScale = 10
        case .voicesOnADriftingClock:
            far = try VoiceSignals.voices(["announcer", "vendor", "barkeep", "guest"], frames: 24 * 16_000)
            echo = VoiceSignals.echo(of: try SampleRateConverter.convert(AudioBuffer(mono: far), from: 12_501, to: 12_500).samples)
            seconds = 6..<23
            // A quiet room: the echo the filter leaves of a drifting path stands over it.
            backgroundScale = 0.1
        }
        let background = UplinkChainTests.background(frames: far.count, seed: 5).map { $0 * backgroundScale }
        let mic = zip(echo, background).map { $0 + $1 }
        let output = VoiceSignals.cancel(mic: mic, far: far, unsaid: .silent)
        // Frames where the echo stands 10 to 20 dB over the background: the
        // suppressor's 30 dB floor leaves what it keeps of the echo under the comfort noise.
        let frames = (seconds.lowerBound * 100..<seconds.upperBound * 100).filter { frame in
            let over = UplinkChainTests.level(frame, echo) - UplinkChainTests.level(frame, background)
            return over > 10 && over < 20
        }
        #expect(frames.count > 20)
        func level(_ signal: [Float], from low: Double, to high: Double) -> Double {
            let band = Biquad.lowPassed(Biquad.highPassed(signal, cutoff: low, sampleRate: 16_000), cutoff: high, sampleRate: 16_000)
            return UplinkChainTests.level(frames, band)
        }
        for (low, high) in [(250.0, 500.0), (500, 1_000), (1_000, 2_000), (2_000, 4_000), (4_000, 7_500)] {
            let heard = level(output, from: low, to: high), room = level(background, from: low, to: high)
            print("\(scenario) \(Int(low))-\(Int(high)) Hz: comfort noise \(heard) dBFS, background \(room) dBFS, \(frames.count) frames")
            #expect(abs(heard - room) < 3, "\(Int(low))-\(Int(high)) Hz: comfort noise \(heard) dBFS, background \(room) dBFS")
        }
    }

    /// The near talker in `heard` against everything else, at the gain that
    /// best matches them (the corpus scorer's near SNR), in dB, and that gain.
    static func nearSNR(heard: [Float], talker: [Float]) -> (snr: Double, gain: Double) {
        let gain = zip(heard, talker).reduce(0.0) { $0 + Double($1.0 * $1.1) } / talker.reduce(0.0) { $0 + Double($1 * $1) }
        let error = zip(heard, talker).reduce(0.0) { $0 + pow(Double($1.0) - gain * Double($1.1), 2) }
        return (10 * log10(talker.reduce(0.0) { $0 + pow(gain * Double($1), 2) } / error), gain)
    }

    @Test func theNearTalkerSurvivesDoubleTalk() throws {
        let far = try VoiceSignals.speech("announcer")
        var near = [Float](repeating: 0, count: far.count)
        let line = try VoiceSignals.speech("vendor")
        // As in the shared corpus: the near talker enters at 4 s, as loud as the far end there.
        let start = 4 * 16_000, end = min(far.count / 160 * 160, start + line.count)
        let scale = Float(Measure.rms(far[start..<end]) / Measure.rms(line[0..<(end - start)]))
        for index in start..<end { near[index] = line[index - start] * scale }
        let echo = VoiceSignals.echo(of: far)
        let mic = (0..<far.count).map { echo[$0] + near[$0] }
        let output = VoiceSignals.cancel(mic: mic, far: far)
        // The near talker against everything else, at the best gain: the corpus scorer's measure.
        let (snr, gain) = Self.nearSNR(heard: Array(output[start..<end]), talker: Array(near[start..<end]))
        #expect(snr >= 12, "near talker at \(snr) dB SNR, gain \(gain)")
    }

    /// Double talk after the filter has converged: a near talker as loud as
    /// the echo talks over the far end for 10 s, and the caller says so each
    /// block, as the uplink's detector does. The filter's output less the
    /// near talker and the noise is exactly what it leaves of the echo,
    /// which must stay about as low as before the talker came.
    @Test func aNearTalkerDoesNotUndoTheFilter() throws {
        let seconds = 18, start = 8 * 16_000
        let far = try VoiceSignals.voices(["announcer", "barkeep"], frames: seconds * 16_000)
        let echo = VoiceSignals.echo(of: far)
        let near = try VoiceSignals.talker(from: start, decibels: 0, under: echo)
        let noise = Signals.whiteNoise(frames: far.count, rms: 0.00005, seed: 7)
        let mic = (0..<far.count).map { echo[$0] + near[$0] + noise[$0] }
        let linear = Self.linearOutput(of: EchoCanceller(), mic: mic, far: far, talkingFrom: start)
        let residualEcho = linear.indices.map { linear[$0] - near[$0] - noise[$0] }
        let before = Self.erle(mic: echo, output: residualEcho, from: 4 * 16_000, to: start)
        let during = Self.erle(mic: echo, output: residualEcho, from: start, to: far.count)
        print(String(format: "linear filter's ERLE: %.1f dB on the far end alone, %.1f dB through double talk", before, during))
        #expect(during >= before - 6, "ERLE \(during) dB through double talk, \(before) dB before it")
    }

    /// A talker's voice as the far end, its passages 36 dB apart in level
    /// every 2 s, over a room's background that the quiet passages' echo
    /// lies under and the loud ones' stands 25 dB above. Through the quiet
    /// passages a normalised step fits the background as echo; the filter
    /// must not then predict echo the loud ones never bring. Over the loud
    /// passages from 4 s on, its output less the background is what it
    /// leaves of their echo: its ERLE there is 10 dB or more and never
    /// falls by more than 1 dB from one loud passage to the next (11.6,
    /// 13.9, 18.5, 18.1 and 20.5 dB; with the step normalised by the far
    /// end alone, -0.4, 4.4, 10.5, 16.2 and 13.4).
    @Test func theRoomsBackgroundIsNotLearntAsEcho() throws {
        var voice: [Float] = []
        while voice.count < 24 * 16_000 { for name in ["announcer", "barkeep"] { voice += try VoiceSignals.speech(name) } }
        let passage = 2 * 16_000
        let far = (0..<(24 * 16_000)).map { voice[$0] * ($0 / passage % 2 == 0 ? 1 : 0.016) }
        let echo = VoiceSignals.echo(of: far)
        let loudEcho = (0..<far.count).filter { $0 / passage % 2 == 0 }.map { echo[$0] }
        let background = Signals.whiteNoise(frames: far.count, rms: Float(Measure.rms(loudEcho)) / 18, seed: 13)
        let linear = Self.linearOutput(of: EchoCanceller(), mic: zip(echo, background).map { $0 + $1 }, far: far)
        let residualEcho = linear.indices.map { linear[$0] - background[$0] }
        let loud = stride(from: 2 * passage, to: far.count, by: 2 * passage).map { ($0, $0 + passage) }
        let erle = loud.map { Self.erle(mic: echo, output: residualEcho, from: $0.0, to: $0.1) }
        print("linear filter's ERLE over each loud passage: " + erle.map { String(format: "%.1f", $0) }.joined(separator: ", ") + " dB")
        #expect(erle.allSatisfy { $0 >= 10 }, "ERLE \(erle) dB over the loud passages")
        #expect(zip(erle, erle.dropFirst()).allSatisfy { $1 >= $0 - 1 }, "ERLE \(erle) dB over the loud passages")
    }

    /// A game's music and fire through a small loudspeaker in a room of
    /// RT60 0.6 s, over a room's background, then the echo path moves (the
    /// microphone turned), then a talker 8 dB under the echo. The output
    /// stands apart from the echo (over a tenth of the echo estimate, or
    /// five times the least the filter has lately left of it, and hardly
    /// following it) with the talker, in 4% or more of their blocks that
    /// hold less than a quarter of the echo (42 of 1,000; 32 against a
    /// tenth alone); never on the echo alone (at three times that least, 10
    /// blocks of 400); and where the moved path leaves the filter wrong,
    /// less often than it holds a quarter of the echo (2 and 13 of 400).
    @Test func onlyATalkerStandsApartFromTheEcho() throws {
        let seconds = 20, moved = 6 * 16_000, start = 10 * 16_000
        let far = try VoiceSignals.game(frames: seconds * 16_000)
        let played = UplinkChainTests.loudspeaker(far)
        let before = VoiceSignals.echo(of: played, rt60: 0.6), after = VoiceSignals.echo(of: played, rt60: 0.6, seed: 29)
        let echo = (0..<far.count).map { $0 < moved ? before[$0] : after[$0] }
        let near = try VoiceSignals.talker(from: start, decibels: 8, under: echo)
        let background = UplinkChainTests.background(frames: far.count, seed: 9)
        let mic = (0..<far.count).map { echo[$0] + near[$0] + background[$0] }
        var apart: [Bool] = [], audible: [Bool] = []
        _ = VoiceSignals.cancel(mic: mic, far: far, talkingFrom: start) { canceller in
            apart.append(canceller.nearEndApartFromEcho)
            audible.append(canceller.nearEndAudible)
        }
        let echoAlone = 200..<(moved / 160), wrong = (moved / 160)..<(start / 160)
        let talking = (start / 160)..<apart.count
        let apartOnly = talking.filter { apart[$0] && !audible[$0] }.count
        print("apart from the echo: \(echoAlone.filter { apart[$0] }.count) of \(echoAlone.count) blocks of echo alone, "
              + "\(wrong.filter { apart[$0] }.count) of \(wrong.count) after the path moved (audible in \(wrong.filter { audible[$0] }.count)), "
              + "\(talking.filter { apart[$0] }.count) of \(talking.count) with the talker, \(apartOnly) of them under a quarter of the echo")
        #expect(echoAlone.allSatisfy { !apart[$0] })
        #expect(wrong.filter { apart[$0] }.count * 4 <= wrong.filter { audible[$0] }.count)
        #expect(apartOnly * 100 >= talking.count * 4)
    }

    /// As the corpus's `dt_enr5_fan`: a game's music and fire through a
    /// small loudspeaker in a room of RT60 0.6 s, and from 8 s a near talker
    /// 5 dB under its echo, whom the caller says it hears, over a fan 15 dB
    /// under them. In an output that neither follows the echo estimate nor
    /// takes its shape, the suppressor takes away a quarter of the residual
    /// it estimates (half kept the same), not four times it: the talker
    /// comes out at 7.0 dB SNR against all else, at the best gain (the
    /// corpus scorer's measure). Four times over throughout kept 4.7 dB; waiting, instead of the
    /// coherence, for the filter to go a second without adding power (the
    /// loudspeaker's distortion sets it off now and then) kept 6.3 dB.
    @Test func aTalkerOverTheEchoKeepsTheirVoice() throws {
        let seconds = 18, start = 8 * 16_000
        let far = try VoiceSignals.game(frames: seconds * 16_000)
        let echo = VoiceSignals.echo(of: UplinkChainTests.loudspeaker(far), rt60: 0.6)
        let near = try VoiceSignals.talker(from: start, decibels: 5, under: echo)
        // A fan's noise, 15 dB under the talker.
        let noise = Signals.whiteNoise(frames: far.count, rms: Float(Measure.rms(Array(near[start...])) / 5.6), seed: 3)
        let output = VoiceSignals.cancel(mic: (0..<far.count).map { echo[$0] + near[$0] + noise[$0] }, far: far, talkingFrom: start)
        let (snr, gain) = Self.nearSNR(heard: Array(output[start...]), talker: Array(near[start...]))
        print(String(format: "talker over a game's echo after suppression: %.1f dB SNR, gain %.2f", snr, gain))
        #expect(snr > 6.65, "near talker at \(snr) dB SNR, gain \(gain)")
    }

    /// Playback 80 ppm fast against capture, as between two sound cards:
    /// the echo path comes a sample earlier every 0.8 s, faster than the
    /// filter's adaptation follows by itself.
    @Test func clockDriftIsMeasuredAndFollowed() throws {
        let far = try VoiceSignals.voices(["announcer", "vendor", "barkeep", "guest"], frames: 24 * 16_000)
        // Read at 12,501 Hz and played at 12,500 Hz: 80 ppm fast.
        let played = try SampleRateConverter.convert(AudioBuffer(mono: far), from: 12_501, to: 12_500).samples
        let echo = VoiceSignals.echo(of: played)
        let noise = Signals.whiteNoise(frames: echo.count, rms: 0.00005, seed: 5)
        let mic = zip(echo, noise).map { $0 + $1 }
        let canceller = EchoCanceller()
        let linear = Self.linearOutput(of: canceller, mic: mic, far: far)
        // 80 ppm of a 160-sample block.
        let expected: Float = 80e-6 * 160
        #expect(abs(canceller.driftPerBlock - expected) < 0.2 * expected, "drift \(canceller.driftPerBlock) samples per block")
        // The filter alone, over the last 8 s: without following the drift it stays near 11 dB.
        let erle = Self.erle(mic: mic, output: linear, from: 16 * 16_000, to: linear.count)
        #expect(erle >= 18, "linear ERLE \(erle) dB")
    }

    @Test func nonFiniteInputLeavesTheOutputFiniteAndTheCancellerRecovers() throws {
        let far = try VoiceSignals.speech("announcer")
        var mic = VoiceSignals.echo(of: far)
        var poisoned = far
        for index in 40_000..<40_160 { poisoned[index] = .nan; mic[index] = .infinity }
        let output = VoiceSignals.cancel(mic: mic, far: poisoned)
        #expect(output.allSatisfy { $0.isFinite })
        let clean = mic.map { $0.isFinite ? $0 : 0 }
        let after = Self.erle(mic: clean, output: output, from: 40_160 + 16_000, to: output.count)
        #expect(after >= 35, "ERLE \(after) dB from 1 s after the bad block")
    }
}
