import AudioMeasurements
import Testing
import Voice

#if canImport(Glibc)
import Glibc
#endif

@Suite struct VoiceActivityTests {
    /// Three spoken lines with pauses after a second of silence, and the
    /// truth per 10 ms frame as the shared corpus labels it: clean speech
    /// within 40 dB of its loudest frame.
    static func lines() throws -> (speech: [Float], truth: [Bool], starts: [Int]) {
        var speech = [Float](repeating: 0, count: 16_000), starts: [Int] = []
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
    static func decisions(_ signal: [Float]) -> [Bool] {
        let detector = VoiceActivityDetector()
        var decisions: [Bool] = []
        signal.withUnsafeBufferPointer { samples in
            for frame in 0..<(samples.count / 160) {
                let decision = detector.process(UnsafeBufferPointer(rebasing: samples[(frame * 160)..<((frame + 1) * 160)]))
                for back in 0..<decision.backfilled { decisions[decisions.count - 1 - back] = true }
                decisions.append(decision.speech)
            }
        }
        return decisions
    }

    static func onsets(_ decisions: [Bool]) -> [Int] {
        decisions.indices.filter { decisions[$0] && ($0 == 0 || !decisions[$0 - 1]) }
    }

    @Test(arguments: [20.0, 10, 5])
    func speechInWhiteNoiseIsFoundFrameByFrame(snr: Double) throws {
        let (speech, truth, starts) = try Self.lines()
        let talking = zip(speech, truth.flatMap { [Bool](repeating: $0, count: 160) }).filter(\.1).map(\.0)
        let noise = Signals.whiteNoise(frames: speech.count, rms: Float(Measure.rms(talking) * pow(10, -snr / 20)), seed: 8)
        let decisions = Self.decisions(zip(speech, noise).map { $0 + $1 })
        let hits = zip(decisions, truth).filter { $0 && $1 }.count
        let precision = Double(hits) / Double(decisions.filter { $0 }.count)
        let recall = Double(hits) / Double(truth.filter { $0 }.count)
        let f1 = 2 * precision * recall / (precision + recall)
        #expect(f1 >= 0.85, "F1 \(f1) at \(snr) dB (precision \(precision), recall \(recall))")
        // As the corpus scorer counts: every line caught by an onset within
        // 300 ms of its start, with a median latency of 50 ms or less.
        let onsets = Self.onsets(decisions)
        let latencies = starts.compactMap { start in onsets.first { abs($0 - start) <= 30 }.map { $0 - start } }
        #expect(latencies.count == starts.count, "lines found: \(latencies.count) of \(starts.count)")
        #expect(latencies.sorted()[latencies.count / 2] <= 5, "onset latencies in frames: \(latencies)")
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
}
