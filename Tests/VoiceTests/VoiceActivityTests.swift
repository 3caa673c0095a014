import AudioMeasurements
import Testing
import Voice

#if canImport(Glibc)
import Glibc
#endif

@Suite struct VoiceActivityTests {
    /// Three spoken lines with pauses after a second of silence and `lead`
    /// frames more, and the truth per 10 ms frame as the shared corpus
    /// labels it: clean speech within 40 dB of its loudest frame.
    static func lines(after lead: Int = 0) throws -> (speech: [Float], truth: [Bool], starts: [Int]) {
        var speech = [Float](repeating: 0, count: 16_000 + lead * 160), starts: [Int] = []
        for name in ["barkeep", "announcer", "vendor"] {
            let line = try VoiceSignals.speech(name)
            starts.append((speech.count + line.firstIndex { abs($0) > 0.005 }!) / 160)
            speech += line + [Float](repeating: 0, count: 20_000)
        }
        speech = Array(speech.prefix(speech.count / 160 * 160))
        let energies = stride(from: 0, to: speech.count, by: 160).map { frame in
            speech[frame..<(frame + 160)].reduce(0.0) { $0 + Double($1 * $1) } / 160
        }
        let loudest = energies.max()!
        return (speech, energies.map { 10 * log10($0 + 1e-12) > 10 * log10(loudest) - 40 }, starts)
    }

    /// Final decisions per frame, onsets claiming the frames before them.
    /// With `residualEcho`, a canceller tells the detector each frame that it
    /// left that much of the echo in every bin (its power spectrum, as
    /// `EchoCanceller.withLinearOutput` gives it; 0 for a canceller that hears
    /// no far end); without, no canceller speaks. `talkerSpokeLately` is
    /// what a chain would tell the detector within 2 s of the talker's words.
    static func decisions(_ signal: [Float], residualEcho: Float? = nil, talkerSpokeLately: Bool = false) -> [Bool] {
        let detector = VoiceActivityDetector()
        var decisions: [Bool] = []
        let echo = [Float](repeating: residualEcho ?? 0, count: 161)
        signal.withUnsafeBufferPointer { samples in
            for frame in 0..<(samples.count / 160) {
                let piece = UnsafeBufferPointer(rebasing: samples[(frame * 160)..<((frame + 1) * 160)])
                let decision = echo.withUnsafeBufferPointer {
                    residualEcho == nil ? detector.process(piece) : detector.process(piece, residualEcho: $0, talkerSpokeLately: talkerSpokeLately)
                }
                for back in 0..<decision.backfilled { decisions[decisions.count - 1 - back] = true }
                decisions.append(decision.speech)
            }
        }
        return decisions
    }

    /// Each frame within 300 ms of one `truth` calls speech: an onset elsewhere is spurious, as the corpus scorer counts.
    static func nearSpeech(_ truth: [Bool]) -> [Bool] {
        var near = [Bool](repeating: false, count: truth.count)
        for (frame, talking) in truth.enumerated() where talking {
            for index in max(0, frame - 30)..<min(truth.count, frame + 31) { near[index] = true }
        }
        return near
    }

    /// The onsets from `first` on that are more than 300 ms from any frame `truth` calls speech.
    static func spuriousOnsets(_ decisions: [Bool], truth: [Bool], from first: Int = 0) -> [Int] {
        let near = nearSpeech(truth)
        return onsets(decisions).filter { !near[$0] && $0 >= first }
    }

    static func onsets(_ decisions: [Bool]) -> [Int] {
        decisions.indices.filter { decisions[$0] && ($0 == 0 || !decisions[$0 - 1]) }
    }

    /// The RMS of `speech` over the frames `truth` calls speech.
    static func talkingLevel(_ speech: [Float], truth: [Bool]) -> Double {
        Measure.rms(zip(speech, truth.flatMap { [Bool](repeating: $0, count: 160) }).filter(\.1).map(\.0))
    }

    /// Frame precision, recall and F1 of `decisions` against `truth`.
    static func score(_ decisions: [Bool], truth: [Bool]) -> (precision: Double, recall: Double, f1: Double) {
        let hits = zip(decisions, truth).filter { $0 && $1 }.count
        let precision = Double(hits) / Double(max(1, decisions.filter { $0 }.count))
        let recall = Double(hits) / Double(truth.filter { $0 }.count)
        return (precision, recall, 2 * precision * recall / (precision + recall))
    }

    /// As the corpus scorer counts: the frames from each line's start to the
    /// first onset within 300 ms of it, for the lines so caught.
    static func onsetLatencies(_ decisions: [Bool], starts: [Int]) -> [Int] {
        let onsets = Self.onsets(decisions)
        return starts.compactMap { start in onsets.first { abs($0 - start) <= 30 }.map { $0 - start } }
    }

    @Test(arguments: [20.0, 10, 5])
    func speechInWhiteNoiseIsFoundFrameByFrame(snr: Double) throws {
        let (speech, truth, starts) = try Self.lines()
        let noise = Signals.whiteNoise(frames: speech.count, rms: Float(Self.talkingLevel(speech, truth: truth) * pow(10, -snr / 20)), seed: 8)
        let decisions = Self.decisions(zip(speech, noise).map { $0 + $1 })
        let (precision, recall, f1) = Self.score(decisions, truth: truth)
        #expect(f1 >= 0.85, "F1 \(f1) at \(snr) dB (precision \(precision), recall \(recall))")
        // Every line caught, with a median latency of 50 ms or less.
        let latencies = Self.onsetLatencies(decisions, starts: starts)
        #expect(latencies.count == starts.count, "lines found: \(latencies.count) of \(starts.count)")
        #expect(latencies.sorted()[latencies.count / 2] <= 5, "onset latencies in frames: \(latencies)")
    }

    /// Words that open on a short unvoiced syllable, as "to" or "ca" do: a
    /// 25 ms hiss, a 50 ms stop, then a 300 ms vowel (a 150 Hz pulse train),
    /// one a second from 3 s on, in white noise 10 dB under the vowel. The
    /// hiss is three frames as strong as speech; with four needed, speech
    /// waited for the voiced vowel in three words of six (onsets 10, 10, 70,
    /// 70, 10 and 70 ms late; then 0). Now that two such frames start
    /// speech, each onset claims the frame before the hiss: 10 ms early.
    @Test func aWordThatOpensOnAHissStartsOnIt() {
        let (words, starts) = Self.wordsOpeningOnAHiss(hissRMS: 0.1)
        let noise = Signals.whiteNoise(frames: words.count, rms: 0.01, seed: 8)
        let decisions = Self.decisions(zip(words, noise).map { $0 + $1 })
        let latencies = Self.onsetLatencies(decisions, starts: starts)
        print("words opening on a hiss: onset latencies \(latencies.map { $0 * 10 }) ms")
        #expect(latencies.count == starts.count, "words found: \(latencies.count) of \(starts.count)")
        #expect(latencies.allSatisfy { $0 <= 2 }, "onset latencies in frames: \(latencies)")
    }

    /// The same words under what a canceller leaves of a game's echo and
    /// says it left: a third of the room's noise, so that no frame of the
    /// room counts toward the background, which stays young. The hiss,
    /// 40 ms about 6 dB over the two, is three frames as strong as speech
    /// in which that echo is more than 5% of the frame: such frames now
    /// start speech, where a young background took four and every word
    /// waited for its vowel (onsets 90 ms late; now 10 ms in five words of
    /// six, the third's hiss holding one such frame fewer). The corpus's
    /// talkers under a game's echo waited a frame longer than in noise.
    @Test func aWordThatOpensOnAHissStartsOnItUnderAGamesEcho() {
        let (latencies, words) = Self.wordsOpeningOnAHissUnderAGamesEcho(talkerSpokeLately: false)
        print("words opening on a hiss under a game's echo: onset latencies \(latencies.map { $0 * 10 }) ms")
        #expect(latencies.count == words, "words found: \(latencies.count) of \(words)")
        #expect(latencies.filter { $0 <= 2 }.count >= 4, "onset latencies in frames: \(latencies)")
    }

    /// The same words said within 2 s of the talker's last, as a chain tells
    /// the detector: two of the hiss's frames start speech, as they do where
    /// no echo hides the room, and four words of six start on time (10 and
    /// 90 ms late the other two). With three, as a far end's own bursts need,
    /// none did: five came 10 ms late and one 90 (on the corpus's game echo,
    /// seeds 1 to 7, median onsets 10-40 ms at 0 dB; now 10-30).
    @Test func aWordThatOpensOnAHissSoonAfterTheTalkersLastStartsOnItUnderAGamesEcho() {
        let (latencies, words) = Self.wordsOpeningOnAHissUnderAGamesEcho(talkerSpokeLately: true)
        print("words opening on a hiss under a game's echo, soon after the talker's last: onset latencies \(latencies.map { $0 * 10 }) ms")
        #expect(latencies.count == words, "words found: \(latencies.count) of \(words)")
        #expect(latencies.filter { $0 <= 0 }.count >= 4, "onset latencies in frames: \(latencies)")
    }

    /// Onset latencies in frames of `wordsOpeningOnAHiss` in white noise
    /// under what a canceller leaves of a game's echo and says it left, for
    /// the words caught, and how many words there were.
    static func wordsOpeningOnAHissUnderAGamesEcho(talkerSpokeLately: Bool) -> (latencies: [Int], words: Int) {
        let (words, starts) = Self.wordsOpeningOnAHiss(hissRMS: 0.021, hissLength: 640)
        let noise = Signals.whiteNoise(frames: words.count, rms: 0.01, seed: 8)
        // The game starts a second in, once the detector has learnt the room's noise.
        let echo = [Float](repeating: 0, count: 16_000) + Signals.whiteNoise(frames: words.count - 16_000, rms: 0.0058, seed: 9)
        // A Hann window's 320 samples hold 120 times white noise's power in each bin.
        let decisions = Self.decisions(words.indices.map { words[$0] + noise[$0] + echo[$0] }, residualEcho: 120 * 0.0058 * 0.0058,
                                       talkerSpokeLately: talkerSpokeLately)
        return (Self.onsetLatencies(decisions, starts: starts), starts.count)
    }

    /// Words that open on a weak syllable, 100 ms shaped like the pink noise
    /// they are spoken in and 1.6 dB over it, then a 300 ms vowel (a 150 Hz
    /// pulse train), one a second from 3 s on. The syllable's frames stand
    /// about 4 dB over the noise's typical frame but seldom as strong as
    /// speech, as a word's first syllable at 0 dB SNR is: three strong
    /// frames in a row came late or not at all, and half the words waited
    /// for their vowel (onsets 100, 10, 10, 110, 110 and 10 ms late; now
    /// within 20 ms). The corpus's pink noise at 0 dB, seeds 1 to 7, had
    /// median onsets of 25 to 45 ms in four seeds.
    @Test func aWordThatOpensOnAWeakSyllableInPinkNoiseStartsOnIt() {
        let noise = Self.pinkNoise(frames: 16_000 * 9, rms: 0.03, seed: 8)
        var words = [Float](repeating: 0, count: noise.count)
        var starts: [Int] = []
        for word in 0..<6 {
            // Words start at any point of a frame.
            let start = 48_000 + word * 16_037
            starts.append(start / 160)
            let syllable = Self.pinkNoise(frames: 1_600, rms: 0.036, seed: UInt64(word + 50))
            for index in syllable.indices { words[start + index] = syllable[index] }
            for index in stride(from: start + 1_600, to: start + 6_400, by: 16_000 / 150) { words[index] = 0.9 }
        }
        let decisions = Self.decisions(zip(words, noise).map { $0 + $1 })
        let latencies = Self.onsetLatencies(decisions, starts: starts)
        print("words opening on a weak syllable in pink noise: onset latencies \(latencies.map { $0 * 10 }) ms")
        #expect(latencies.count == starts.count, "words found: \(latencies.count) of \(starts.count)")
        #expect(latencies.allSatisfy { $0 <= 2 }, "onset latencies in frames: \(latencies)")
        #expect(Self.onsets(decisions).count == starts.count, "onsets at frames \(Self.onsets(decisions)), words at \(starts)")
    }

    /// Pink noise, `frames` long at `rms`: white noise through three leaky integrators whose sum falls 3 dB an octave.
    static func pinkNoise(frames: Int, rms: Float, seed: UInt64) -> [Float] {
        let white = Signals.whiteNoise(frames: frames, rms: 1, seed: seed)
        var (slow, middle, fast) = (Float(0), Float(0), Float(0))
        let pink = white.map { sample in
            slow = 0.99765 * slow + 0.099046 * sample
            middle = 0.963 * middle + 0.2965164 * sample
            fast = 0.57 * fast + 1.0526913 * sample
            return slow + middle + fast + 0.1848 * sample
        }
        let scale = rms / Float(Measure.rms(pink))
        return pink.map { $0 * scale }
    }

    /// Six words that open on a hiss of `hissLength` samples, then a stop and
    /// a vowel, as `aWordThatOpensOnAHissStartsOnIt` says, from 3 s on, and
    /// their starts in frames.
    static func wordsOpeningOnAHiss(hissRMS: Float, hissLength: Int = 400) -> (signal: [Float], starts: [Int]) {
        var signal = [Float](repeating: 0, count: 16_000 * 9)
        var starts: [Int] = []
        for word in 0..<6 {
            let start = 48_000 + word * 16_000
            starts.append(start / 160)
            let hiss = Signals.whiteNoise(frames: hissLength, rms: hissRMS, seed: UInt64(word + 40))
            for index in 0..<hissLength { signal[start + index] = hiss[index] }
            let vowel = start + hissLength + 800
            for index in stride(from: vowel, to: vowel + 4_800, by: 16_000 / 150) { signal[index] = 0.9 }
        }
        return (signal, starts)
    }

    /// Typing as the corpus makes it, at 16 kHz with unit RMS: runs of 4-25
    /// keys 100-250 ms apart, 0.5-3 s between runs. Each key clicks twice,
    /// on the way down and, 60-120 ms later, half as loud on the way up; a
    /// click is a hiss that dies away in 3 ms over a 200-400 Hz thump of
    /// half its peak that dies away in 6 ms.
    static func typing(frames: Int, seed: UInt64) -> [Float] {
        var typing = [Float](repeating: 0, count: frames)
        var state = seed
        func uniform(_ range: ClosedRange<Double>) -> Double {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return range.lowerBound + Double(state >> 11) / Double(1 << 53) * (range.upperBound - range.lowerBound)
        }
        let rate = 16_000.0, length = 320
        var time = Int(uniform(0.2...1.0) * rate)
        while time < frames {
            for _ in 0..<Int(uniform(4...25)) {
                for (delay, loudness) in [(0, 1.0), (Int(uniform(0.06...0.12) * rate), 0.5)] where time + delay + length < frames {
                    // Differenced white noise: a hiss of mostly high frequencies.
                    let noise = Signals.whiteNoise(frames: length + 1, rms: 1, seed: state)
                    let hiss = (0..<length).map { Double(noise[$0 + 1] - noise[$0]) * exp(-Double($0) / rate / 0.003) }
                    let peak = hiss.map(abs).max()!, pitch = uniform(200...400), scale = loudness * uniform(0.5...1)
                    for index in 0..<length {
                        let seconds = Double(index) / rate
                        let thump = 0.5 * sin(2 * Double.pi * pitch * seconds) * exp(-seconds / 0.006)
                        typing[time + delay + index] += Float(scale * (hiss[index] / peak + thump))
                    }
                }
                time += Int(uniform(0.1...0.25) * rate)
            }
            time += Int(uniform(0.5...3.0) * rate)
        }
        let rms = Float(Measure.rms(typing))
        return typing.map { $0 / rms }
    }

    @Test func keyboardClicksAloneAreNotSpeech() {
        var clicks = [Float](repeating: 0, count: 16_000 * 10)
        var state: UInt64 = 17
        for _ in 0..<(clicks.count / 2_500) {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let at = Int(state >> 33) % (clicks.count - 200)
            let burst = Signals.whiteNoise(frames: 200, rms: 0.2, seed: state)
            for index in 0..<200 { clicks[at + index] += burst[index] * Float(exp(-Double(index) / 30)) }
        }
        let onsets = Self.onsets(Self.decisions(clicks))
        #expect(onsets.count <= 2, "\(onsets.count) onsets on clicks alone")
    }

    /// The corpus's keyboard case, short: someone types through the pauses
    /// and the lines, 10 dB under the speech. Each line is still found,
    /// and the typing between them starts no burst of its own; also through
    /// a microphone with a DC offset of 1% of full scale. Counted in every
    /// piece of the crest, the offset hid the keys' clicks, and the typing
    /// started speech 13 times on its own; measured around the 20 ms's mean,
    /// none.
    @Test(arguments: [Float(0), 0.01])
    func typingBetweenTheLinesStartsNoSpeech(offset: Float) throws {
        let (speech, truth, starts) = try Self.lines()
        let level = Float(Self.talkingLevel(speech, truth: truth) * pow(10, -10.0 / 20))
        let typing = Self.typing(frames: speech.count, seed: 23)
        let decisions = Self.decisions(speech.indices.map { speech[$0] + level * typing[$0] + offset })
        // As the corpus scorer counts: onsets more than 300 ms from any line.
        let spurious = Self.spuriousOnsets(decisions, truth: truth)
        #expect(spurious.count <= 2, "onsets in the typing alone, at frames \(spurious)")
        let found = Self.onsetLatencies(decisions, starts: starts).count
        #expect(found == starts.count, "lines found: \(found) of \(starts.count)")
        let (precision, recall, f1) = Self.score(decisions, truth: truth)
        #expect(f1 >= 0.85, "F1 \(f1) (precision \(precision), recall \(recall))")
    }

    /// A fan switched on: white noise 10 dB under the lines sets in at 0.5 s,
    /// out of digital silence or out of a room 30 dB quieter, and the lines
    /// come 5.5 s later. The step is heard as speech at first (it is a
    /// change of sound), but only until the floor finds it lasting, 3 s on
    /// (speech ends 3.25 s after it); the lines are then all found. While
    /// the floor only crept up, every frame from 4 s after the step to the
    /// first line was still speech, and 0 and 1 of the 3 lines were found.
    @Test(arguments: ["digital silence", "a quiet room"])
    func aNoiseThatSetsInIsNotHeldAsSpeech(from before: String) throws {
        let (speech, truth, starts) = try Self.lines(after: 450)
        let level = Self.talkingLevel(speech, truth: truth)
        let fan = Signals.whiteNoise(frames: speech.count, rms: Float(level * pow(10, -10.0 / 20)), seed: 8)
        let room = Signals.whiteNoise(frames: speech.count, rms: Float(level * pow(10, -40.0 / 20)), seed: 9)
        let step = 50
        let signal = speech.indices.map { index in
            speech[index] + (index >= step * 160 ? fan[index] : before == "a quiet room" ? room[index] : 0)
        }
        let decisions = Self.decisions(signal)
        // From 4 s after the step (the 3 s and a hangover) to 300 ms before the first line.
        let settled = (step + 400)..<(starts[0] - 30)
        let held = settled.filter { decisions[$0] }.count
        let latencies = Self.onsetLatencies(decisions, starts: starts)
        let lines = (starts[0] - 30)..<decisions.count
        let (precision, recall, f1) = Self.score(Array(decisions[lines]), truth: Array(truth[lines]))
        print("noise setting in from \(before): \(held) of \(settled.count) frames held as speech from 4 s after it; lines found \(latencies.count) of \(starts.count), F1 over them \(f1)")
        #expect(held == 0, "frames held as speech from 4 s after the noise set in: \(held) of \(settled.count)")
        #expect(latencies.count == starts.count, "lines found: \(latencies.count) of \(starts.count)")
        #expect(f1 >= 0.85, "F1 \(f1) over the lines (precision \(precision), recall \(recall))")
    }

    /// The lines from 0.3 s on, behind a canceller that hears no far end, so
    /// that the detector weighs the room's background: in white noise 5 dB
    /// under them, and over typing 10 dB under them. Until the background
    /// holds 2 s of frames it is judged by how far its loud frames rise;
    /// typing's clicks rise far, and the talker's first words come while it
    /// is young. While clicks counted toward it, typing was taken for a room
    /// of voices and its bar held the talker back: F1 0.722, where it was
    /// 0.878 with clicks left out, as before the young background's rule
    /// (0.912 since three steady frames can start speech).
    @Test(arguments: ["white noise", "typing"])
    func aTalkerFromTheFirstHalfSecondIsFoundInNoiseOrTyping(noise kind: String) throws {
        let (full, fullTruth, fullStarts) = try Self.lines()
        let cut = 70
        let speech = Array(full.dropFirst(cut * 160)), truth = Array(fullTruth.dropFirst(cut))
        let starts = fullStarts.map { $0 - cut }
        let level = Self.talkingLevel(speech, truth: truth)
        let noise = kind == "typing"
            ? Self.typing(frames: speech.count, seed: 23).map { $0 * Float(level * pow(10, -10.0 / 20)) }
            : Signals.whiteNoise(frames: speech.count, rms: Float(level * pow(10, -5.0 / 20)), seed: 8)
        let decisions = Self.decisions(zip(speech, noise).map { $0 + $1 }, residualEcho: 0)
        let spurious = Self.spuriousOnsets(decisions, truth: truth)
        let latencies = Self.onsetLatencies(decisions, starts: starts)
        let (precision, recall, f1) = Self.score(decisions, truth: truth)
        print("lines from 0.3 s in \(kind): lines found \(latencies.count) of \(starts.count), latencies \(latencies.map { $0 * 10 }) ms, \(spurious.count) spurious onsets, F1 \(f1) (precision \(precision), recall \(recall))")
        #expect(latencies.count == starts.count, "lines found: \(latencies.count) of \(starts.count)")
        #expect(spurious.count <= 2, "onsets away from the lines, at frames \(spurious)")
        #expect(f1 >= 0.85, "F1 \(f1) (precision \(precision), recall \(recall))")
    }

    /// A room of other talkers, as the corpus makes babble: `voices` of the
    /// demo rooms' lines, each looped from its own point and heard across the
    /// room (its direct sound and 24 reflections over 150 ms, dying away as
    /// an RT60 of 0.5 s), summed, at unit RMS. Past the seven lines, they
    /// come round again, from other points in them.
    static func babble(frames: Int, voices: Int = 7) throws -> [Float] {
        var room = [Float](repeating: 0, count: frames)
        let names = ["guest", "player_mic", "prompt_welcome", "prompt_welcome_short", "barkeep", "announcer", "vendor"]
        var state: UInt64 = 31
        for index in 0..<voices {
            let line = try VoiceSignals.speech(names[index % names.count])
            let start = line.count * (index + 1) / (voices + 1)
            var taps: [(delay: Int, gain: Float)] = [(0, 1)]
            for _ in 0..<24 {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                let seconds = 0.005 + Double(state >> 11) / Double(1 << 53) * 0.145
                taps.append((Int(seconds * 16_000), Float((state & 1 == 0 ? 0.5 : -0.5) * exp(-6.9 * seconds / 0.5))))
            }
            for frame in 0..<frames {
                for (delay, gain) in taps { room[frame] += gain * line[(start + frame + line.count - delay) % line.count] }
            }
        }
        let rms = Float(Measure.rms(room))
        return room.map { $0 / rms }
    }

    /// How the detector fares on the lines over a room of other talkers.
    struct RoomOfVoices {
        /// The share of the room alone (frames more than 300 ms from any line) called speech.
        var heldThroughRoom: Double
        /// Onsets in the room alone, as frames, counted from the same frame as that share.
        var spurious: [Int]
        var found: Int, lines: Int
        /// How late, in frames, each word found starts, of the `words` that start after 150 ms or more without speech.
        var wordLatencies: [Int], words: Int
        var precision: Double, recall: Double, f1: Double

        var summary: String {
            String(format: "speech in %.0f%% of the room alone, %d spurious onsets, lines found %d of %d, F1 %.3f (precision %.3f, recall %.3f)",
                   heldThroughRoom * 100, spurious.count, found, lines, f1, precision, recall)
        }
    }

    /// The lines `decibels` over a room of `voices` other talkers, who talk
    /// `lead` frames before them, behind a canceller that hears no far end,
    /// or through the whole uplink chain with nothing played; the room alone
    /// counts from frame `aloneFrom`.
    static func overARoom(decibels: Double, voices: Int, lead: Int, aloneFrom: Int, throughTheChain: Bool = false) throws -> RoomOfVoices {
        let (speech, truth, starts) = try Self.lines(after: lead)
        let level = Float(Self.talkingLevel(speech, truth: truth) * pow(10, -decibels / 20))
        let room = try Self.babble(frames: speech.count, voices: voices)
        let mic = speech.indices.map { speech[$0] + level * room[$0] }
        let decisions = throughTheChain
            ? try UplinkChainTests.run(mic: mic, far: [Float](repeating: 0, count: mic.count), muted: false).speech
            : Self.decisions(mic, residualEcho: 0)
        let nearSpeech = Self.nearSpeech(truth)
        let alone = decisions.indices.filter { !nearSpeech[$0] && $0 >= aloneFrom }
        var words: [Int] = [], quiet = 0
        for (frame, talking) in truth.enumerated() {
            if talking && quiet >= 15 { words.append(frame) }
            quiet = talking ? 0 : quiet + 1
        }
        let (precision, recall, f1) = Self.score(decisions, truth: truth)
        return RoomOfVoices(heldThroughRoom: Double(alone.filter { decisions[$0] }.count) / Double(alone.count),
                            spurious: Self.onsets(decisions).filter { !nearSpeech[$0] && $0 >= aloneFrom },
                            found: Self.onsetLatencies(decisions, starts: starts).count, lines: starts.count,
                            wordLatencies: Self.onsetLatencies(decisions, starts: words), words: words.count,
                            precision: precision, recall: recall, f1: f1)
    }

    /// The corpus's babble case, short: the lines 20 dB over a room of seven other
    /// talkers who were already talking 4 s before, behind a canceller that
    /// hears no far end. Their words rise out of their lulls as a talker's
    /// would, but the detector finds the lines, not them: it does not hold
    /// speech through the room.
    @Test func aRoomOfOtherTalkersIsNotTheTalker() throws {
        // The room alone counts after the 200 ms the detector learns in.
        let result = try Self.overARoom(decibels: 20, voices: 7, lead: 400, aloneFrom: 20)
        print("babble 20 dB under the lines: \(result.summary)")
        #expect(result.heldThroughRoom <= 0.2, "speech held through \(Int(result.heldThroughRoom * 100))% of the room alone")
        #expect(result.spurious.count <= 2, "onsets in the room alone, at frames \(result.spurious)")
        #expect(result.found == result.lines, "lines found: \(result.found) of \(result.lines)")
        // Before the detector weighed the room's rise and fall: speech in 99% of it, no line found, F1 0.59;
        // with the bar at four of the room's spreads above its lulls, 0.790.
        #expect(result.f1 >= 0.85, "F1 \(result.f1) (precision \(result.precision), recall \(result.recall))")
    }

    /// The lines 10 and 5 dB over the same room of seven: their words stand out
    /// of the room's own rise and fall, if less than at 20 dB. When the
    /// frame had to stand four of the room's spreads above its lulls (14 to
    /// 20 dB) to start speech, the detector found 3 and 1 of the 3 lines and
    /// 31% and 7% of their frames (F1 0.463 and 0.128); at 12 dB above the
    /// room's typical level, or 2.5 spreads where that is more: 3 and 3,
    /// F1 0.728 and 0.491. A syllable's 100 ms that stands 10.5 dB above it
    /// starts speech too, as the room's words seldom do for that long: F1
    /// 0.756 and 0.534, with the room alone held and started no more. And
    /// once speech has started, a syllable 4 dB above that level (1.25
    /// spreads) holds it, where the talker's quieter syllables fell under
    /// a frame's bar: 0.767 and 0.549. Judged a room of voices from its
    /// first half-second, by how far its loud frames rise, the room counts
    /// toward the background over its first 2 s rather than starting speech:
    /// 0.774 and 0.673, and 3% of the room alone held rather than 5%.
    @Test(arguments: zip([10.0, 5.0], [0.74, 0.65]))
    func aTalkerLittleOverARoomIsFoundInIt(decibels: Double, leastF1: Double) throws {
        let result = try Self.overARoom(decibels: decibels, voices: 7, lead: 400, aloneFrom: 20)
        print("babble \(Int(decibels)) dB under the lines: \(result.summary)")
        #expect(result.heldThroughRoom <= 0.1, "speech held through \(Int(result.heldThroughRoom * 100))% of the room alone")
        #expect(result.spurious.count <= 2, "onsets in the room alone, at frames \(result.spurious)")
        #expect(result.found == result.lines, "lines found: \(result.found) of \(result.lines)")
        #expect(result.f1 >= leastF1, "F1 \(result.f1) (precision \(result.precision), recall \(result.recall))")
    }

    /// The lines 20 and 10 dB over a crowded room of ten other talkers,
    /// through the uplink chain as the engine runs it. The room's frames that
    /// are not speech spread 2.5 to 5.5 dB, 4 at the median. When each frame
    /// judged afresh whether that was a room of voices, its dips to 2.5 dB
    /// let the room's words start speech, and speech kept them out of the
    /// background: once the room was heard as the room, it held speech
    /// through 26% and 5% of it, started it there again at 4.4 s, found 2 of
    /// the 3 lines, and F1 was 0.666 and 0.575. A room counts as voices now
    /// until its spread falls to 2 dB: 0% held, no onset, 3 lines of 3, F1
    /// 0.753 and 0.592 (0.762 and 0.627 with the syllables' rules). Judged
    /// a room from its first half-second, by how far its loud frames rise,
    /// rather than taken for the talker until 3 s of nothing but speech have
    /// passed: 0.889 and 0.748.
    @Test(arguments: zip([20.0, 10.0], [0.85, 0.70]))
    func aCrowdedRoomIsNotTakenForTheTalker(decibels: Double, leastF1: Double) throws {
        // The room talked from before the detector's first frame; as in the room talking from
        // the start, it is heard as the room only after 3 s of nothing but speech.
        let result = try Self.overARoom(decibels: decibels, voices: 10, lead: 400, aloneFrom: 400, throughTheChain: true)
        print("ten talkers \(Int(decibels)) dB under the lines, through the chain: \(result.summary)")
        #expect(result.heldThroughRoom <= 0.02, "speech held through \(Int(result.heldThroughRoom * 100))% of the room alone")
        #expect(result.spurious.isEmpty, "onsets in the room alone, at frames \(result.spurious)")
        #expect(result.found == result.lines, "lines found: \(result.found) of \(result.lines)")
        #expect(result.f1 >= leastF1, "F1 \(result.f1) (precision \(result.precision), recall \(result.recall))")
    }

    /// The lines 8 dB over the crowded room of ten, straight to the
    /// detector: two of the words that start after a pause of 150 ms or
    /// more stay under the room's full bar too long to be found. Once the
    /// talker's own level is learnt, frames near it start speech at a bar
    /// 4 dB lower, and every such word is found. With the full bar alone,
    /// 6 of the 8, and F1 0.564; then 8 and 0.61, with the one onset in the
    /// room alone that the full bar gave too. Syllables that hold speech
    /// (see above) keep more of each word: F1 0.633. The room talked for 4 s
    /// before the lines, and held speech through 34% of itself, until it was
    /// judged a room from its first half-second: now none, no onset, F1 0.753.
    @Test func aTalkerLouderThanTheRoomIsFoundWordByWord() throws {
        let result = try Self.overARoom(decibels: 8, voices: 10, lead: 400, aloneFrom: 20)
        let found = result.wordLatencies
        print("lines 8 dB over ten talkers: words found \(found.count) of \(result.words), latencies \(found.map { $0 * 10 }) ms, \(result.summary)")
        #expect(result.words == 8)
        #expect(found.count == result.words, "words found: \(found.count) of \(result.words)")
        #expect(result.heldThroughRoom <= 0.05, "speech held through \(Int(result.heldThroughRoom * 100))% of the room alone")
        #expect(result.spurious.isEmpty, "onsets in the room alone, at frames \(result.spurious)")
        #expect(result.f1 >= 0.72, "F1 \(result.f1) (precision \(result.precision), recall \(result.recall))")
    }

    /// The lines 10 dB over a room of three other talkers, whose own words
    /// rise and fall further than seven's: the detector does not take them
    /// for the talker, though it finds few of the lines: 1 of 3 (F1 0.131;
    /// none and 0.018 before a syllable's 100 ms could start speech).
    /// With the bar at 12 dB above the room's typical level alone, it held
    /// speech through 56% of the room and started it 12 times.
    @Test func aRoomOfThreeTalkersStartsNoSpeech() throws {
        let result = try Self.overARoom(decibels: 10, voices: 3, lead: 400, aloneFrom: 20)
        print("three talkers 10 dB under the lines: \(result.summary)")
        #expect(result.heldThroughRoom <= 0.1, "speech held through \(Int(result.heldThroughRoom * 100))% of the room alone")
        #expect(result.spurious.count <= 2, "onsets in the room alone, at frames \(result.spurious)")
    }

    /// The lines 10 dB over a room of five other talkers, who talk from the
    /// detector's first frame: the 200 ms it learns its floor in are the
    /// room's, whose words then stand out of that floor all along. Before
    /// the detector counted 3 s of nothing but speech toward the
    /// background, it held speech through all of the room and found no
    /// line (F1 0.66, as "speech" throughout scores). Since a young
    /// background heard as voices takes every frame, the lines' own first
    /// words count toward it as well: every line is found (2 of 3 before)
    /// but fewer of their frames (F1 0.766 -> 0.699). A first form of the
    /// rule that took only what is not speech scored 0.777 here, but the
    /// room of seven above then held speech through 36% of itself.
    @Test func aRoomTalkingFromTheStartDoesNotHoldSpeech() throws {
        // The room alone counts after the first 3 s, by when the detector has had time to hear it as the room.
        let result = try Self.overARoom(decibels: 10, voices: 5, lead: 0, aloneFrom: 300)
        print("babble 10 dB under the lines from the first frame: \(result.summary)")
        #expect(result.heldThroughRoom <= 0.3, "speech held through \(Int(result.heldThroughRoom * 100))% of the room alone")
        #expect(result.found == result.lines, "lines found: \(result.found) of \(result.lines)")
        #expect(result.f1 >= 0.68, "F1 \(result.f1) (precision \(result.precision), recall \(result.recall))")
    }
}
