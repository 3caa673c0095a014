import AudioCore
import Foundation

/// Reads scene files (YAML; JSON is YAML too) into validated descriptions.
///
/// Validation does not stop at the first problem: it reports every one it
/// finds, each with file, line, field, value and reason, and a scene with
/// any problem yields no description at all.
public enum SceneLoader {
    /// The scene format version this engine reads; a file's `version` key must name it.
    public static let formatVersion = 1
    /// Scene files name their audio rather than hold it: even a crowd of
    /// 4,096 sources on their own paths takes about 2 MiB, so anything
    /// larger is a mistake, not a room.
    public static let maximumFileBytes = 8 << 20
    /// Flow collections nested deeper than this are refused before parsing.
    public static let maximumNesting = 32

    /// - Parameters:
    ///   - path: the scene file, YAML or JSON; relative audio paths are its folder's.
    ///   - inspectAudio: reads the header of each audio file the
    ///     scene names, so unreadable files and channel counts that do not fit
    ///     the source's mode are reported with the scene's other problems.
    public static func load(path: String, inspectAudio: AudioInspector? = nil) throws -> SceneDescription {
        let url = URL(fileURLWithPath: path)
        func refuse(_ reason: String) -> SceneValidationError {
            SceneValidationError(issues: [SceneIssue(file: path, line: nil, field: "", reason: reason)])
        }
        switch FileKind(path: path) {
        case .missing: throw refuse("scene file not found")
        case .directory: throw refuse("is a folder, not a scene file")
        // A pipe would wait for a writer, a device might never end.
        case .pipe, .device: throw refuse("is not a regular file")
        case .regular: break
        }
        guard let handle = FileHandle(forReadingAtPath: path) else { throw refuse("scene file is not readable") }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumFileBytes + 1)) ?? Data()
        guard data.count <= maximumFileBytes else {
            throw refuse("scene file is larger than \(maximumFileBytes >> 20) MiB; scenes name their audio files rather than holding audio")
        }
        guard let text = String(data: data, encoding: .utf8) else { throw refuse("scene file is not valid UTF-8 text") }
        return try parse(yaml: text, file: path, baseDirectory: url.deletingLastPathComponent().path, inspectAudio: inspectAudio)
    }

    /// Parses scene text; relative audio paths resolve against `baseDirectory`.
    public static func parse(yaml: String, file: String, baseDirectory: String,
                             inspectAudio: AudioInspector? = nil) throws -> SceneDescription {
        if let line = lineExceedingNesting(yaml) {
            throw SceneValidationError(issues: [SceneIssue(file: file, line: line, field: "",
                reason: "nested deeper than \(maximumNesting) levels")])
        }
        let root: YAMLNode?
        do {
            root = try SceneYAML.compose(yaml)
        } catch {
            throw SceneValidationError(issues: [yamlIssue(error, file: file)])
        }
        let reader = SceneReader(file: file, baseDirectory: baseDirectory, inspectAudio: inspectAudio)
        guard let root else {
            throw SceneValidationError(issues: [SceneIssue(file: file, line: nil, field: "", reason: "the scene is empty")])
        }
        let scene = reader.scene(root)
        guard reader.issues.isEmpty, let scene else { throw SceneValidationError(issues: reader.issues) }
        return scene
    }

    /// Parses one source entry in the scene file's own syntax (a YAML or
    /// JSON flow mapping such as `{id: bell, file: bell.wav, position: [2, 0, -1]}`)
    /// by exactly the scene file's rules. `origin` names where it came
    /// from in the messages; relative paths resolve against `baseDirectory`.
    /// A source with no `file` is a stream the app feeds.
    public static func parseSource(yaml: String, origin: String, baseDirectory: String,
                                   inspectAudio: AudioInspector? = nil, streamed: Bool = false) throws -> SourceDescription {
        let node = try compose(yaml, origin: origin)
        return try readSource(node, origin: origin, baseDirectory: baseDirectory, inspectAudio: inspectAudio, streamed: streamed)
    }

    /// A stream the app feeds, at `position`, validated as a scene file's
    /// source entry with no file would be.
    public static func parseStream(id: String, position: Position, gainDecibels: Double,
                                   category: SourceCategory) throws -> SourceDescription {
        let entry = "{ id: \(SceneWriter.quoted(id)), position: \(SceneWriter.vector(position)), "
            + "gain: \(SceneWriter.number(gainDecibels)), category: \(category.rawValue), mode: point }"
        return try parseSource(yaml: entry, origin: "stream", baseDirectory: "/", streamed: true)
    }

    /// The keys of a source entry that change while the source plays; the
    /// others (its id, file, position, start, layout, ...) make another source.
    public static let settableKeys = ["reverbBlend", "obstruction", "occlusion", "rate", "loop", "algorithm", "mode", "inHead",
                                      "gain", "playing"]

    /// `source` with `key`, one of `settableKeys`, set to `value` (YAML text,
    /// one value), validated as the whole entry would be in a scene file.
    /// The file stays as it is and is not read again.
    ///
    /// A new mode or algorithm drops what it makes meaningless; `position`,
    /// where the source is now, places one that had no position again.
    public static func editSource(_ source: SourceDescription, key: String, value: String, origin: String,
                                  position: Position? = nil) throws -> SourceDescription {
        let refuse = { (reason: String) in
            SceneValidationError(issues: [SceneIssue(file: origin, line: nil, field: "\(source.id).\(key)", value: value, reason: reason)])
        }
        guard settableKeys.contains(key) else {
            let instead = switch key {
            case "position", "motion": "move it (move ID -- X Y Z), or remove it and add it with its keyframes"
            default: "remove the source and add it again with the entry it should have"
            }
            throw refuse("does not change while the source plays: \(instead); set takes \(settableKeys.joined(separator: ", "))")
        }
        let entry = try compose(SceneWriter.flowMapping(source), origin: origin)
        let valueNode = try compose(value, origin: origin)
        guard case .mapping(var keys) = entry else { preconditionFailure("a source entry is written as a mapping") }
        switch valueNode {
        case .scalar, .sequence: break
        case .mapping: throw refuse("expected one value")
        }
        keys[key] = valueNode
        keys["file"] = nil
        // What a new mode or algorithm makes meaningless goes: a bed has no position, passthrough no rate.
        let mode = keys["mode"]?.string, algorithm = keys["algorithm"]?.string
        var meaningless: [String] = []
        if mode == SourceMode.bed.rawValue { meaningless += ["position", "motion", "reverbBlend", "obstruction", "occlusion", "inHead"] }
        if mode != SourceMode.bed.rawValue { meaningless += ["yaw", "pitch", "roll", "layout"] }
        if mode == SourceMode.bypass.rawValue { meaningless += ["reverbBlend", "obstruction", "occlusion"] }
        if mode == SourceMode.bypass.rawValue || algorithm == SourceAlgorithm.passthrough.rawValue {
            meaningless += ["position", "motion", "rate", "inHead"]
        }
        if key == "mode" || key == "algorithm" {
            for name in meaningless where name != key { keys[name] = nil }
            // A source that had no position (a bed, a file as it is) and is placed again stands where the room has it.
            if let position, keys["position"] == nil, keys["motion"] == nil, !meaningless.contains("position") {
                keys["position"] = try compose(SceneWriter.vector(position), origin: origin)
            }
        }
        let edited = YAMLNode.mapping(keys)
        do {
            var result = try readSource(edited, origin: origin, baseDirectory: "/", inspectAudio: nil, streamed: true)
            result.audioPath = source.audioPath
            result.audioField = source.audioField
            return result
        } catch let error as SceneValidationError {
            throw SceneValidationError(issues: error.issues.map {
                SceneIssue(file: $0.file, line: nil, field: $0.field.replacingOccurrences(of: "source.", with: "\(source.id)."),
                           value: $0.value, reason: $0.reason)
            })
        }
    }

    private static func compose(_ yaml: String, origin: String) throws -> YAMLNode {
        if let line = lineExceedingNesting(yaml) {
            throw SceneValidationError(issues: [SceneIssue(file: origin, line: line, field: "",
                reason: "nested deeper than \(maximumNesting) levels")])
        }
        do {
            guard let node = try SceneYAML.compose(yaml) else {
                throw SceneValidationError(issues: [SceneIssue(file: origin, line: nil, field: "", reason: "nothing given")])
            }
            return node
        } catch let error as SceneValidationError {
            throw error
        } catch {
            throw SceneValidationError(issues: [yamlIssue(error, file: origin)])
        }
    }

    private static func readSource(_ node: YAMLNode, origin: String, baseDirectory: String,
                                   inspectAudio: AudioInspector?, streamed: Bool) throws -> SourceDescription {
        let reader = SceneReader(file: origin, baseDirectory: baseDirectory, inspectAudio: inspectAudio)
        reader.fileOptional = streamed
        let source = reader.source(node, "source")
        guard reader.issues.isEmpty, let source else { throw SceneValidationError(issues: reader.issues) }
        return source
    }

    private static func yamlIssue(_ error: Error, file: String) -> SceneIssue {
        switch error as? YAMLProblem {
        case let .invalid(problem, line):
            return SceneIssue(file: file, line: line, field: "", reason: "not valid YAML: \(problem)")
        case let .duplicateKeys(duplicates, line):
            return SceneIssue(file: file, line: line, field: "", value: duplicates.joined(separator: ", "),
                              reason: "key appears more than once in the same mapping")
        case let .unreadable(problem):
            return SceneIssue(file: file, line: nil, field: "", reason: "not readable as YAML: \(problem)")
        case .memory:
            return SceneIssue(file: file, line: nil, field: "", reason: "not valid YAML: Memory error")
        case nil:
            return SceneIssue(file: file, line: nil, field: "", reason: "not valid YAML: \(error)")
        }
    }

    /// The line where `[` and `{` nesting first passes the limit, if it does.
    private static func lineExceedingNesting(_ text: String) -> Int? {
        var text = text
        // The bytes in place: a crowd's scene is megabytes, and the view's iterator costs several times more.
        return text.withUTF8 { bytes in
            var depth = 0, line = 1
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\n"): line += 1
                case UInt8(ascii: "["), UInt8(ascii: "{"):
                    depth += 1
                    if depth > maximumNesting { return line }
                case UInt8(ascii: "]"), UInt8(ascii: "}"): depth = max(0, depth - 1)
                default: break
                }
            }
            return nil
        }
    }
}
