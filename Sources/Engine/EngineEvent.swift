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

    /// An event at `frame` on the room's timeline.
    public init(frame: Int, kind: Kind) {
        self.frame = frame
        self.kind = kind
    }

    /// Seconds from the start of the room.
    public var seconds: Double { Double(frame) / Double(Room.sampleRate) }

    /// What the engine reports: voice activity, ducking, prompts, route and
    /// device changes, and what the live side saw happen.
    public enum Kind: Sendable, Equatable {
        /// Which echo-cancellation mode the uplink runs, and why.
        case echoCancellation(on: Bool, reason: String)
        /// A talker started or stopped talking: the local one (by voice
        /// activity after echo cancellation, unmuted) or a participant.
        case speechStarted(talker: String)
        case speechEnded(talker: String)
        case mutedSpeechStarted
        case mutedSpeechEnded
        /// The scene's gain starts towards a new target: a depth in dB, or 0 when it eases back.
        case duckingChanged(targetDecibels: Double)
        case promptStyleChanged(PromptStyle)
        /// A prompt played in a style's variant, after waiting `waited` seconds.
        case promptPlayed(id: String, variant: PromptStyle, waited: Double)
        /// A prompt that waited out its timeout while nobody could hear it.
        case promptDropped(id: String, waited: Double)
        /// The output's route changed, and with it the automatic algorithm.
        case routeChanged(from: OutputRoute, to: OutputRoute, algorithm: RenderAlgorithm)
        /// The sound server ran out of audio to play; `total` since the room started.
        case underrun(total: Int)
        /// The sound server went away, or came back and the room plays on it again.
        case serverLost
        case serverReconnected(afterSeconds: Double)
        /// The capture records from another device now; the room's own output monitor is silenced.
        case microphoneChanged(device: String, roomOutputMonitor: Bool)
        /// A new scene replaced the room.
        case sceneLoaded(name: String)
        /// A recording stopped before it was asked to (a full disk); the room plays on.
        case recordingStopped(path: String, reason: String)
    }

    /// The event as one line of JSON, as `--events` files hold them.
    public var jsonLine: String {
        var fields: [(String, Any)] = [("t", (seconds * 1_000).rounded() / 1_000)]
        switch kind {
        case .echoCancellation(let on, let reason):
            fields += [("event", "echoCancellation"), ("mode", on ? "on" : "off"), ("reason", reason)]
        case .speechStarted(let talker): fields += [("event", "speechStarted"), ("talker", talker)]
        case .speechEnded(let talker): fields += [("event", "speechEnded"), ("talker", talker)]
        case .mutedSpeechStarted: fields.append(("event", "mutedSpeechStarted"))
        case .mutedSpeechEnded: fields.append(("event", "mutedSpeechEnded"))
        case .duckingChanged(let target): fields += [("event", "duckingChanged"), ("targetDecibels", target)]
        case .promptStyleChanged(let style): fields += [("event", "promptStyleChanged"), ("style", style.rawValue)]
        case .promptPlayed(let id, let variant, let waited):
            fields += [("event", "promptPlayed"), ("prompt", id), ("variant", variant.rawValue), ("waited", (waited * 1_000).rounded() / 1_000)]
        case .promptDropped(let id, let waited):
            fields += [("event", "promptDropped"), ("prompt", id), ("waited", (waited * 1_000).rounded() / 1_000)]
        case .routeChanged(let from, let to, let algorithm):
            fields += [("event", "routeChanged"), ("from", from.rawValue), ("to", to.rawValue), ("algorithm", algorithm.rawValue)]
        case .underrun(let total): fields += [("event", "underrun"), ("total", total)]
        case .serverLost: fields.append(("event", "serverLost"))
        case .microphoneChanged(let device, let monitor):
            fields += [("event", "microphoneChanged"), ("device", device), ("roomOutputMonitor", monitor)]
        case .serverReconnected(let after):
            fields += [("event", "serverReconnected"), ("afterSeconds", (after * 1_000).rounded() / 1_000)]
        case .sceneLoaded(let name): fields += [("event", "sceneLoaded"), ("name", name)]
        case .recordingStopped(let path, let reason): fields += [("event", "recordingStopped"), ("path", path), ("reason", reason)]
        }
        // Key order as written, so a person reads time and event first.
        let body = fields.map { key, value in
            let encoded = (try? JSONSerialization.data(withJSONObject: value, options: [.fragmentsAllowed]))
                .map { String(decoding: $0, as: UTF8.self) } ?? "null"
            return "\"\(key)\":\(encoded)"
        }
        return "{" + body.joined(separator: ",") + "}"
    }
}
