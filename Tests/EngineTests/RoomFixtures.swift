import AudioCore
import AudioMeasurements
import Engine
import Scene
import Spatial

#if canImport(Glibc)
import Glibc
#endif

/// Rooms built in memory from generated signals.
enum Fixture {
    static let sampleRate = 48_000.0
    /// Skipped at the start of every analysis: HRTF filters and the limiter's look-ahead settling.
    static let settleFrames = 4_800

    /// Where a source at `azimuth` degrees (+90 right) and `distance` metres is, seen from the origin facing -Z.
    static func position(azimuth: Double, distance: Double = 2, height: Double = 0) -> Position {
        let radians = azimuth * .pi / 180
        return Position(distance * sin(radians), height, -distance * cos(radians))
    }

    static func point(_ signal: [Float], at placement: Placement, id: String = "tone", gain: Double = 0,
                      loop: Bool = false, start: Double = 0, rate: Double = 1, paths: RoomPaths = .default,
                      algorithm: SourceAlgorithm = .auto, inHead: InHeadRendering = .mono, playing: Bool = true) -> RoomSource {
        RoomSource(SourceDescription(id: id, audioPath: "generated", audioField: field(id), mode: .point,
                                     placement: placement, gainDecibels: gain, loop: loop, start: start,
                                     rate: rate, paths: paths, algorithm: algorithm, inHead: inHead, playing: playing),
                   audio: AudioBuffer(mono: signal))
    }

    static func bed(ambiX: AudioBuffer, id: String = "bed", orientation: Orientation = .identity,
                    gain: Double = 0) -> RoomSource {
        RoomSource(SourceDescription(id: id, audioPath: "generated", audioField: field(id), mode: .bed,
                                     orientation: orientation, gainDecibels: gain),
                   audio: ambiX)
    }

    static func room(_ sources: [RoomSource], route: OutputRoute = .headphones,
                     distance: DistanceAttenuation = DistanceAttenuation(),
                     listenerPosition: Position = .zero, listenerOrientation: Orientation = .identity,
                     reverb: RoomReverb? = nil) -> Room {
        Room(scene: SceneDescription(file: "test.yaml", name: "test", route: RouteName(route),
                                     listenerPosition: listenerPosition, listenerOrientation: listenerOrientation,
                                     distance: distance, reverb: reverb, sources: sources.map(\.description)),
             sources: sources)
    }

    static func render(_ room: Room, seconds: Double = 1) throws -> (left: [Float], right: [Float]) {
        let output = try RoomRenderer(room: room).render(seconds: seconds)
        return (Array(output.channel(0).dropFirst(settleFrames)), Array(output.channel(1).dropFirst(settleFrames)))
    }

    /// A plane wave from straight ahead, encoded as first-order AmbiX (W Y Z X, SN3D).
    static func frontPlaneWave(_ signal: [Float]) -> AudioBuffer {
        AudioBuffer(channelCount: 4, interleaved: signal.flatMap { [$0, 0, 0, $0] })
    }

    static func noise(seconds: Double = 1, seed: UInt64 = 7) -> [Float] {
        Signals.whiteNoise(frames: Int(seconds * sampleRate), rms: 0.1, seed: seed)
    }

    /// A source played as its file is, head-locked.
    static func headLocked(_ audio: AudioBuffer, id: String = "music", mode: SourceMode = .spatializeIfMono,
                           algorithm: SourceAlgorithm = .auto, gain: Double = 0, start: Double = 0,
                           paths: RoomPaths = .default) -> RoomSource {
        RoomSource(SourceDescription(id: id, audioPath: "generated", audioField: field(id), mode: mode,
                                     gainDecibels: gain, start: start, paths: paths, algorithm: algorithm),
                   audio: audio)
    }

    static func field(_ id: String) -> FieldLocation {
        FieldLocation(file: "test.yaml", line: nil, field: "sources.\(id).file")
    }
}
