import AudioCore
import AudioMeasurements
import Devices
import Foundation
import Testing

@Suite struct SampleRateConverterTests {
    @Test(arguments: [22_050, 44_100, 96_000])
    func aToneKeepsItsPitchLevelAndLength(inputRate: Int) throws {
        let tone = Signals.sine(frequency: 1_000, frames: inputRate, amplitude: 0.5, sampleRate: Double(inputRate))
        let converted = try SampleRateConverter.convert(AudioBuffer(mono: tone), from: inputRate, to: 48_000)
        #expect(abs(converted.frameCount - 48_000) <= 1)
        // Away from the edges, where the filter starts and stops.
        let middle = Array(converted.samples[4_800..<43_200])
        #expect(abs(Measure.frequency(middle) - 1_000) <= 2)
        #expect(abs(Measure.rmsDecibels(middle) - Measure.rmsDecibels(tone)) < 0.1)
        // Aligned: the filter's delay is removed, so the sine keeps its phase.
        let expected = Signals.sine(frequency: 1_000, frames: 48_000, amplitude: 0.5)
        let error = zip(middle, expected[4_800..<43_200]).map { Double($0 - $1) }
        #expect(Measure.decibels((error.reduce(0) { $0 + $1 * $1 } / Double(error.count)).squareRoot()) < -40)
    }
}

@Suite struct AudioFileTests {
    let folder = NSTemporaryDirectory() + "audio-file-tests-" + UUID().uuidString

    init() throws { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) }

    @Test(arguments: [("a.wav", AudioFileFormat.wavFloat, 1e-7), ("b.wav", .wav16, 1.0 / 32_768), ("c.flac", .flac, 1.0 / 8_388_608)])
    func writtenAudioReadsBackWithinItsEncodingsResolution(name: String, format: AudioFileFormat, step: Double) throws {
        let stereo = AudioBuffer(channelCount: 2, interleaved: Signals.whiteNoise(frames: 2 * 9_600, rms: 0.2))
        let path = "\(folder)/\(name)"
        let writer = try AudioFileWriter(path: path, format: format, channelCount: 2, sampleRate: 48_000)
        try writer.write(stereo)
        try writer.close()
        let read = try AudioFileReader.read(path: path)
        #expect(read.sampleRate == 48_000 && read.buffer.channelCount == 2 && read.buffer.frameCount == 9_600)
        let worst = zip(read.buffer.samples, stereo.samples).map { Double(abs($0 - $1)) }.max()!
        #expect(worst <= step, "largest error \(worst)")
    }

    /// A recording is opened as a new file and then written as it grows. Another user who
    /// swaps its name for a symlink in between (a shared folder) must not get the samples
    /// written into the file the link names: the writer writes into the file that was opened.
    @Test(arguments: [OutputFile.Policy.record(force: false), .replace(streams: false)])
    func aNameSwappedForASymlinkAfterOpeningRedirectsNothing(policy: OutputFile.Policy) throws {
        let path = "\(folder)/take.wav", moved = "\(folder)/moved.wav", victim = "\(folder)/victim.txt"
        try Data("not audio\n".utf8).write(to: URL(fileURLWithPath: victim))
        let output = try OutputFile(path, policy: policy)
        // What was opened is moved aside (for a rename into place, the temporary file), and a link takes its name.
        var opened = stat(), moving = stat()
        #expect(fstat(output.descriptor, &opened) == 0)
        let openedName = try FileManager.default.contentsOfDirectory(atPath: folder).first {
            stat("\(folder)/\($0)", &moving) == 0 && moving.st_ino == opened.st_ino
        }!
        #expect(rename("\(folder)/\(openedName)", moved) == 0)
        #expect(symlink(victim, "\(folder)/\(openedName)") == 0)
        let tone = Signals.sine(frequency: 1_000, frames: 4_800, amplitude: 0.5)
        let writer = try AudioFileWriter(output: output, format: .wavFloat, channelCount: 1, sampleRate: 48_000)
        try writer.write(AudioBuffer(mono: tone))
        try writer.close()
        output.abandon()
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "not audio\n")
        let read = try AudioFileReader.read(path: moved)
        #expect(read.buffer.frameCount == 4_800)
        #expect(abs(Measure.rmsDecibels(read.buffer.samples) - Measure.rmsDecibels(tone)) < 0.01)
    }

    @Test func anAbsurdSampleRateIsRefused() throws {
        let path = "\(folder)/fast.wav"
        let writer = try AudioFileWriter(path: path, format: .wav16, channelCount: 1, sampleRate: 48_000)
        try writer.write(AudioBuffer(mono: [0.1, 0.2]))
        try writer.close()
        // Patch the header's rate field (bytes 24-27 of a canonical WAV) to 1 GHz.
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes.replaceSubrange(24..<28, with: [0x00, 0xCA, 0x9A, 0x3B])
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect {
            try AudioFileReader.read(path: path)
        } throws: { error in
            "\(error)".contains("declares a sample rate of") && "\(error)".contains("fast.wav")
        }
    }

    @Test func aMissingFileNamesTheFileAndTheReason() throws {
        #expect {
            try AudioFileReader.read(path: "\(folder)/none.wav")
        } throws: { error in
            (error as? SndFileError)?.call == "sf_open" && "\(error)".contains("none.wav")
        }
    }
}
