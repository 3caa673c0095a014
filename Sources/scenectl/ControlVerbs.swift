import ArgumentParser
import Control
import Engine
import Dispatch
import Foundation
import AudioCore
import Scene
import Spatial
import Voice

/// What every verb that steers a running roomd takes.
struct DaemonOptions: ParsableArguments {
    @Option(help: "roomd's control socket (default: $XDG_RUNTIME_DIR/roomd.sock).")
    var socket: String?

    @Flag(help: "Print the daemon's answer as JSON.")
    var json = false

    var client: ControlClient { ControlClient(path: socket ?? defaultControlSocketPath()) }
}

enum Switch: String, ExpressibleByArgument, CaseIterable {
    case on, off
    var isOn: Bool { self == .on }
}

extension DuckingLevel: ExpressibleByArgument {}
extension EchoCancellationMode: ExpressibleByArgument {}

/// A verb sent to roomd: the request, and how a person reads its answer.
protocol DaemonVerb: ParsableCommand {
    var daemon: DaemonOptions { get }
    func request() throws -> ControlProtocol.Request
    func describe(_ result: [String: Any]) -> String
}

extension DaemonVerb {
    func describe(_ result: [String: Any]) -> String { "ok" }

    func run() throws {
        let request = try request()
        let result = try waitFor { [client = daemon.client] in UncheckedResult(try await client.send(request)) }.value
        if daemon.json {
            let data = try JSONSerialization.data(withJSONObject: result, options: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
            print(String(decoding: data, as: UTF8.self))
        } else {
            print(describe(result))
        }
    }
}

/// The daemon's answer, carried back to the main thread.
struct UncheckedResult: @unchecked Sendable {
    let value: [String: Any]
    init(_ value: [String: Any]) { self.value = value }
}

/// Runs `body` to the end from synchronous code; its error ends the command with status 1.
func waitFor<Value: Sendable>(_ body: @escaping @Sendable () async throws -> Value) throws -> Value {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var outcome: Result<Value, Error>?
    Task {
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        done.signal()
    }
    done.wait()
    switch outcome! {
    case .success(let value): return value
    case .failure(let error):
        Console.error("scenectl: \(error)")
        throw ExitCode.failure
    }
}

/// An absolute path: the daemon runs in another folder.
func absolute(_ path: String) -> String {
    URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).standardizedFileURL.path
}

/// `X,Y,Z` or three numbers.
func position(_ values: [Double], _ name: String) throws -> Position {
    guard values.count == 3, values.allSatisfy(\.isFinite) else { throw ValidationError("\(name): expected three numbers X Y Z in metres") }
    return Position(values[0], values[1], values[2])
}

struct Status: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Show the running room: route, algorithms, sources, ducking, mute, latency, underruns.")
    @OptionGroup var daemon: DaemonOptions

    func request() -> ControlProtocol.Request { .init(verb: "status") }

    func describe(_ result: [String: Any]) -> String {
        var lines = ["\(result["scene"] ?? "?") at \(result["time"] ?? "?") s on \(result["server"] ?? "?") (\(result["device"] ?? "?"))"]
        let forced = result["routeForced"] as? Bool == true ? " (forced)" : ""
        lines.append("route: \(result["route"] ?? "?")\(forced), \(result["channels"] ?? "?") channels, algorithm \(result["algorithm"] ?? "?")")
        if let latency = result["latencyMs"] as? Double {
            lines.append(String(format: "latency: %.1f ms, underruns: %@", latency, "\(result["underruns"] ?? 0)"))
        } else {
            lines.append("underruns: \(result["underruns"] ?? 0)")
        }
        if let ducking = result["ducking"] as? [String: Any] {
            lines.append("ducking: \(ducking["level"] ?? "?") (\(ducking["depth"] ?? "?") dB), advanced \(ducking["advanced"] as? Bool == true ? "on" : "off")")
            lines.append("muted: \(result["muted"] as? Bool == true ? "yes" : "no")")
            if let aec = result["aec"] as? [String: Any] { lines.append("aec: \(aec["mode"] ?? "?") (\(aec["on"] as? Bool == true ? "on" : "off"))") }
        } else {
            lines.append("no voice session")
        }
        lines.append("prompt style: \(result["promptStyle"] ?? "?")")
        lines.append("microphone: \(result["microphone"] ?? "?"), sink: \(result["sink"] ?? "?")")
        if let network = result["network"] as? [String: Any] {
            lines.append("network: \(network["state"] ?? "?") with \(network["server"] ?? "?") in \(network["channel"] ?? "?") as \(network["user"] ?? "?"), "
                         + "\(network["talkers"] ?? 0) talkers, \(network["transmission"] ?? "?")")
            lines.append("  \(network["reason"] ?? "")")
        }
        for source in result["sources"] as? [[String: Any]] ?? [] {
            var line = "  \(source["id"] ?? "?"): \(source["mode"] ?? "?") via \(source["algorithm"] ?? "?"), gain \(source["gain"] ?? 0) dB"
            if let position = source["position"] as? [Double] {
                line += String(format: ", at [%.2f, %.2f, %.2f]", position[0], position[1], position[2])
            }
            if source["playing"] as? Bool == false { line += ", stopped" }
            lines.append(line)
        }
        return lines.joined(separator: "\n")
    }
}

struct Load: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Replace the running room with a scene; one that fails validation leaves the room as it is.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The scene file.") var scene: String

    func request() -> ControlProtocol.Request { .init(verb: "load", args: ["path": absolute(scene)]) }
    func describe(_ result: [String: Any]) -> String { "loaded \(result["scene"] ?? scene)" }
}

struct Add: DaemonVerb {
    static let configuration = CommandConfiguration(
        abstract: "Add a source to the running room, given as one scene-file source entry.",
        discussion: "SOURCE is a YAML or JSON flow mapping, validated as the scene file's own entries are; relative paths are "
            + "resolved against this folder. Example: scenectl add '{id: bell, file: audio/bell.wav, position: [2, 0, -1], loop: true}'")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The source entry.") var source: String

    func request() -> ControlProtocol.Request {
        .init(verb: "add", args: ["source": source, "cwd": FileManager.default.currentDirectoryPath])
    }

    func describe(_ result: [String: Any]) -> String { "added \(result["id"] ?? "?")" }
}

struct Remove: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Take a source out of the running room: it fades out over a block.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The source's id.") var id: String

    func request() -> ControlProtocol.Request { .init(verb: "remove", args: ["id": id]) }
}

struct SetProperty: DaemonVerb {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Set one property of a source, as its scene entry would: reverbBlend, obstruction, occlusion, rate, loop, "
            + "algorithm, mode, inHead, gain or playing.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The source's id.") var id: String
    @Argument(help: "The property, as the scene file names it.") var key: String
    @Argument(help: "Its value, as the scene file writes it; put -- before a negative one.") var value: String

    func request() -> ControlProtocol.Request { .init(verb: "set", args: ["id": id, "key": key, "value": value]) }
}

struct Move: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Move a point source, at once or gliding. Options first, then -- before negative numbers: move bard --over 500 -- -2 0 1")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The source's id.") var id: String
    @Argument(help: "X Y Z in metres (+X right, +Y up, -Z ahead).") var coordinates: [Double]
    @Option(help: "Glide there over this many milliseconds.") var over: Double = 0

    func validate() throws {
        _ = try position(coordinates, "position")
        guard over.isFinite, (0...600_000).contains(over) else { throw ValidationError("--over \(over): expected 0 to 600000 ms") }
    }

    func request() throws -> ControlProtocol.Request {
        let at = try position(coordinates, "position")
        return .init(verb: "move", args: ["id": id, "position": [at.x, at.y, at.z], "overMs": over])
    }
}

struct Moves: DaemonVerb {
    static let configuration = CommandConfiguration(
        abstract: "Move many point sources in one request, all from the same frame: a game's tick.",
        discussion: """
        Each entry is ID=X,Y,Z in metres: scenectl moves --over 33 bard=2,0,-1 hearth=-1.5,0,0. \
        With - as the only entry, the entries are read from standard input, separated by spaces or lines. \
        All or nothing: an unknown id, a source without a position or a bad coordinate refuses the \
        request, and none moves.
        """)
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "ID=X,Y,Z, or - to read them from standard input.") var entries: [String]
    @Option(help: "Glide there over this many milliseconds.") var over: Double = 0

    /// Whether the entries come on standard input.
    var readsStandardInput: Bool { entries == ["-"] }

    func validate() throws {
        guard !entries.isEmpty else { throw ValidationError("give ID=X,Y,Z entries, or - to read them from standard input") }
        if !readsStandardInput { _ = try Self.positions(entries) }
        guard over.isFinite, (0...600_000).contains(over) else { throw ValidationError("--over \(over): expected 0 to 600000 ms") }
    }

    func request() throws -> ControlProtocol.Request {
        let given = readsStandardInput
            ? String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self).split(whereSeparator: \.isWhitespace).map(String.init)
            : entries
        let positions = try Self.positions(given)
        return .init(verb: "moves", args: ["sources": positions.mapValues { [$0.x, $0.y, $0.z] }, "overMs": over])
    }

    func describe(_ result: [String: Any]) -> String { "moved \(result["moved"] ?? 0)" }

    /// `ID=X,Y,Z` entries by id; an entry that is not one, or an id given twice, is a usage error.
    static func positions(_ entries: [String]) throws -> [String: Position] {
        guard !entries.isEmpty else { throw ValidationError("no ID=X,Y,Z entries") }
        var positions = [String: Position](minimumCapacity: entries.count)
        for entry in entries {
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let numbers = parts.count == 2 ? parts[1].split(separator: ",", omittingEmptySubsequences: false).compactMap { Double($0) } : []
            guard parts.count == 2, !parts[0].isEmpty, numbers.count == 3, numbers.allSatisfy({ $0.isFinite && abs($0) <= 10_000 }) else {
                throw ValidationError("\(entry): expected ID=X,Y,Z in metres, each within 10 km")
            }
            let id = String(parts[0])
            guard positions.updateValue(Position(numbers[0], numbers[1], numbers[2]), forKey: id) == nil else {
                throw ValidationError("\(entry): source \(id) is given twice")
            }
        }
        return positions
    }
}

struct Listener: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Move or turn the listener; what is not given stays.")
    @OptionGroup var daemon: DaemonOptions
    // Also X,Y,Z in one: a negative coordinate after a space would read as an option.
    @Option(parsing: .upToNextOption, help: "X Y Z in metres, or X,Y,Z (which takes negative numbers).") var position: [String] = []
    // Unconditional: an angle may be negative, and would otherwise read as an option.
    @Option(parsing: .unconditional, help: "Degrees, +90 faces right.") var yaw: Double?
    @Option(parsing: .unconditional, help: "Degrees, +90 faces up.") var pitch: Double?
    @Option(parsing: .unconditional, help: "Degrees.") var roll: Double?

    /// The numbers `--position` gives, spaced or comma-separated; nil where one is not a number.
    private var coordinates: [Double]? {
        let values = position.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map { Double($0) }
        return values.contains(nil) ? nil : values.compactMap { $0 }
    }

    func validate() throws {
        if !position.isEmpty { _ = try scenectl.position(coordinates ?? [], "--position") }
        guard !position.isEmpty || yaw != nil || pitch != nil || roll != nil else {
            throw ValidationError("give --position, --yaw, --pitch or --roll")
        }
        try finiteAngles([("--yaw", yaw), ("--pitch", pitch), ("--roll", roll)])
    }

    func request() throws -> ControlProtocol.Request {
        var args: [String: Any] = [:]
        if let coordinates, !coordinates.isEmpty { args["position"] = coordinates }
        if let yaw { args["yaw"] = yaw }
        if let pitch { args["pitch"] = pitch }
        if let roll { args["roll"] = roll }
        return .init(verb: "listener", args: args)
    }
}

struct Turn: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Turn the listener: yaw, and optionally pitch and roll, in degrees.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "Degrees, +90 faces right.") var yaw: Double
    @Argument(help: "Degrees.") var pitch: Double?
    @Argument(help: "Degrees.") var roll: Double?

    func validate() throws { try finiteAngles([("yaw", yaw), ("pitch", pitch), ("roll", roll)]) }

    func request() -> ControlProtocol.Request {
        var args: [String: Any] = ["yaw": yaw]
        if let pitch { args["pitch"] = pitch }
        if let roll { args["roll"] = roll }
        return .init(verb: "listener", args: args)
    }
}

/// An angle that is not a number has no direction, and the protocol's JSON cannot carry it.
private func finiteAngles(_ angles: [(name: String, degrees: Double?)]) throws {
    for case let (name, degrees?) in angles where !degrees.isFinite {
        throw ValidationError("\(name) \(degrees): expected a finite angle in degrees")
    }
}

struct Gain: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Set a source's gain in dB.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The source's id.") var id: String
    @Argument(help: "Gain in dB, -120 to 24.") var decibels: Double

    func validate() throws {
        guard decibels.isFinite, (-120...24).contains(decibels) else { throw ValidationError("gain \(decibels): expected -120 to 24 dB") }
    }

    func request() -> ControlProtocol.Request { .init(verb: "gain", args: ["id": id, "db": decibels]) }
}

struct Play: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Play a source from its beginning.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The source's id.") var id: String
    func request() -> ControlProtocol.Request { .init(verb: "play", args: ["id": id]) }
}

struct Stop: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Stop a source.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The source's id.") var id: String
    func request() -> ControlProtocol.Request { .init(verb: "stop", args: ["id": id]) }
}

struct Duck: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Set how the scene ducks under voice.")
    @OptionGroup var daemon: DaemonOptions
    @Option(help: "default, min, mid or max.") var level: DuckingLevel?
    @Option(help: "on: duck only while someone talks; off: hold the depth through the session.") var advanced: Switch?

    func validate() throws {
        guard level != nil || advanced != nil else { throw ValidationError("give --level, --advanced or both") }
    }

    func request() -> ControlProtocol.Request {
        var args: [String: Any] = [:]
        if let level { args["level"] = level.rawValue }
        if let advanced { args["advanced"] = advanced.isOn }
        return .init(verb: "duck", args: args)
    }
}

struct Mute: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Mute the microphone's uplink; detection keeps running to tell a muted talker.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "on or off.") var state: Switch
    func request() -> ControlProtocol.Request { .init(verb: "mute", args: ["on": state.isOn]) }
}

struct Talkers: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "List the remote talkers: id, position, talking, packets lost, jitter-buffer delay.")
    @OptionGroup var daemon: DaemonOptions

    func request() -> ControlProtocol.Request { .init(verb: "talkers") }

    func describe(_ result: [String: Any]) -> String {
        let talkers = result["talkers"] as? [[String: Any]] ?? []
        guard !talkers.isEmpty else { return "nobody else is in the channel" }
        return talkers.map { talker in
            let position = talker["position"] as? [Double] ?? [0, 0, 0]
            let placed = talker["positional"] as? Bool == true ? "from its packets" : "on the arc"
            return String(format: "%@ (session %@): at [%.2f, %.2f, %.2f] %@, %@, gain %@ dB%@, lost %@, jitter buffer %.0f ms",
                          "\(talker["id"] ?? "?")", "\(talker["session"] ?? "?")", position[0], position[1], position[2], placed,
                          talker["talking"] as? Bool == true ? "talking" : "quiet", "\(talker["gain"] ?? 0)",
                          talker["muted"] as? Bool == true ? ", muted" : "", "\(talker["packetsLost"] ?? 0)",
                          talker["jitterDelayMs"] as? Double ?? 0)
        }.joined(separator: "\n")
    }
}

struct Talker: DaemonVerb {
    static let configuration = CommandConfiguration(
        abstract: "Set a remote talker's volume (talker ID gain DB) or mute them here (talker ID mute on|off).")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The talker's user name on the server.") var id: String
    @Argument(help: "gain or mute.") var property: String
    @Argument(help: "dB from -60 to 24 for gain; on or off for mute.") var value: String

    func validate() throws {
        switch property {
        case "gain":
            guard let db = Double(value), db.isFinite, (-60...24).contains(db) else {
                throw ValidationError("talker \(id) gain \(value): expected dB from -60 to 24")
            }
        case "mute":
            guard Switch(argument: value) != nil else { throw ValidationError("talker \(id) mute \(value): expected on or off") }
        default:
            throw ValidationError("talker \(id) \(property): expected gain DB or mute on|off")
        }
    }

    func request() -> ControlProtocol.Request {
        property == "gain" ? .init(verb: "talker", args: ["id": id, "db": Double(value)!])
            : .init(verb: "talker", args: ["id": id, "mute": Switch(argument: value)!.isOn])
    }
}

struct Ptt: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Hold (on) or release (off) push-to-talk, for a room that sends with transmission: pushToTalk.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "on or off.") var state: Switch
    func request() -> ControlProtocol.Request { .init(verb: "ptt", args: ["on": state.isOn]) }
}

struct Aec: DaemonVerb {
    static let configuration = CommandConfiguration(commandName: "aec", abstract: "Switch echo cancellation: on, off or auto.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "on, off or auto.") var mode: EchoCancellationMode
    func request() -> ControlProtocol.Request { .init(verb: "aec", args: ["mode": mode.rawValue]) }
}

struct Route: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Force a route, or follow the device again with auto.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "auto, headphones, headset, speakers, builtInSpeakers, externalSpeakers, surround51, surround71 or mono.")
    var route: OutputRoute
    func request() -> ControlProtocol.Request { .init(verb: "route", args: ["route": route.rawValue]) }
}

struct Mic: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Take the microphone from a recording (looping), or from the device again with default.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "default, or an audio file.") var source: String
    func request() -> ControlProtocol.Request { .init(verb: "mic", args: ["file": source == "default" ? source : absolute(source)]) }
}

struct Sink: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Play the room into a WAV file instead of the device (sink record FILE), or on the device again (sink default).")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "default, or record.") var target: String
    @Argument(help: "The WAV file, after record.") var file: String?
    @Flag(help: "Replace the file if it exists.") var force = false

    func validate() throws {
        switch (target, file) {
        case ("default", nil), ("record", _?): break
        default: throw ValidationError("expected: sink default, or sink record FILE")
        }
    }

    func request() -> ControlProtocol.Request {
        .init(verb: "sink", args: ["record": file.map(absolute) ?? "default", "force": force])
    }
}

struct Prompt: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Play a prompt in the variant the prompt style allows.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The prompt's id.") var id: String
    func request() -> ControlProtocol.Request { .init(verb: "prompt", args: ["id": id]) }
}

struct Save: DaemonVerb {
    static let configuration = CommandConfiguration(abstract: "Write the room as it is now as a scene file that loads again.")
    @OptionGroup var daemon: DaemonOptions
    @Argument(help: "The scene file to write.") var file: String
    @Flag(help: "Replace the file if it exists.") var force = false
    func request() -> ControlProtocol.Request { .init(verb: "save", args: ["path": absolute(file), "force": force]) }
    func describe(_ result: [String: Any]) -> String { "saved \(result["path"] ?? file)" }
}

struct Events: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the room's events as JSON lines until interrupted.",
        discussion: """
        Every event carries `seq`, its place in roomd's stream. A client that \
        reconnects passes the last seq it saw to --since, and the stream's \
        name to --stream, and gets what it missed first, from the last \
        \(RoomSession.keptEvents) events roomd keeps; what is older is said on \
        standard error, as are the stream's name and its last seq. A roomd \
        started anew has another stream: it replays all it keeps. `t` is seconds on the room's \
        timeline, which starts again at each `load`: events after one carry \
        `epoch`, the number of scenes loaded.
        """
    )
    @OptionGroup var daemon: DaemonOptions
    @Option(help: "Replay the kept events after this seq first (0: every kept event).") var since: Int?
    @Option(help: "The stream --since counts in, as an earlier run named it.") var stream: String?
    @Option(help: "Only these events, comma-separated: \(EngineEvent.names.joined(separator: ", ")).")
    var only: String?

    var kinds: [String]? { only.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } }

    func validate() throws {
        if let since, since < 0 { throw ValidationError("--since must be a seq of 0 or more, got \(since)") }
        if stream != nil && since == nil { throw ValidationError("--stream names what --since counts in; give --since too") }
        if let unknown = kinds?.first(where: { !EngineEvent.names.contains($0) }) {
            throw ValidationError("--only: \"\(unknown)\" is no event; the events are \(EngineEvent.names.joined(separator: ", "))")
        }
    }

    func run() throws {
        try waitFor { [client = daemon.client, since, stream, kinds] in
            try await client.events(since: since, stream: stream, only: kinds, started: { result in
                guard let since else { return }
                let name = result["stream"] as? String ?? "?"
                if let stream, stream != name {
                    Console.error("roomd started anew (stream \(name)); replaying all it keeps")
                } else if let missed = result["missed"] as? Int, missed > 0 {
                    Console.error("events \(since + 1) to \(since + missed) are no longer kept; following from \(since + missed + 1)")
                }
                Console.error("stream \(name), last seq \(result["lastSeq"] ?? 0)")
            }) { line in Console.out(line) } // Unbuffered, so a pipe sees each event as it happens.
        }
    }
}
