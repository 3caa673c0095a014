import AudioCore
import AudioMeasurements
import Devices
import Foundation
import Testing

/// A far end of noise bursts, and a microphone that hears its echo, at two different rates.
final class VoiceFolder {
    let path = NSTemporaryDirectory() + "process-voice-tests-" + UUID().uuidString
    var far: String { path + "/far.wav" }
    var mic: String { path + "/mic.wav" }
    static let farRate = 16_000, micRate = 22_050

    /// - Parameter poison: seconds into the microphone where 10 ms of NaN and Inf land.
    init(farSeconds: Double = 1.5, micSeconds: Double = 3, poison: Double? = nil) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let far = Signals.whiteNoise(frames: Int(farSeconds * 48_000), rms: 0.1, seed: 9)
        var mic = [Float](repeating: 0, count: Int(micSeconds * 48_000))
        // 3 ms of flight and a short decay, 6 dB down.
        for (index, sample) in far.enumerated() {
            for (tap, gain) in [(144, Float(0.5)), (200, 0.2), (400, 0.08)] where index + tap < mic.count {
                mic[index + tap] += sample * gain
            }
        }
        if let poison {
            let start = Int(poison * 48_000)
            for index in start..<(start + 480) { mic[index] = index % 2 == 0 ? .nan : .infinity }
        }
        try Self.write(far, rate: Self.farRate, to: self.far)
        try Self.write(mic, rate: Self.micRate, to: self.mic)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    static func write(_ samples: [Float], rate: Int, to path: String, channels: Int = 1) throws {
        // NaN and Inf would not survive a resampler: they go in after.
        let clean = samples.map { $0.isFinite ? $0 : 0 }
        var converted = try SampleRateConverter.convert(AudioBuffer(mono: clean), from: 48_000, to: rate).samples
        for (index, sample) in samples.enumerated() where !sample.isFinite {
            let target = index * rate / 48_000
            if target < converted.count { converted[target] = sample }
        }
        let writer = try AudioFileWriter(path: path, format: .wavFloat, channelCount: channels, sampleRate: rate)
        try writer.write(AudioBuffer(channelCount: channels, interleaved: converted.flatMap { Array(repeating: $0, count: channels) }))
        try writer.close()
    }
}

@Suite struct ProcessVoiceTests {
    @Test func cancelsTheEchoPadsTheFarEndAndWritesDecisions() throws {
        let folder = try VoiceFolder()
        let out = folder.path + "/up.wav", vad = folder.path + "/vad.txt", events = folder.path + "/events.jsonl"
        let result = try Scenectl.run(["process-voice", "--far", folder.far, "--mic", folder.mic, "--out", out,
                                       "--vad-out", vad, "--events", events])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("shorter than the microphone's 3.00 s; padded with silence"), "\(result.stderr)")
        #expect(result.stderr.contains("16000 Hz") && result.stderr.contains("22050 Hz"))
        let mic = try AudioFileReader.read(path: folder.mic), up = try AudioFileReader.read(path: out)
        #expect(up.sampleRate == VoiceFolder.micRate && up.buffer.frameCount == mic.buffer.frameCount)
        // After the canceller has learnt the path, the echo is gone.
        let rate = VoiceFolder.micRate, span = Int(0.75 * Double(rate))..<Int(1.45 * Double(rate))
        let erle = Measure.decibels(Measure.rms(mic.buffer.samples[span]) / max(Measure.rms(up.buffer.samples[span]), 1e-9))
        #expect(erle > 25, "ERLE \(erle) dB")
        let decisions = try String(contentsOfFile: vad, encoding: .utf8).split(separator: "\n")
        #expect(decisions.count == 300 && decisions.allSatisfy { $0 == "0" || $0 == "1" }, "\(decisions.count) decisions")
        #expect(FileManager.default.fileExists(atPath: events))
    }

    @Test func mutedTheUplinkIsSilentAndNaNsAreCleaned() throws {
        let folder = try VoiceFolder(farSeconds: 3, micSeconds: 3, poison: 1)
        let out = folder.path + "/up.wav"
        let muted = try Scenectl.run(["process-voice", "--far", folder.far, "--mic", folder.mic, "--out", out, "--muted"])
        #expect(muted.status == 0, "\(muted.stderr)")
        let silent = try AudioFileReader.read(path: out).buffer.samples
        #expect(silent.allSatisfy { $0 == 0 })

        let open = try Scenectl.run(["process-voice", "--far", folder.far, "--mic", folder.mic, "--out", out])
        #expect(open.status == 0, "\(open.stderr)")
        let up = try AudioFileReader.read(path: out).buffer.samples, mic = try AudioFileReader.read(path: folder.mic).buffer.samples
        #expect(up.allSatisfy { $0.isFinite })
        // Within a second of the NaNs the canceller is back.
        let rate = VoiceFolder.micRate, span = Int(2.0 * Double(rate))..<Int(2.9 * Double(rate))
        let erle = Measure.decibels(Measure.rms(mic[span]) / max(Measure.rms(up[span]), 1e-9))
        #expect(erle > 25, "ERLE \(erle) dB a second after the NaNs")
    }

    /// Keyboard clicks at full scale over a quiet room: the chain's gain
    /// and its resamplers would put peaks past full scale; the limiter
    /// keeps every sample of the uplink under it.
    @Test func clicksAtFullScaleLeaveUnderIt() throws {
        let folder = try VoiceFolder()
        let rate = 16_000
        var mic = Signals.whiteNoise(frames: 4 * rate, rms: 0.003, seed: 5)
        let click = Signals.whiteNoise(frames: 200, rms: 0.9, seed: 6)
        for start in stride(from: Int(0.3 * Double(rate)), to: mic.count - 200, by: rate / 4) {
            for index in 0..<200 { mic[start + index] += click[index] * Float(exp(-Double(index) / 30)) }
        }
        mic = mic.map { max(-1, min(1, $0)) }
        let micPath = folder.path + "/clicks.wav", out = folder.path + "/up.wav"
        let writer = try AudioFileWriter(path: micPath, format: .wavFloat, channelCount: 1, sampleRate: rate)
        try writer.write(AudioBuffer(mono: mic))
        try writer.close()
        let result = try Scenectl.run(["process-voice", "--mic", micPath, "--out", out])
        #expect(result.status == 0, "\(result.stderr)")
        let up = try AudioFileReader.read(path: out).buffer.samples
        let peak = up.map(abs).max() ?? 0
        print("clicks: microphone peak \(mic.map(abs).max()!), uplink peak \(peak)")
        #expect(peak < 0.95, "uplink peak \(peak)")
        #expect(peak > 0.5, "the clicks still reach the uplink")
    }

    @Test func badInputIsAUsageError() throws {
        let folder = try VoiceFolder()
        let stereo = folder.path + "/stereo.wav"
        try VoiceFolder.write([Float](repeating: 0.1, count: 4_800), rate: 48_000, to: stereo, channels: 2)
        let corrupt = folder.path + "/corrupt.wav"
        try Data("RIFF\u{10}\0\0\0WAVEfmt not a header".utf8).write(to: URL(fileURLWithPath: corrupt))
        let cases: [([String], String)] = [
            (["--mic", stereo, "--out", folder.path + "/o.wav"], "has 2 channels; a microphone recording has one"),
            (["--mic", corrupt, "--out", folder.path + "/o.wav"], "--mic \"\(corrupt)\""),
            (["--mic", folder.mic, "--far", corrupt, "--out", folder.path + "/o.wav"], "--far \"\(corrupt)\""),
            (["--mic", folder.mic, "--out", folder.path + "/o.mp3"], "--out must name a .wav or .flac file"),
            (["--mic", folder.mic, "--out", folder.path + "/o.wav", "--aec", "maybe"], "maybe"),
            (["--out", folder.path + "/o.wav"], "--mic"),
            (["--mic", folder.path, "--out", folder.path + "/o.wav"], "--mic \"\(folder.path)\": \(folder.path): is a folder, not an audio file"),
            (["--mic", folder.mic, "--out", folder.path + "/o.wav", "--vad-out", folder.path + "/./o.wav"],
             "--vad-out \"\(folder.path)/./o.wav\" is also the --out file"),
            (["--mic", folder.mic, "--out", folder.path + "/o.wav", "--vad-out", folder.path + "/d.txt", "--events", folder.path + "/d.txt"],
             "--events \"\(folder.path)/d.txt\" is also the --vad-out file"),
        ]
        for (arguments, message) in cases {
            let result = try Scenectl.run(["process-voice"] + arguments)
            #expect(result.status == 2 && result.stderr.contains(message), "\(arguments): \(result.status) \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/o.wav"))
        // Under another name too: a link to the uplink already there.
        try Data().write(to: URL(fileURLWithPath: folder.path + "/up.wav"))
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/d.txt", withDestinationPath: folder.path + "/up.wav")
        let linked = try Scenectl.run(["process-voice", "--mic", folder.mic, "--out", folder.path + "/up.wav", "--vad-out", folder.path + "/d.txt"])
        #expect(linked.status == 2 && linked.stderr.contains("is also the --out file"), "\(linked.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder.path + "/up.wav")).isEmpty)
        // A device that keeps nothing may take two of them.
        let discarded = try Scenectl.run(["process-voice", "--mic", folder.mic, "--out", folder.path + "/up.wav",
                                          "--vad-out", "/dev/null", "--events", "/dev/null"])
        #expect(discarded.status == 0, "\(discarded.stderr)")
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/full")))
    func anOutputThatCannotBeWrittenLeavesNoneOfThemNew() throws {
        let folder = try VoiceFolder()
        let out = folder.path + "/up.wav"
        let result = try Scenectl.run(["process-voice", "--mic", folder.mic, "--out", out, "--vad-out", "/dev/full"])
        #expect(result.status == 1 && result.stderr.contains("/dev/full: cannot write: No space left on device"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).allSatisfy { !$0.hasPrefix(".up.wav") })
    }
}

@Suite struct RenderVoiceTests {
    /// A prompt queued behind one that plays past the render's end never
    /// plays, and the summary says so rather than losing it.
    @Test func promptsStillWaitingAtTheEndAreNamed() throws {
        let folder = try VoiceFolder()
        try "prompts:\n  - { id: hi, normal: far.wav, short: far.wav }\n"
            .write(toFile: folder.path + "/room.yaml", atomically: true, encoding: .utf8)
        // Asked for at 0.195 s, they start at the first block at or after it: 0.2 s.
        let arguments = ["render", folder.path + "/room.yaml", "--out", folder.path + "/out.wav", "--seconds", "1",
                         "--prompt", "0.195:hi", "--prompt", "0.195:hi"]
        let json = try Scenectl.run(arguments + ["--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let waiting = try json.summary()["promptsWaiting"] as? [[String: Any]]
        #expect(waiting?.count == 1 && waiting?.first?["prompt"] as? String == "hi" && waiting?.first?["waited"] as? Double == 0.8,
                "\(String(describing: waiting))")
        let text = try Scenectl.run(arguments)
        #expect(text.stdout.contains("prompts still waiting when the render ended, never played: hi (waited 0.80 s)"), "\(text.stdout)")
        // The one that played is heard from 0.2 s; before it, nothing.
        let out = try AudioFileReader.read(path: folder.path + "/out.wav").buffer
        let left = stride(from: 0, to: out.samples.count, by: out.channelCount).map { out.samples[$0] }
        #expect(Measure.rms(left[0..<9_600]) == 0 && Measure.rmsDecibels(Array(left[9_600..<48_000])) > -40)
    }

    @Test func theLoopRunsWithAnEchoPathAndWritesEvents() throws {
        let folder = try VoiceFolder()
        // The far end's noise bursts are the room's sound; a guest talks over them; the echo path closes the loop.
        try """
        name: Voice room
        duration: 2
        sources:
          - { id: speaker, file: far.wav, mode: bypass }
        voice:
          mic: none
          ducking: { level: max, advanced: true }
          participants:
            - { id: guest, file: mic.wav, position: [1, 0, -1] }
        """.write(toFile: folder.path + "/room.yaml", atomically: true, encoding: .utf8)
        let impulse = folder.path + "/rir.wav"
        try VoiceFolder.write([0, 0, 0.5, 0.2, 0.05] + [Float](repeating: 0, count: 475), rate: 48_000, to: impulse)
        let events = folder.path + "/events.jsonl"
        let result = try Scenectl.run(["render", folder.path + "/room.yaml", "--out", folder.path + "/out.wav",
                                       "--echo", impulse, "--events", events, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let voice = try result.summary()["voice"] as? [String: Any]
        #expect((voice?["echoCancellation"] as? String)?.hasPrefix("on (auto") == true, "\(String(describing: voice))")
        let lines = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n")
        let parsed = try lines.map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
        #expect(parsed.first?["event"] as? String == "echoCancellation" && parsed.first?["mode"] as? String == "on")
        #expect(parsed.contains { $0["event"] as? String == "promptStyleChanged" })
        let times = parsed.compactMap { $0["t"] as? Double }
        #expect(times == times.sorted() && times.count == parsed.count)

        let unknown = try Scenectl.run(["render", folder.path + "/room.yaml", "--out", folder.path + "/out.wav", "--prompt", "0.5:hello"])
        #expect(unknown.status == 2 && unknown.stderr.contains("--prompt \"hello\": the room has no such prompt"), "\(unknown.stderr)")
        let stereo = folder.path + "/stereo.wav"
        try VoiceFolder.write([Float](repeating: 0.1, count: 4_800), rate: 48_000, to: stereo, channels: 2)
        let badMic = try Scenectl.run(["render", folder.path + "/room.yaml", "--out", folder.path + "/out.wav", "--mic", stereo])
        #expect(badMic.status == 2 && badMic.stderr.contains("a microphone recording has one"), "\(badMic.stderr)")
    }
}
