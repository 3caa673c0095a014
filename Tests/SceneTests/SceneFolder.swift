import AudioCore
import Devices
import Engine
import Foundation
import Scene

/// A temporary folder with a scene file and the audio files it may name.
final class SceneFolder {
    let path: String

    init() throws {
        path = NSTemporaryDirectory() + "scene-tests-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try writeAudio("mono.wav", channels: 1)
        try writeAudio("foa.wav", channels: 4)
        try writeAudio("three.wav", channels: 3)
        try writeAudio("slow.wav", channels: 1, sampleRate: 22_050)
        try writeAudio("empty.wav", channels: 1, frames: 0)
        try Data("RIFF\u{10}\0\0\0WAVEfmt garbage that is not a header".utf8).write(to: URL(fileURLWithPath: path + "/corrupt.wav"))
        try Data("this is a text file".utf8).write(to: URL(fileURLWithPath: path + "/notes.wav"))
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func writeAudio(_ name: String, channels: Int, sampleRate: Int = 48_000, frames: Int = 4_800) throws {
        let writer = try AudioFileWriter(path: "\(path)/\(name)", format: .wavFloat, channelCount: channels, sampleRate: sampleRate)
        let samples = (0..<(frames * channels)).map { Float(sin(Double($0) * 0.05)) * 0.25 }
        try writer.write(AudioBuffer(channelCount: channels, interleaved: samples))
        try writer.close()
    }

    /// Writes `yaml` as the scene and loads it with its audio.
    @discardableResult
    func load(_ yaml: String, name: String = "room.yaml") throws -> Room {
        let file = "\(path)/\(name)"
        try Data(yaml.utf8).write(to: URL(fileURLWithPath: file))
        return try Room.load(path: file)
    }

    /// The problems loading `yaml` reports; empty when it loads.
    func problems(_ yaml: String) -> [SceneIssue] {
        do {
            try load(yaml)
            return []
        } catch let error as SceneValidationError {
            return error.issues
        } catch {
            return [SceneIssue(file: "", line: nil, field: "", reason: "unexpected error \(error)")]
        }
    }
}
