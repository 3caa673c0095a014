import Foundation
import Spatial
import Voice

/// Something the engine tells the app, stamped with where on the room's
/// timeline it happened.
public struct EngineEvent: Sendable, Equatable {
    /// Frames at the engine's rate from the start of the room.
    public var frame: Int
    /// What happened.
    public var kind: Kind
    /// Which room of a live session the frame counts in: 0 for the scene
    /// it started with, one more for each `load` (modulo 32768), whose room
    /// starts its timeline at 0 again.
    public var epoch: Int
    /// Its place in the stream it was published in, from 1, so a client
    /// that reconnects can ask for what it missed; 0 until it is published.
    public var seq = 0

    /// An event at `frame` on the timeline of the room of `epoch`.
    public init(frame: Int, kind: Kind, epoch: Int = 0) {
        self.frame = frame
        self.kind = kind
        self.epoch = epoch
    }

    /// Seconds from the start of the room.
    public var seconds: Double { Double(frame) / Double(Room.sampleRate) }

    /// What the engine reports: voice activity, ducking, prompts, route and
    /// device changes, and what the live side saw happen.
    public enum Kind: Sendable, Equatable {
        /// Which echo-cancellation mode the uplink runs, and why.
        case echoCancellation(on: Bool, reason: String)
        /// A talker started talking: `local` (by voice activity after echo
        /// cancellation, unmuted), a participant's id, or a remote talker's
        /// with its session on the server.
        case speechStarted(talker: String, session: Int? = nil)
        /// A talker stopped talking, after the detector's hangover or the end of a remote talker's spurt.
        case speechEnded(talker: String, session: Int? = nil)
        /// The muted local talker started talking: the app may say "you are muted".
        case mutedSpeechStarted
        /// The muted local talker has been quiet for 500 ms.
        case mutedSpeechEnded
        /// The scene's gain starts towards a new target: a depth in dB, or 0 when it eases back.
        case duckingChanged(targetDecibels: Double)
        /// How verbose the app's voice prompts may be now.
        case promptStyleChanged(PromptStyle)
        /// A prompt played in a style's variant, after waiting `waited` seconds.
        case promptPlayed(id: String, variant: PromptStyle, waited: Double)
        /// A prompt that will not play: it waited out its timeout while nobody
        /// could hear it, or `RoomEngine.promptQueueCapacity` already waited.
        case promptDropped(id: String, waited: Double)
        /// The output's route changed, and with it the automatic algorithm.
        case routeChanged(from: OutputRoute, to: OutputRoute, algorithm: RenderAlgorithm)
        /// The sound server ran out of audio to play; `total` since the room started.
        case underrun(total: Int)
        /// The sound server went away or stopped answering; the room plays on its own clock.
        case serverLost
        /// The sound server answers again and the room plays on it, `afterSeconds` after it was lost.
        case serverReconnected(afterSeconds: Double)
        /// The capture records from another device now; the room's own output monitor is silenced.
        case microphoneChanged(device: String, roomOutputMonitor: Bool)
        /// A new scene replaced the room.
        case sceneLoaded(name: String)
        /// A recording stopped before it was asked to (a full disk); the room plays on.
        case recordingStopped(path: String, reason: String)
        /// A remote user is in the room's channel: a talker of the room, by
        /// its user name, with its session on the server.
        case talkerJoined(talker: String, session: Int)
        /// A remote talker left the channel or the server, or the connection to it was lost.
        case talkerLeft(talker: String, session: Int, reason: String)
        /// The connection to the voice server changed: `connecting`,
        /// `connected`, `lost` or `rejected`, with why, naming the server.
        case connectionChanged(state: String, reason: String)
    }

    /// The event's name on the wire: `speechStarted`, `routeChanged`, ...
    public var name: String { Self.name(of: kind) }

    /// The names of every kind of event, as `events --only` takes them.
    public static let names = ["echoCancellation", "speechStarted", "speechEnded", "mutedSpeechStarted", "mutedSpeechEnded",
                               "duckingChanged", "promptStyleChanged", "promptPlayed", "promptDropped", "routeChanged",
                               "underrun", "serverLost", "serverReconnected", "microphoneChanged", "sceneLoaded", "recordingStopped",
                               "talkerJoined", "talkerLeft", "connectionChanged"]

    private static func name(of kind: Kind) -> String {
        switch kind {
        case .echoCancellation: "echoCancellation"
        case .speechStarted: "speechStarted"
        case .speechEnded: "speechEnded"
        case .mutedSpeechStarted: "mutedSpeechStarted"
        case .mutedSpeechEnded: "mutedSpeechEnded"
        case .duckingChanged: "duckingChanged"
        case .promptStyleChanged: "promptStyleChanged"
        case .promptPlayed: "promptPlayed"
        case .promptDropped: "promptDropped"
        case .routeChanged: "routeChanged"
        case .underrun: "underrun"
        case .serverLost: "serverLost"
        case .serverReconnected: "serverReconnected"
        case .microphoneChanged: "microphoneChanged"
        case .sceneLoaded: "sceneLoaded"
        case .recordingStopped: "recordingStopped"
        case .talkerJoined: "talkerJoined"
        case .talkerLeft: "talkerLeft"
        case .connectionChanged: "connectionChanged"
        }
    }

    /// The event as one line of JSON, as `--events` files and the control
    /// socket carry it: `seq` once published, `t` in seconds on the room's
    /// timeline, and `epoch` after a live session loaded another scene.
    public var jsonLine: String {
        var fields: [(String, Any)] = seq > 0 ? [("seq", seq)] : []
        fields.append(("t", (seconds * 1_000).rounded() / 1_000))
        if epoch > 0 { fields.append(("epoch", epoch)) }
        fields.append(("event", name))
        switch kind {
        case .echoCancellation(let on, let reason): fields += [("mode", on ? "on" : "off"), ("reason", reason)]
        case .speechStarted(let talker, let session), .speechEnded(let talker, let session):
            fields.append(("talker", talker))
            if let session { fields.append(("session", session)) }
        case .mutedSpeechStarted, .mutedSpeechEnded, .serverLost: break
        case .duckingChanged(let target): fields.append(("targetDecibels", target))
        case .promptStyleChanged(let style): fields.append(("style", style.rawValue))
        case .promptPlayed(let id, let variant, let waited):
            fields += [("prompt", id), ("variant", variant.rawValue), ("waited", (waited * 1_000).rounded() / 1_000)]
        case .promptDropped(let id, let waited): fields += [("prompt", id), ("waited", (waited * 1_000).rounded() / 1_000)]
        case .routeChanged(let from, let to, let algorithm):
            fields += [("from", from.rawValue), ("to", to.rawValue), ("algorithm", algorithm.rawValue)]
        case .underrun(let total): fields.append(("total", total))
        case .microphoneChanged(let device, let monitor): fields += [("device", device), ("roomOutputMonitor", monitor)]
        case .serverReconnected(let after): fields.append(("afterSeconds", (after * 1_000).rounded() / 1_000))
        case .sceneLoaded(let name): fields.append(("name", name))
        case .recordingStopped(let path, let reason): fields += [("path", path), ("reason", reason)]
        case .talkerJoined(let talker, let session): fields += [("talker", talker), ("session", session)]
        case .talkerLeft(let talker, let session, let reason): fields += [("talker", talker), ("session", session), ("reason", reason)]
        case .connectionChanged(let state, let reason): fields += [("state", state), ("reason", reason)]
        }
        // Key order as written, so a person reads time and event first.
        let body = fields.map { key, value in
            let encoded = (try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed, .withoutEscapingSlashes]))
                .map { String(decoding: $0, as: UTF8.self) } ?? "null"
            return "\"\(key)\":\(encoded)"
        }
        return "{" + body.joined(separator: ",") + "}"
    }
}
