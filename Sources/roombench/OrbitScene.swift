import AudioCore
import Engine
import Scene
import Spatial

#if canImport(Glibc)
import Glibc
#endif

/// The benchmark's scene, which the raw OpenAL baseline in
/// Tools/openal-baseline builds the same way: sources circling the
/// listener, each looping its own second of noise.
///
/// Source `i` of `n` orbits at 2 + (i mod 8) m, once every 8 + (i mod 5) s,
/// starting at 360° · i / n, along a circle of 12 straight segments.
enum OrbitScene {
    static let segments = 12

    static func room(sources count: Int, route: OutputRoute = .headphones, algorithm: SourceAlgorithm = .auto) -> Room {
        var generator = NoiseGenerator(seed: 3)
        let sources = (0..<count).map { index -> RoomSource in
            let noise = (0..<Room.sampleRate).map { _ in generator.next() * 0.1 }
            let description = SourceDescription(id: "s\(index)", audioPath: "generated",
                                                audioField: FieldLocation(file: "orbit", line: nil, field: "s\(index)"),
                                                mode: .point, placement: .moving(path(index, of: count)), loop: true,
                                                algorithm: algorithm)
            return RoomSource(description, audio: AudioBuffer(mono: noise))
        }
        return Room(scene: SceneDescription(file: "orbit", name: "orbit", route: RouteName(route), sources: sources.map(\.description)),
                    sources: sources)
    }

    static func path(_ index: Int, of count: Int) -> MotionPath {
        let radius = 2 + Double(index % 8), period = 8 + Double(index % 5)
        let start = 2 * Double.pi * Double(index) / Double(count)
        let keyframes = (0...segments).map { step -> MotionPath.Keyframe in
            let angle = start + 2 * Double.pi * Double(step) / Double(segments)
            return MotionPath.Keyframe(time: period * Double(step) / Double(segments),
                                       position: Position(radius * sin(angle), 0, -radius * cos(angle)))
        }
        return MotionPath(keyframes: keyframes, repeats: true)
    }
}
