import Foundation
import AudioCore

/// Writes a scene as a scene file that loads again: what `scenectl save`
/// keeps of a running room. Audio paths are written relative to the new
/// file's folder when they lie under it, absolute otherwise.
public enum SceneWriter {
    /// The scene as scene-file YAML to be saved at `path`; participants are written under `voice`, not as sources.
    public static func yaml(_ scene: SceneDescription, savedAt path: String) -> String {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().standardizedFileURL.path
        func file(_ audio: String) -> String {
            let absolute = URL(fileURLWithPath: audio).standardizedFileURL.path
            return quoted(absolute.hasPrefix(folder + "/") ? String(absolute.dropFirst(folder.count + 1)) : absolute)
        }
        var lines = ["# Saved from a running room.", "version: 1", "name: \(quoted(scene.name))"]
        if let duration = scene.duration { lines.append("duration: \(number(duration))") }
        lines.append("output: { route: \(scene.route.rawValue) }")
        let listener = scene.listenerOrientation
        lines.append("listener: { position: \(vector(scene.listenerPosition)), yaw: \(number(listener.yaw)), "
                     + "pitch: \(number(listener.pitch)), roll: \(number(listener.roll)) }")
        let distance = scene.distance
        lines.append("distance: { model: \(distance.law.rawValue), reference: \(number(distance.reference)), "
                     + "maximum: \(number(distance.maximum)), rolloff: \(number(distance.rolloff)) }")
        if let reverb = scene.reverb { lines.append("reverb: { preset: \(reverb.preset.rawValue), level: \(number(reverb.levelDecibels)) }") }
        let participants = Set(scene.voice?.participants.map(\.id) ?? [])
        let sources = scene.sources.filter { !participants.contains($0.id) }
        lines.append(sources.isEmpty ? "sources: []" : "sources:")
        for source in sources {
            for (index, (key, value)) in fields(of: source, file: file).enumerated() {
                lines.append("\(index == 0 ? "  - " : "    ")\(key): \(value)")
            }
        }
        if let voice = scene.voice {
            lines.append("voice:")
            switch voice.microphone {
            case .device: lines.append("  mic: default")
            case .none: lines.append("  mic: none")
            case .file(let path): lines.append("  mic: \(file(path))")
            }
            lines.append("  aec: \(voice.echoCancellation.rawValue)")
            lines.append("  muted: \(voice.muted)")
            let levels = voice.duckingLevels
            lines.append("  ducking: { level: \(voice.duckingLevel.rawValue), advanced: \(voice.advancedDucking), levels: "
                         + "{ default: \(number(levels.default)), min: \(number(levels.min)), mid: \(number(levels.mid)), max: \(number(levels.max)) } }")
            if !voice.participants.isEmpty {
                lines.append("  participants:")
                for participant in voice.participants {
                    // One made a bed or played as it is has no position of its own: its entry's stands.
                    let placed = scene.sources.first { $0.id == participant.id && $0.isPlaced }
                    let position = placed?.placement.position(at: 0) ?? participant.position
                    lines.append("    - { id: \(quoted(participant.id)), file: \(file(participant.audioPath)), position: \(vector(position)) }")
                }
            }
            if let mumble = voice.mumble {
                lines.append("  network:")
                lines.append("    mumble:")
                lines.append("      server: \(quoted(mumble.server))")
                lines.append("      channel: \(quoted(mumble.channel))")
                lines.append("      user: \(quoted(mumble.user))")
                if !mumble.password.isEmpty { lines.append("      password: \(quoted(mumble.password))") }
                if !mumble.context.isEmpty { lines.append("      context: \(quoted(mumble.context))") }
                if let fingerprint = mumble.fingerprint { lines.append("      fingerprint: \(quoted(fingerprint))") }
                lines.append("      transmission: \(mumble.transmission.rawValue)")
                lines.append("      bitrate: \(mumble.bitrateKbps)")
            }
        }
        if !scene.prompts.isEmpty {
            lines.append("prompts:")
            for prompt in scene.prompts {
                lines.append("  - { id: \(quoted(prompt.id)), normal: \(file(prompt.normalPath)), short: \(file(prompt.shortPath)) }")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// One source entry as a flow mapping, its file's path absolute: what
    /// `scenectl set` edits and validates again as the scene file would.
    public static func flowMapping(_ source: SourceDescription) -> String {
        let fields = fields(of: source) { quoted(URL(fileURLWithPath: $0).standardizedFileURL.path) }
        return "{ " + fields.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + " }"
    }

    /// A source entry's keys and their values as YAML text, in the order a scene file lists them.
    private static func fields(of source: SourceDescription, file: (String) -> String) -> [(key: String, value: String)] {
        var fields: [(key: String, value: String)] = [("id", quoted(source.id)), ("file", file(source.audioPath)),
                                                      ("mode", source.mode.rawValue)]
        if source.algorithm != .auto { fields.append(("algorithm", source.algorithm.rawValue)) }
        let headLocked = source.mode == .bypass || source.algorithm == .passthrough
        if source.mode == .bed {
            let turn = source.orientation
            fields += [("yaw", number(turn.yaw)), ("pitch", number(turn.pitch)), ("roll", number(turn.roll))]
            if let layout = source.bedLayout { fields.append(("layout", quoted(layout.rawValue))) }
            fields.append(("rate", number(source.rate)))
        } else if !headLocked {
            switch source.placement {
            case .fixed(let position): fields.append(("position", vector(position)))
            case .moving(let path):
                let keyframes = path.keyframes.map { "{ time: \(number($0.time)), position: \(vector($0.position)) }" }
                fields.append(("motion", "{ keyframes: [\(keyframes.joined(separator: ", "))], repeat: \(path.repeats) }"))
            }
            if source.inHead != .mono { fields.append(("inHead", source.inHead.rawValue)) }
            fields.append(("rate", number(source.rate)))
        }
        if source.mode != .bed && source.mode != .bypass {
            fields += [("reverbBlend", number(source.paths.reverbBlend)), ("obstruction", number(source.paths.obstruction)),
                       ("occlusion", number(source.paths.occlusion))]
        }
        fields += [("gain", number(source.gainDecibels)), ("loop", "\(source.loop)"), ("start", number(source.start))]
        if !source.playing { fields.append(("playing", "false")) }
        if source.category != .scene { fields.append(("category", source.category.rawValue)) }
        return fields
    }

    /// A JSON string, which YAML reads as the same string whatever it holds.
    static func quoted(_ text: String) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: text, options: [.fragmentsAllowed, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    static func vector(_ position: Position) -> String {
        "[\(number(position.x)), \(number(position.y)), \(number(position.z))]"
    }
}
