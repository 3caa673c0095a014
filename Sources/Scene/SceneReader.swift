import Foundation
import AudioCore

/// Walks a composed YAML tree, building the scene and collecting issues.
final class SceneReader {
    let file: String
    let baseDirectory: String
    let inspectAudio: AudioInspector?
    /// A source may come without a file: a stream the app feeds.
    var fileOptional = false
    private(set) var issues: [SceneIssue] = []
    /// Each audio file's place and header, found once however many sources play it.
    private var located: [String: (path: String, problem: String?)] = [:]
    private var inspected: [String: Result<AudioFileInfo, Error>] = [:]

    static let maximumCoordinate = 10_000.0
    /// The latest a source may start or a keyframe fall: a room may play for
    /// days, and `save` writes the times of sources that joined on its timeline.
    static let longestTimeline = 604_800.0
    /// The rate the engine renders every scene at.
    static let engineRate = 48_000.0
    static let idCharacters = Set("abcdefghijklmnopqrstuvwxyz0123456789_-")

    init(file: String, baseDirectory: String, inspectAudio: AudioInspector?) {
        self.file = file
        self.baseDirectory = baseDirectory
        self.inspectAudio = inspectAudio
    }

    // MARK: The scene

    func scene(_ root: YAMLNode) -> SceneDescription? {
        guard let keys = mapping(root, "", allowed: ["version", "name", "duration", "output", "listener", "distance", "reverb", "sources", "voice", "prompts"]) else {
            return nil
        }
        if let node = keys["version"], let version = number(node, "version", in: 1...1_000, unit: "") {
            if version != Double(SceneLoader.formatVersion) {
                report(node, "version", value: scalarText(node),
                       "this engine reads scene format version \(SceneLoader.formatVersion)")
            }
        }
        var scene = SceneDescription(file: file, name: (file as NSString).lastPathComponent)
        if let node = keys["name"], let name = string(node, "name") { scene.name = name }
        if let node = keys["duration"], let duration = positiveSeconds(node, "duration") {
            if (duration * Self.engineRate).rounded() < 1 {
                report(node, "duration", value: scalarText(node), "is less than one sample at \(Int(Self.engineRate)) Hz; nothing would be rendered")
            } else {
                scene.duration = duration
            }
        }
        if let node = keys["output"], let output = mapping(node, "output", allowed: ["route"]),
           let routeNode = output["route"], let route: RouteName = choice(routeNode, "output.route") {
            scene.route = route
        }
        if let node = keys["listener"], let listener = mapping(node, "listener", allowed: ["position", "yaw", "pitch", "roll"]) {
            if let node = listener["position"], let position = position(node, "listener.position") {
                scene.listenerPosition = position
            }
            scene.listenerOrientation = orientation(listener, "listener")
        }
        if let node = keys["distance"] {
            scene.distance = distance(node) ?? scene.distance
        }
        if let node = keys["reverb"], let reverb = mapping(node, "reverb", allowed: ["preset", "level"]),
           let presetNode = required(reverb, "preset", in: "reverb", node),
           let preset: RoomReverb.Preset = choice(presetNode, "reverb.preset") {
            // An EFX effect slot's gain is at most 1: OpenAL refuses a louder return.
            let level = reverb["level"].flatMap { number($0, "reverb.level", in: -60...0, unit: "dB") } ?? 0
            scene.reverb = RoomReverb(preset: preset, levelDecibels: level)
        }
        if let node = keys["sources"] {
            scene.sources = sources(node)
        }
        if let node = keys["voice"] {
            scene.voice = voice(node, sourceIDs: Set(scene.sources.map(\.id)))
        }
        if let node = keys["prompts"] {
            scene.prompts = prompts(node)
        }
        return scene
    }

    private func distance(_ node: YAMLNode) -> DistanceAttenuation? {
        guard let keys = mapping(node, "distance", allowed: ["model", "reference", "maximum", "rolloff"]) else { return nil }
        var model = DistanceAttenuation()
        if let node = keys["model"], let law: DistanceAttenuation.Law = choice(node, "distance.model") { model.law = law }
        if let node = keys["reference"], let value = positiveDistance(node, "distance.reference") { model.reference = value }
        if let node = keys["rolloff"], let value = number(node, "distance.rolloff", in: 0...100, unit: "") { model.rolloff = value }
        if let node = keys["maximum"], let value = positiveDistance(node, "distance.maximum") {
            if value < model.reference {
                report(node, "distance.maximum", value: scalarText(node),
                       "must be at least the reference distance (\(format(model.reference)) m)")
            } else {
                model.maximum = value
            }
        } else if model.maximum < model.reference {
            model.maximum = model.reference
        }
        return model
    }

    // MARK: Sources

    private func sources(_ node: YAMLNode) -> [SourceDescription] {
        guard case let .sequence(list, _) = node else {
            report(node, "sources", "expected a list of sources")
            return []
        }
        var result: [SourceDescription] = []
        var firstUse: [String: (field: String, line: Int?)] = [:]
        for (index, item) in list.enumerated() {
            let field = "sources[\(index)]"
            // Ids are checked even on sources with other problems, so one
            // pass reports a duplicate alongside everything else.
            if case let .mapping(keys) = item, let idNode = keys["id"], let id = idNode.scalar?.string {
                if let earlier = firstUse[id] {
                    let line = earlier.line.map { " (line \($0))" } ?? ""
                    report(idNode, "\(field).id", value: id, "id already used by \(earlier.field)\(line)")
                } else {
                    firstUse[id] = (field, item.line)
                }
            }
            if let source = source(item, field) { result.append(source) }
        }
        return result
    }

    func source(_ node: YAMLNode, _ field: String) -> SourceDescription? {
        let allowed = ["id", "file", "mode", "algorithm", "position", "motion", "yaw", "pitch", "roll", "gain", "loop", "start",
                       "playing", "rate", "reverbBlend", "obstruction", "occlusion", "layout", "inHead", "category"]
        guard let keys = mapping(node, field, allowed: allowed) else { return nil }
        let problemsBefore = issues.count

        let id = required(keys, "id", in: field, node).flatMap { sourceID($0, "\(field).id") }
        let audio = fileOptional && keys["file"] == nil
            ? (path: "", location: FieldLocation(file: file, line: node.line, field: "\(field).file"))
            : required(keys, "file", in: field, node).flatMap { audioFile($0, "\(field).file") }
        var mode = SourceMode.spatializeIfMono
        if let node = keys["mode"], let value: SourceMode = choice(node, "\(field).mode") { mode = value }
        var algorithm = SourceAlgorithm.auto
        if let node = keys["algorithm"], let value: SourceAlgorithm = choice(node, "\(field).algorithm") { algorithm = value }
        // Played as the file is, head-locked: whatever the file's channels.
        let headLocked = mode == .bypass || algorithm == .passthrough

        func refuse(_ keyNames: [String], _ reason: String) {
            for key in keyNames {
                if let node = keys[key] { report(node, "\(field).\(key)", value: scalarText(node), reason) }
            }
        }
        var placement = Placement.fixed(.zero)
        if mode == .bed {
            refuse(["position", "motion"], "a bed has no position: it surrounds the listener and turns with yaw, pitch and roll")
            refuse(["reverbBlend", "obstruction", "occlusion"], "a bed is the room's own ambience: it has no path through the room to change")
            if algorithm == .passthrough {
                refuse(["algorithm"], "a bed is anchored to the world, passthrough is head-locked; use mode: bypass to play the file as it is")
            }
        } else {
            refuse(["yaw", "pitch", "roll"], "turns beds only")
            refuse(["layout"], "a layout describes a bed's channels")
        }
        if mode == .bed || headLocked {
            refuse(["inHead"], "only a point source can be inside the listener's head")
        }
        if mode == .bypass {
            refuse(["reverbBlend", "obstruction", "occlusion"],
                   "bypass plays the file as it is, with no reverb or occlusion; algorithm: passthrough keeps the room's paths")
        }
        if headLocked {
            refuse(["position", "motion"], "plays head-locked as the file is (\(mode == .bypass ? "bypass" : "passthrough")), so it has no position")
            refuse(["rate"], "plays the file as it is; rate needs a spatial algorithm")
        } else if mode != .bed {
            switch (keys["position"], keys["motion"]) {
            case (let node?, nil):
                if let position = position(node, "\(field).position") { placement = .fixed(position) }
            case (nil, let node?):
                if let path = motion(node, "\(field).motion") { placement = .moving(path) }
            case (_?, let motion?):
                report(motion, "\(field).motion", "give either position or motion, not both")
            case (nil, nil):
                // A multichannel file in spatializeIfMono plays as it is, where it needs no position;
                // a file missing or unreadable is reported for itself.
                if mode == .spatializeIfMono && inspectAudio != nil && audio?.path.isEmpty != true,
                   audio.flatMap({ channels(of: $0.path) }).map({ $0 > 1 }) ?? true { break }
                report(SceneIssue(file: file, line: node.line, field: field,
                                  reason: "a point source needs a position or a motion"))
            }
        }
        var bedLayout: BedLayoutName?
        if mode == .bed, let node = keys["layout"] { bedLayout = choice(node, "\(field).layout") }
        let turned = orientation(keys, field)
        let gain = keys["gain"].flatMap { number($0, "\(field).gain", in: -120...24, unit: "dB") } ?? 0
        let loop = keys["loop"].flatMap { bool($0, "\(field).loop") } ?? false
        let start = keys["start"].flatMap { number($0, "\(field).start", in: 0...Self.longestTimeline, unit: "s") } ?? 0
        let playing = keys["playing"].flatMap { bool($0, "\(field).playing") } ?? true
        let rate = keys["rate"].flatMap { number($0, "\(field).rate", in: 0.5...2, unit: "") } ?? 1
        var paths = RoomPaths.default
        if mode != .bed && mode != .bypass {
            if let node = keys["reverbBlend"], let value = number(node, "\(field).reverbBlend", in: 0...1, unit: "") { paths.reverbBlend = value }
            if let node = keys["obstruction"], let value = number(node, "\(field).obstruction", in: -100...0, unit: "dB") { paths.obstruction = value }
            if let node = keys["occlusion"], let value = number(node, "\(field).occlusion", in: -100...0, unit: "dB") { paths.occlusion = value }
        }

        var inHead = InHeadRendering.mono
        if mode != .bed && !headLocked, let node = keys["inHead"], let value: InHeadRendering = choice(node, "\(field).inHead") {
            inHead = value
        }

        var category = SourceCategory.scene
        if let node = keys["category"], let value: SourceCategory = choice(node, "\(field).category") { category = value }

        guard let audio else { return nil }
        let source = SourceDescription(id: id ?? "", audioPath: audio.path, audioField: audio.location, mode: mode,
                                       placement: placement, orientation: turned, gainDecibels: gain, loop: loop, start: start,
                                       rate: rate, paths: paths, bedLayout: bedLayout, algorithm: algorithm, inHead: inHead,
                                       category: category, playing: playing)
        if let fileNode = keys["file"] {
            inspect(audio.path, node: fileNode, field: "\(field).file") { source.channelProblem($0) }
        }
        guard issues.count == problemsBefore, id != nil else { return nil }
        return source
    }

    // MARK: Voice

    private func voice(_ node: YAMLNode, sourceIDs: Set<String>) -> VoiceDescription? {
        guard let keys = mapping(node, "voice", allowed: ["mic", "aec", "muted", "ducking", "participants", "network"]) else { return nil }
        var voice = VoiceDescription()
        if let node = keys["mic"], let name = string(node, "voice.mic") {
            switch name {
            case "default": voice.microphone = .device
            case "none": voice.microphone = .none
            default:
                if let audio = audioFile(node, "voice.mic") {
                    voice.microphone = .file(path: audio.path)
                    inspect(audio.path, node: node, field: "voice.mic") { channels in
                        channels == 1 ? nil : "a microphone recording has one channel; this file has \(channels)"
                    }
                }
            }
        }
        if let node = keys["aec"], let mode: EchoCancellationMode = choice(node, "voice.aec") { voice.echoCancellation = mode }
        if let node = keys["muted"], let muted = bool(node, "voice.muted") { voice.muted = muted }
        if let node = keys["ducking"], let ducking = mapping(node, "voice.ducking", allowed: ["level", "advanced", "levels"]) {
            if let node = ducking["level"], let level: DuckingLevel = choice(node, "voice.ducking.level") { voice.duckingLevel = level }
            if let node = ducking["advanced"], let advanced = bool(node, "voice.ducking.advanced") { voice.advancedDucking = advanced }
            if let node = ducking["levels"], let levels = mapping(node, "voice.ducking.levels", allowed: DuckingLevel.allCases.map(\.rawValue)) {
                for level in DuckingLevel.allCases {
                    if let node = levels[level.rawValue],
                       let value = number(node, "voice.ducking.levels.\(level.rawValue)", in: -60...0, unit: "dB") {
                        voice.duckingLevels[level] = value
                    }
                }
            }
        }
        if let node = keys["participants"] {
            voice.participants = participants(node, sourceIDs: sourceIDs)
        }
        if let node = keys["network"], let network = mapping(node, "voice.network", allowed: ["mumble"]),
           let node = network["mumble"] {
            voice.mumble = mumble(node)
        }
        return voice
    }

    private func mumble(_ node: YAMLNode) -> MumbleSettings? {
        let field = "voice.network.mumble"
        guard let keys = mapping(node, field, allowed: ["server", "channel", "user", "password", "context", "fingerprint",
                                                        "transmission", "bitrate"]) else { return nil }
        var address: (host: String, port: Int)?
        if let node = required(keys, "server", in: field, node), let text = string(node, "\(field).server") {
            switch MumbleSettings.parseServer(text) {
            case .success(let parsed): address = parsed
            case .failure(let problem): report(node, "\(field).server", value: text, "\(problem); expected HOST or HOST:PORT")
            }
        }
        /// A text field of at most `limit` bytes; one line without control characters unless `anyBytes`.
        func text(_ key: String, limit: Int, required isRequired: Bool, anyBytes: Bool = false) -> String? {
            guard let node = isRequired ? required(keys, key, in: field, node) : keys[key],
                  let value = string(node, "\(field).\(key)") else { return nil }
            if isRequired && value.trimmingCharacters(in: .whitespaces).isEmpty {
                report(node, "\(field).\(key)", value: value, "must not be empty")
                return nil
            }
            guard value.utf8.count <= limit, anyBytes || !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
                report(node, "\(field).\(key)", value: value, anyBytes ? "must be at most \(limit) bytes"
                       : "must be one line of at most \(limit) bytes, without control characters")
                return nil
            }
            return value
        }
        let channel = text("channel", limit: 512, required: true)
        let user = text("user", limit: 128, required: true)
        let password = text("password", limit: 512, required: false) ?? ""
        // Games put any bytes in a plugin context, NUL included.
        let context = text("context", limit: 128, required: false, anyBytes: true) ?? ""
        var fingerprint: String?
        if let node = keys["fingerprint"], let value = string(node, "\(field).fingerprint"), !value.isEmpty {
            fingerprint = MumbleSettings.normalizedFingerprint(value)
            if fingerprint == nil {
                report(node, "\(field).fingerprint", value: value, "expected the certificate's SHA-256: 64 hex digits, colons allowed")
            }
        }
        let transmission: MumbleSettings.Transmission? = keys["transmission"].map { choice($0, "\(field).transmission") } ?? .voiceActivity
        var bitrate: Int? = 40
        if let node = keys["bitrate"] {
            let range = MumbleSettings.bitrates
            bitrate = number(node, "\(field).bitrate", in: Double(range.lowerBound)...Double(range.upperBound), unit: "kbit/s").flatMap {
                guard $0 == $0.rounded() else {
                    report(node, "\(field).bitrate", value: scalarText(node), "must be a whole number of kbit/s")
                    return nil
                }
                return Int($0)
            }
        }
        guard let address, let channel, let user, let transmission, let bitrate else { return nil }
        return MumbleSettings(host: address.host, port: address.port, channel: channel, user: user, password: password,
                              context: context, fingerprint: fingerprint, transmission: transmission, bitrateKbps: bitrate)
    }

    private func participants(_ node: YAMLNode, sourceIDs: Set<String>) -> [Participant] {
        guard case let .sequence(list, _) = node else {
            report(node, "voice.participants", "expected a list of participants { id, file, position }")
            return []
        }
        var result: [Participant] = []
        var used = sourceIDs
        for (index, item) in list.enumerated() {
            let field = "voice.participants[\(index)]"
            guard let keys = mapping(item, field, allowed: ["id", "file", "position"]) else { continue }
            let id = required(keys, "id", in: field, item).flatMap { sourceID($0, "\(field).id") }
            if let id, let idNode = keys["id"] {
                if used.contains(id) {
                    report(idNode, "\(field).id", value: id, "id already used by a source or participant; participants are sources of the room too")
                }
                used.insert(id)
            }
            let audio = required(keys, "file", in: field, item).flatMap { audioFile($0, "\(field).file") }
            if let audio, let fileNode = keys["file"] {
                inspect(audio.path, node: fileNode, field: "\(field).file") { _ in nil }
            }
            let place = required(keys, "position", in: field, item).flatMap { position($0, "\(field).position") }
            if let id, let audio, let place {
                result.append(Participant(id: id, audioPath: audio.path, audioField: audio.location, position: place))
            }
        }
        return result
    }

    private func prompts(_ node: YAMLNode) -> [PromptDescription] {
        guard case let .sequence(list, _) = node else {
            report(node, "prompts", "expected a list of prompts { id, normal, short }")
            return []
        }
        var result: [PromptDescription] = []
        var used: Set<String> = []
        for (index, item) in list.enumerated() {
            let field = "prompts[\(index)]"
            guard let keys = mapping(item, field, allowed: ["id", "normal", "short"]) else { continue }
            let id = required(keys, "id", in: field, item).flatMap { sourceID($0, "\(field).id") }
            if let id, let idNode = keys["id"] {
                if used.contains(id) { report(idNode, "\(field).id", value: id, "id already used by another prompt") }
                used.insert(id)
            }
            func variant(_ key: String) -> (path: String, location: FieldLocation)? {
                guard let node = required(keys, key, in: field, item), let audio = audioFile(node, "\(field).\(key)") else { return nil }
                inspect(audio.path, node: node, field: "\(field).\(key)") { _ in nil }
                return audio
            }
            let normal = variant("normal"), short = variant("short")
            if let id, let normal, let short {
                result.append(PromptDescription(id: id, normalPath: normal.path, shortPath: short.path,
                                                normalField: normal.location, shortField: short.location))
            }
        }
        return result
    }

    private func sourceID(_ node: YAMLNode, _ field: String) -> String? {
        guard let id = string(node, field) else { return nil }
        guard !id.isEmpty, id.count <= 64, id.allSatisfy(Self.idCharacters.contains) else {
            report(node, field, value: id, "ids are 1-64 characters of a-z, 0-9, _ and -")
            return nil
        }
        return id
    }

    private func audioFile(_ node: YAMLNode, _ field: String) -> (path: String, location: FieldLocation)? {
        guard let name = string(node, field) else { return nil }
        let (path, problem) = located[name] ?? locate(name)
        located[name] = (path, problem)
        if let problem {
            report(node, field, value: name, problem)
            return nil
        }
        return (path, FieldLocation(file: file, line: node.line, field: field))
    }

    /// Where the audio file `name` is, and why it cannot be read if it cannot.
    private func locate(_ name: String) -> (path: String, problem: String?) {
        // C would end the name there and read another file.
        if name.contains("\u{0}") { return (name, "holds a NUL character; no file is named so") }
        let path = name.hasPrefix("/") ? name : (baseDirectory as NSString).appendingPathComponent(name)
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            return (path, "audio file not found (looked for \(path))")
        }
        if isDirectory.boolValue { return (path, "is a folder, not an audio file") }
        if !FileManager.default.isReadableFile(atPath: path) { return (path, "audio file is not readable (check its permissions)") }
        return (path, nil)
    }

    /// `path`'s header, read once however many entries name it; nil without an inspector.
    private func header(of path: String) -> Result<AudioFileInfo, Error>? {
        guard let inspectAudio else { return nil }
        let header = inspected[path] ?? Result { try inspectAudio(path) }
        inspected[path] = header
        return header
    }

    /// The channels `path`'s header gives; nil when it cannot be read.
    private func channels(of path: String) -> Int? { try? header(of: path)?.get().channels }

    private func inspect(_ path: String, node: YAMLNode, field: String, channelProblem: (Int) -> String?) {
        guard let header = header(of: path) else { return }
        let name = scalarText(node)
        do {
            let info = try header.get()
            if info.frames == 0 {
                report(node, field, value: name, "holds no audio frames")
            } else if let problem = channelProblem(info.channels) {
                report(node, field, value: name, problem)
            }
        } catch let rejection as AudioFileRejection {
            report(node, field, value: name, rejection.reason)
        } catch {
            report(node, field, value: name, "cannot read audio: \(error)")
        }
    }

    private func motion(_ node: YAMLNode, _ field: String) -> MotionPath? {
        guard let keys = mapping(node, field, allowed: ["keyframes", "repeat"]) else { return nil }
        let repeats = keys["repeat"].flatMap { bool($0, "\(field).repeat") } ?? false
        guard let listNode = required(keys, "keyframes", in: field, node) else { return nil }
        guard case let .sequence(list, _) = listNode, list.count >= 2 else {
            report(listNode, "\(field).keyframes", "expected a list of at least two keyframes { time, position }")
            return nil
        }
        var keyframes: [MotionPath.Keyframe] = []
        keyframes.reserveCapacity(list.count)
        for (index, item) in list.enumerated() {
            func itemField() -> String { "\(field).keyframes[\(index)]" }
            guard let frame = mapping(item, itemField(), allowed: ["time", "position"]),
                  let timeNode = required(frame, "time", in: itemField(), item),
                  let positionNode = required(frame, "position", in: itemField(), item),
                  let time = number(timeNode, "\(itemField()).time", in: 0...Self.longestTimeline, unit: "s"),
                  let position = position(positionNode, "\(itemField()).position") else { continue }
            if let previous = keyframes.last, time <= previous.time {
                report(timeNode, "\(itemField()).time", value: scalarText(timeNode),
                       "keyframe times must increase (the previous one is \(format(previous.time)) s)")
                continue
            }
            keyframes.append(.init(time: time, position: position))
        }
        return keyframes.count == list.count ? MotionPath(keyframes: keyframes, repeats: repeats) : nil
    }

    private func orientation(_ keys: [String: YAMLNode], _ field: String) -> Orientation {
        var result = Orientation.identity
        if let node = keys["yaw"], let value = number(node, "\(field).yaw", in: -360...360, unit: "degrees") { result.yaw = value }
        if let node = keys["pitch"], let value = number(node, "\(field).pitch", in: -90...90, unit: "degrees") { result.pitch = value }
        if let node = keys["roll"], let value = number(node, "\(field).roll", in: -180...180, unit: "degrees") { result.roll = value }
        return result
    }

    // MARK: Typed values
    // A field's name is an autoclosure: spelled out only for a report, as
    // most values have none, and a crowd's scene has tens of thousands of values.

    private func mapping(_ node: YAMLNode, _ field: @autoclosure () -> String, allowed: [String]) -> [String: YAMLNode]? {
        guard case let .mapping(mapping) = node else {
            let field = field()
            report(node, field, value: scalarText(node), field.isEmpty ? "expected a mapping of scene keys" : "expected a mapping")
            return nil
        }
        var result = [String: YAMLNode](minimumCapacity: mapping.pairs.count)
        for pair in mapping.pairs {
            guard let key = pair.key.scalar?.string else {
                report(pair.key, field(), "keys must be plain words")
                continue
            }
            if allowed.contains(key) {
                result[key] = pair.value
            } else {
                let field = field()
                let path = field.isEmpty ? key : "\(field).\(key)"
                let hint = Self.closest(to: key, among: allowed).map { "; did you mean \"\($0)\"?" }
                    ?? "; known keys: \(allowed.joined(separator: ", "))"
                report(pair.key, path, "unknown key\(hint)")
            }
        }
        return result
    }

    private func required(_ keys: [String: YAMLNode], _ key: String, in field: @autoclosure () -> String, _ parent: YAMLNode) -> YAMLNode? {
        if let node = keys[key] { return node }
        let field = field()
        report(SceneIssue(file: file, line: parent.line, field: field.isEmpty ? key : "\(field).\(key)",
                          reason: "missing required key \"\(key)\""))
        return nil
    }

    private func number(_ node: YAMLNode, _ field: @autoclosure () -> String, in range: ClosedRange<Double>, unit: String) -> Double? {
        guard let scalar = node.scalar, let value = scalar.double else {
            report(node, field(), value: scalarText(node), "expected a number\(unit.isEmpty ? "" : " (\(unit))")")
            return nil
        }
        guard value.isFinite else {
            report(node, field(), value: scalarText(node), "must be a finite number")
            return nil
        }
        guard range.contains(value) else {
            let units = unit.isEmpty ? "" : " \(unit)"
            report(node, field(), value: scalarText(node),
                   "must be between \(format(range.lowerBound)) and \(format(range.upperBound))\(units)")
            return nil
        }
        return value
    }

    private func positiveDistance(_ node: YAMLNode, _ field: String) -> Double? {
        guard let value = number(node, field, in: -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude, unit: "m") else { return nil }
        guard value > 0 else {
            report(node, field, value: scalarText(node), "a distance must be greater than 0 m")
            return nil
        }
        guard value <= Self.maximumCoordinate * 10 else {
            report(node, field, value: scalarText(node), "must be at most \(format(Self.maximumCoordinate * 10)) m")
            return nil
        }
        return value
    }

    private func positiveSeconds(_ node: YAMLNode, _ field: String) -> Double? {
        guard let value = number(node, field, in: 0...SceneDescription.longestDuration, unit: "s") else { return nil }
        guard value > 0 else {
            report(node, field, value: scalarText(node), "must be longer than 0 s")
            return nil
        }
        return value
    }

    private func position(_ node: YAMLNode, _ field: @autoclosure () -> String) -> Position? {
        guard case let .sequence(items, _) = node, items.count == 3 else {
            report(node, field(), value: scalarText(node), "expected [x, y, z] in metres")
            return nil
        }
        let limit = Self.maximumCoordinate
        func axis(_ index: Int, _ name: String) -> Double? {
            number(items[index], "\(field()).\(name)", in: -limit...limit, unit: "m")
        }
        let x = axis(0, "x"), y = axis(1, "y"), z = axis(2, "z")
        guard let x, let y, let z else { return nil }
        return Position(x, y, z)
    }

    private func string(_ node: YAMLNode, _ field: @autoclosure () -> String) -> String? {
        guard let scalar = node.scalar else {
            report(node, field(), "expected text")
            return nil
        }
        return scalar.string
    }

    private func bool(_ node: YAMLNode, _ field: @autoclosure () -> String) -> Bool? {
        guard let scalar = node.scalar, let value = scalar.bool else {
            report(node, field(), value: scalarText(node), "expected true or false")
            return nil
        }
        return value
    }

    private func choice<Choice: RawRepresentable & CaseIterable>(_ node: YAMLNode, _ field: @autoclosure () -> String) -> Choice?
    where Choice.RawValue == String {
        guard let text = node.scalar?.string, let value = Choice(rawValue: text) else {
            let names = Choice.allCases.map(\.rawValue)
            report(node, field(), value: scalarText(node), "expected one of \(names.joined(separator: ", "))")
            return nil
        }
        return value
    }

    // MARK: Reporting

    private func report(_ node: YAMLNode, _ field: String, value: String? = nil, _ reason: String) {
        report(SceneIssue(file: file, line: node.line, field: field, value: value, reason: reason))
    }

    private func report(_ issue: SceneIssue) { issues.append(issue) }

    /// The text of a scalar, or a word for what the node is instead.
    private func scalarText(_ node: YAMLNode) -> String? {
        switch node {
        case .scalar(let scalar): scalar.string
        case .sequence: "a list"
        case .mapping: "a mapping"
        }
    }

    private func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }

    /// The allowed key a typo most likely meant, within two edits.
    static func closest(to key: String, among allowed: [String]) -> String? {
        allowed.map { ($0, editDistance(key.lowercased(), $0.lowercased())) }
            .filter { $0.1 <= 2 }
            .min { $0.1 < $1.1 }?.0
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        var previous = Array(0...b.count)
        for (i, ca) in a.enumerated() {
            var current = [i + 1]
            for (j, cb) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (ca == cb ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}
