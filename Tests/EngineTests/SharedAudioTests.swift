import AudioMeasurements
import Engine
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// However many sources play one file, the room holds one decoded copy of
/// it and each OpenAL bus one buffer of it.
@Suite struct SharedAudioTests {
    /// A crowd of 1,000 sources left to the route, and 100 each on HRTF and
    /// panning, all playing one file at 44.1 kHz, converted once.
    @Test func sourcesOfOneFileShareOneCopyAndOneBufferPerBus() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shared-\(getpid())-\(UInt64.random(in: 0...UInt64.max))").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let writer = try AudioFileWriter(path: folder + "/noise.wav", format: .wavFloat, channelCount: 1, sampleRate: 44_100)
        try writer.write(AudioBuffer(mono: Signals.whiteNoise(frames: 22_050)))
        try writer.close()
        let entries = (0..<1_200).map { index -> String in
            let algorithm = index < 1_000 ? "" : index < 1_100 ? ", algorithm: hrtf" : ", algorithm: panning"
            return "  - { id: s\(index), file: noise.wav, position: [\(index % 40 - 20), 0, \(-2 - index / 40)], loop: true\(algorithm) }"
        }
        try ("version: 1\nname: Shared\noutput: { route: headphones }\nsources:\n" + entries.joined(separator: "\n") + "\n")
            .write(toFile: folder + "/room.yaml", atomically: true, encoding: .utf8)

        let room = try Room.load(path: folder + "/room.yaml")
        let storages = Set(room.sources.map { $0.audio.samples.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress!) } })
        let resampled = room.sources.filter(\.wasResampled).count
        #expect(room.sources.count == 1_200 && resampled == 1_200)
        #expect(storages.count == 1, "one decoded copy for every source")

        let renderer = try RoomRenderer(room: room)
        #expect(renderer.monoBufferCounts == [.hrtf: 1, .panning: 1], "one OpenAL buffer of the file on each bus")
    }

    /// A mixer uploads a storage once while points play it; equal samples
    /// in other storage are another buffer; a buffer no point plays is gone.
    @Test func aMixerUploadsEachStorageOnceWhilePointsPlayIt() throws {
        let mixer = try SpatialMixer(algorithm: .panning, layout: .stereo, sources: 512)
        let noise = Signals.whiteNoise(frames: 4_800)
        var points = try (0..<300).map { _ in try mixer.makePointSource(mono: noise, distance: DistanceModel()) }
        #expect(mixer.monoBufferCount == 1)
        points.append(try mixer.makePointSource(mono: noise.map { $0 }, distance: DistanceModel()))
        #expect(mixer.monoBufferCount == 2)
        points.removeAll()
        #expect(mixer.monoBufferCount == 0)
        // Uploads past the table's sweeps still share while they play.
        for _ in 0..<200 {
            let samples = noise.map { $0 }
            let pair = try (0..<2).map { _ in try mixer.makePointSource(mono: samples, distance: DistanceModel()) }
            withExtendedLifetime(pair) { #expect(mixer.monoBufferCount == 1) }
        }
    }
}
