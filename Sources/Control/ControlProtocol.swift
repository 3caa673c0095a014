import Engine
import Foundation

/// The control protocol: one JSON object per line each way.
///
///     -> {"v":1,"verb":"move","args":{"id":"bard","position":[2,0,-1],"overMs":500}}
///     <- {"v":1,"ok":true,"result":{...}}
///     <- {"v":1,"ok":false,"error":"no source \"bart\" in this room; it has hearth, bard"}
///
/// `events` answers ok, then sends `{"v":1,"event":{...}}` lines until the
/// client closes. A request of another version is refused, so clients and
/// daemons of different versions say so instead of guessing.
public enum ControlProtocol {
    public static let version = 1
    /// The longest request line; a longer one is refused and the connection closed.
    /// A `moves` of 4096 sources with 64-character ids and full-precision
    /// coordinates comes to about 600 KB.
    public static let maximumLineBytes = 1024 * 1024

    public static let verbs = ["status", "load", "add", "remove", "set", "move", "moves", "listener", "gain", "play", "stop", "duck", "mute",
                               "aec", "route", "mic", "sink", "prompt", "events", "save", "talkers", "talker", "ptt"]

    /// A request line: its verb and arguments.
    /// Its arguments are JSON values that nobody else holds.
    public struct Request: @unchecked Sendable {
        public var verb: String
        public var args: [String: Any]

        public init(verb: String, args: [String: Any] = [:]) {
            self.verb = verb
            self.args = args
        }

        public var line: String { ControlProtocol.line(["v": ControlProtocol.version, "verb": verb, "args": args]) }

        public init(line: Data) throws {
            let object: Any
            do {
                object = try JSONSerialization.jsonObject(with: line)
            } catch {
                throw SessionError.refused("malformed request: " + (Self.numberOutOfRange(error) ?? "not a JSON object on one line"))
            }
            guard let fields = object as? [String: Any] else {
                throw SessionError.refused("malformed request: not a JSON object on one line")
            }
            // JSON's true would pass for 1 through Foundation's numbers.
            guard let version = fields["v"], !Arguments.isBoolean(version), version is NSNumber,
                  version as? Int == ControlProtocol.version else {
                let shown: String = switch fields["v"] {
                case nil: "missing"
                case let text as String: "\"\(text)\" (text; the version is a number)"
                case let other? where Arguments.isBoolean(other): "\(other as? Bool == true) (not a number)"
                case let other?: "\(other)"
                }
                throw SessionError.refused("\"v\": \(shown); this daemon speaks protocol version \(ControlProtocol.version), as {\"v\": \(ControlProtocol.version), ...}")
            }
            guard let verb = fields["verb"] as? String else { throw SessionError.refused("malformed request: no \"verb\"") }
            guard let args = (fields["args"] ?? [String: Any]()) as? [String: Any] else {
                throw SessionError.refused("malformed request: \"args\" must be an object")
            }
            self.verb = verb
            self.args = args
        }

        /// Foundation refuses a number beyond a double's range, such as 1e309,
        /// as it refuses broken JSON; its debug text names the number.
        private static func numberOutOfRange(_ error: Error) -> String? {
            guard let text = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String,
                  text.hasPrefix("Number "), text.hasSuffix(" is not representable in Swift.") else { return nil }
            let number = text.dropFirst("Number ".count).dropLast(" is not representable in Swift.".count)
            let shown = number.count > 40 ? "\(number.prefix(20))... (\(number.count) characters)" : String(number)
            return "the number \(shown) is beyond the range of a double (about 1.8e308)"
        }
    }

    public static func ok(_ result: [String: Any] = [:]) -> String { line(["v": version, "ok": true, "result": result]) }
    public static func error(_ message: String) -> String { line(["v": version, "ok": false, "error": message]) }
    public static func event(_ event: EngineEvent) -> String { "{\"v\":\(version),\"event\":\(event.jsonLine)}" }

    static func line(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }
}

/// Runs requests against a room.
public struct ControlService: Sendable {
    public let session: RoomSession

    public init(session: RoomSession) {
        self.session = session
    }

    /// Subscribes for an `events` request: `since` (a `seq`, 0 for every
    /// kept event) replays what the client missed, `only` names the kinds.
    public func subscription(for request: ControlProtocol.Request) throws -> EventSubscription {
        let args = Arguments(verb: request.verb, values: request.args)
        let since = try args.number("since", in: 0...Double(Int32.max))
        if let since, since.rounded() != since { throw args.refuse("since", request.args["since"], "expected a whole seq") }
        let stream = try args.optionalString("stream")
        return try session.subscribe(since: since.map { Int($0) }, stream: stream, only: try args.strings("only").map(Set.init))
    }

    /// The `events` request's answer, before the stream: where it starts and what it could not replay.
    public static func streamingResult(_ subscription: EventSubscription) -> [String: Any] {
        ["streaming": "events", "lastSeq": subscription.lastSeq, "replayed": subscription.replayed, "missed": subscription.missed,
         "stream": subscription.stream]
    }

    /// Carries out `request` and returns its result; throws what to tell the client.
    public func perform(_ request: ControlProtocol.Request) throws -> [String: Any] {
        let args = Arguments(verb: request.verb, values: request.args)
        switch request.verb {
        case "status": return session.status()
        case "load": return ["scene": try session.load(path: try args.string("path"))]
        case "add":
            // Relative paths are the client's: it says where it stands.
            let folder = try args.string("cwd")
            guard folder.hasPrefix("/") else { throw args.refuse("cwd", folder, "expected an absolute folder") }
            return ["id": try session.add(entry: try args.string("source"), relativeTo: folder)]
        case "remove": try session.remove(try args.string("id")); return [:]
        case "set":
            try session.set(try args.string("id"), key: try args.string("key"), value: try args.string("value"))
            return [:]
        case "move":
            let id = try args.string("id")
            try session.move(id, to: try args.position("position"), overMilliseconds: try args.number("overMs", in: 0...RoomSession.longestGlideMilliseconds) ?? 0)
            return [:]
        case "moves":
            let positions = try args.positions("sources")
            do {
                try session.move(positions, overMilliseconds: try args.number("overMs", in: 0...RoomSession.longestGlideMilliseconds) ?? 0)
            } catch let refusal as RoomSession.MovesRefusal {
                throw args.refuse("sources.\(refusal.id)", args.entry("sources", refusal.id), refusal.description)
            }
            return ["moved": positions.count]
        case "listener":
            try session.setListener(position: try args.optionalPosition("position"), yaw: try args.number("yaw", in: -360...360),
                                       pitch: try args.number("pitch", in: -90...90), roll: try args.number("roll", in: -180...180))
            return [:]
        case "gain":
            try session.setGain(try args.string("id"), decibels: try args.required(args.number("db", in: -120...24), "db"))
            return [:]
        case "play": try session.play(try args.string("id")); return [:]
        case "stop": try session.stop(try args.string("id")); return [:]
        case "duck":
            try session.setDucking(level: try args.choice("level"), advanced: try args.bool("advanced"))
            return [:]
        case "mute": try session.setMuted(try args.required(args.bool("on"), "on")); return [:]
        case "aec":
            try session.setEchoCancellation(try args.required(args.choice("mode"), "mode"))
            return [:]
        case "route":
            let name = try args.string("route")
            if name == "auto" {
                try session.forceRoute(nil)
            } else {
                guard let route = OutputRoute(rawValue: name) else {
                    throw SessionError.refused("route \"\(name)\": expected auto or one of \(OutputRoute.allCases.filter { $0 != .auto }.map(\.rawValue).joined(separator: ", "))")
                }
                try session.forceRoute(route)
            }
            return [:]
        case "mic":
            let file = try args.absolutePath("file", or: "default")
            try session.setMicrophone(file: file == "default" ? nil : file)
            return [:]
        case "sink":
            let record = try args.absolutePath("record", or: "default")
            try session.setSink(recordTo: record == "default" ? nil : record, force: try args.bool("force") ?? false)
            return [:]
        case "prompt": try session.triggerPrompt(try args.string("id")); return [:]
        case "talkers": return ["talkers": try network(args).talkers()]
        case "talker":
            let network = try network(args), id = try args.string("id")
            let gain = try args.number("db", in: -60...24), muted = try args.bool("mute")
            guard gain != nil || muted != nil else { throw args.refuse("db", nil, "give db (-60 to 24) or mute (true or false)") }
            if let gain { try network.setTalkerGain(id, decibels: gain) }
            if let muted { try network.setTalkerMuted(id, muted: muted) }
            return [:]
        case "ptt": try network(args).setPushToTalk(try args.required(args.bool("on"), "on")); return [:]
        case "save":
            let path = try args.absolutePath("path")
            try session.save(to: path, force: try args.bool("force") ?? false)
            return ["path": path]
        default:
            throw SessionError.unknown("unknown verb \"\(request.verb)\"; the verbs are \(ControlProtocol.verbs.joined(separator: ", "))")
        }
    }
}

extension ControlService {
    /// The voice network the talker verbs reach; a room that joined none refuses them.
    fileprivate func network(_ args: Arguments) throws -> VoiceNetwork {
        guard let network = session.voiceNetwork else {
            throw SessionError.refused("\(args.verb): the room joined no voice network (voice.network.mumble in its scene)")
        }
        return network
    }
}

/// A request's arguments, each read with a message naming the verb, the field and the value.
struct Arguments {
    let verb: String
    let values: [String: Any]

    func refuse(_ field: String, _ value: Any?, _ reason: String) -> SessionError {
        .refused("\(verb): \(field): \(value.map { "\($0)" } ?? "missing"): \(reason)")
    }

    func required<Value>(_ value: Value?, _ field: String) throws -> Value {
        guard let value else { throw refuse(field, nil, "required") }
        return value
    }

    func string(_ field: String) throws -> String {
        guard let value = values[field] as? String, !value.isEmpty else { throw refuse(field, values[field], "expected text") }
        // C would end the text there: a path would name another file than the one asked for.
        guard !value.contains("\u{0}") else { throw refuse(field, value, "holds a NUL character") }
        return value
    }

    /// An absolute path, or `word` (such as `default`) where the verb takes one: the daemon's
    /// working folder is not the client's.
    func absolutePath(_ field: String, or word: String? = nil) throws -> String {
        let value = try string(field)
        guard value == word || value.hasPrefix("/") else {
            throw refuse(field, value, "expected an absolute path" + (word.map { " or \($0)" } ?? ""))
        }
        return value
    }

    func number(_ field: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let raw = values[field] else { return nil }
        guard !Self.isBoolean(raw), let number = raw as? NSNumber else { throw refuse(field, raw, "expected a number") }
        let value = number.doubleValue
        guard value.isFinite, range.contains(value) else {
            throw refuse(field, raw, "out of range \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    func optionalString(_ field: String) throws -> String? {
        guard values[field] != nil else { return nil }
        return try string(field)
    }

    /// A list of text, such as `events`' `only`.
    func strings(_ field: String) throws -> [String]? {
        guard let raw = values[field] else { return nil }
        guard let list = raw as? [String], !list.isEmpty, list.allSatisfy({ !$0.isEmpty }) else {
            throw refuse(field, raw, "expected a list of names")
        }
        return list
    }

    func bool(_ field: String) throws -> Bool? {
        guard let raw = values[field] else { return nil }
        guard Self.isBoolean(raw), let value = raw as? Bool else { throw refuse(field, raw, "expected true or false") }
        return value
    }

    /// JSON's true and false, which Foundation hands over as numbers of C type char.
    static func isBoolean(_ raw: Any) -> Bool {
        if let number = raw as? NSNumber { return String(cString: number.objCType) == "c" }
        return raw is Bool
    }

    func choice<Choice: RawRepresentable & CaseIterable>(_ field: String) throws -> Choice? where Choice.RawValue == String {
        guard let raw = values[field] else { return nil }
        guard let text = raw as? String, let value = Choice(rawValue: text) else {
            throw refuse(field, raw, "expected one of \(Choice.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return value
    }

    func optionalPosition(_ field: String) throws -> Position? {
        guard let raw = values[field] else { return nil }
        guard let position = Self.position(raw) else { throw refuse(field, raw, Self.positionRule) }
        return position
    }

    func position(_ field: String) throws -> Position { try required(optionalPosition(field), field) }

    /// `moves`' object of ids to positions. Every entry is checked; the
    /// first bad one in id order is named, with how many others are bad.
    func positions(_ field: String) throws -> [String: Position] {
        guard let entries = values[field] as? [String: Any], !entries.isEmpty else {
            throw refuse(field, values[field], "expected an object of source ids to [x, y, z], at least one")
        }
        var positions = [String: Position](minimumCapacity: entries.count)
        var refused: [String] = []
        for (id, raw) in entries {
            if let position = Self.position(raw) { positions[id] = position } else { refused.append(id) }
        }
        if let first = refused.min() {
            throw refuse("\(field).\(first)", entries[first],
                         Self.positionRule + RoomSession.MovesRefusal.nothingMoved(othersRefused: refused.count - 1))
        }
        return positions
    }

    /// The value of `id` in the object `field`, as the client sent it.
    func entry(_ field: String, _ id: String) -> Any? { (values[field] as? [String: Any])?[id] }

    static let positionRule = "expected [x, y, z] in metres, each within 10 km"

    /// `raw` as a position: three finite numbers within 10 km, not true or false.
    static func position(_ raw: Any) -> Position? {
        // JSON's true and false would pass for 1 and 0 through Foundation's numbers.
        guard let numbers = raw as? [NSNumber], numbers.count == 3, !numbers.contains(where: isBoolean),
              numbers.allSatisfy({ $0.doubleValue.isFinite && abs($0.doubleValue) <= 10_000 }) else { return nil }
        return Position(numbers[0].doubleValue, numbers[1].doubleValue, numbers[2].doubleValue)
    }
}
