/// How the room joins a Mumble server (`voice.network.mumble`): remote
/// players become talkers of the room, and the uplink goes to them.
public struct MumbleSettings: Sendable, Equatable {
    /// When the uplink sends: while the local talker's voice is detected, or while the app holds the talk key.
    public enum Transmission: String, Sendable, CaseIterable {
        /// Sends while voice activity is detected on the uplink (`voiceActivity`).
        case voiceActivity
        /// Sends while push-to-talk is held (`pushToTalk`, `scenectl ptt on`).
        case pushToTalk
    }

    /// Mumble's own port, used when `server` names none.
    public static let defaultPort = 64738
    /// The bit rates an uplink may ask for, in kbit/s.
    public static let bitrates = 8...128

    /// The server's host name or address (`server`, before the port).
    public var host: String
    /// The server's TCP port (`server`, after the colon); 64738 by default.
    public var port: Int
    /// The channel the room joins by name (`channel`); nobody creates it: it must exist.
    public var channel: String
    /// The name the room's user has on the server (`user`).
    public var user: String
    /// The server's password (`password`); empty for none.
    public var password: String
    /// Mumble's plugin context (`context`), sent as its UTF-8 bytes: positions
    /// are heard only between users whose contexts match.
    public var context: String
    /// The SHA-256 of the server's certificate, 64 lowercase hex digits
    /// (`fingerprint`), which pins it; nil trusts the first one seen.
    public var fingerprint: String?
    /// When the uplink sends (`transmission`).
    public var transmission: Transmission
    /// The uplink's Opus bit rate in kbit/s (`bitrate`), lowered to the server's limit.
    public var bitrateKbps: Int

    /// Settings with the scene file's defaults for what is not given.
    public init(host: String, port: Int = MumbleSettings.defaultPort, channel: String, user: String, password: String = "",
                context: String = "", fingerprint: String? = nil, transmission: Transmission = .voiceActivity,
                bitrateKbps: Int = 40) {
        self.host = host
        self.port = port
        self.channel = channel
        self.user = user
        self.password = password
        self.context = context
        self.fingerprint = fingerprint
        self.transmission = transmission
        self.bitrateKbps = bitrateKbps
    }

    /// `host:port` as the scene file writes it, with an IPv6 address in brackets.
    public var server: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Splits `host:port`, `host`, `[v6]:port` or `[v6]`; the reason when it cannot.
    public static func parseServer(_ text: String) -> Result<(host: String, port: Int), ServerAddressProblem> {
        var host = Substring(text)
        var portText: Substring?
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return .failure(.init("an IPv6 address must end with \"]\"")) }
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { return .failure(.init("expected \":PORT\" after \"]\"")) }
                portText = rest.dropFirst()
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard host.firstIndex(of: ":") == colon else {
                return .failure(.init("write an IPv6 address in brackets, as [::1]:64738"))
            }
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard !host.isEmpty else { return .failure(.init("no host name")) }
        guard host.allSatisfy({ !$0.isWhitespace && $0 != "/" && $0 != "@" }) else {
            return .failure(.init("a host name has no spaces, \"/\" or \"@\""))
        }
        guard let portText else { return .success((String(host), defaultPort)) }
        guard let port = Int(portText), (1...65535).contains(port) else {
            return .failure(.init("the port must be a number from 1 to 65535"))
        }
        return .success((String(host), port))
    }

    /// A fingerprint as people copy it (any case, with or without colons or
    /// spaces) as 64 lowercase hex digits, or nil if it is not a SHA-256.
    public static func normalizedFingerprint(_ text: String) -> String? {
        let digits = text.lowercased().filter { $0 != ":" && $0 != " " }
        return digits.count == 64 && digits.allSatisfy(\.isHexDigit) ? digits : nil
    }
}

/// Why a `server` value is not an address.
public struct ServerAddressProblem: Error, Sendable, CustomStringConvertible {
    /// The reason, for the scene file's report.
    public let description: String
    init(_ description: String) { self.description = description }
}
