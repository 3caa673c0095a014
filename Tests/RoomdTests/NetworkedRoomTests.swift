import AudioCore
import AudioMeasurements
import Devices
import Foundation
import Testing

/// roomd as a Mumble client of a real murmurd, with pymumble as the
/// independent peer: what roomd plays is recorded from its sink's monitor,
/// what it sends is recorded by the peer, and both are measured.
@Suite(.serialized, .enabled(if: PulseServer.isAvailable && MumbleServer.isAvailable, "needs pulseaudio and murmurd"))
struct NetworkedRoomTests {
    /// A room with no sources of its own that joins `server`'s Tavern as `user`.
    static func scene(_ server: MumbleServer, user: String = "room", extra: String = "",
                      listener: [Double] = [0, 0, 0]) -> LiveRoom.Scene {
        LiveRoom.Scene(text: """
            version: 1
            name: Networked room
            listener: { position: \(listener) }
            distance: { model: inverse, reference: 1, maximum: 50, rolloff: 1 }
            sources: []
            voice:
              mic: default
              aec: off
              network:
                mumble: { server: "\(server.host):\(server.port)", channel: Tavern, user: \(user)\(extra) }

            """)
    }

    /// Four seconds of a player's speech at 48 kHz, as pymumble sends it.
    static func speech(in folder: String) throws -> (path: String, samples: [Float]) {
        let samples = try AudioFileReader.read(path: LiveRoom.asset("player_mic.wav")).monoSamples(at: 48_000)
        let part = Array(samples[(5.8 * 48_000).toInt..<(9.8 * 48_000).toInt]).map { $0 * 3 }
        let path = folder + "/speech-16.wav"
        try MumblePeer.writeWAV16(part, to: path)
        return (path, part)
    }

    /// Waits until `condition` holds on roomd's status, polling it.
    static func waitFor(_ room: LiveRoom, within seconds: Double = 10, _ what: String,
                        _ condition: ([String: Any]) -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            if let status = try? room.status(), condition(status) { return }
            guard Date() < deadline else { throw MumbleServerError("roomd: \(what) did not happen within \(seconds) s") }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    static func network(_ status: [String: Any]) -> [String: Any] { status["network"] as? [String: Any] ?? [:] }

    @Test func aPositionedTalkerIsHeardOnItsSideAndMovesSides() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let room = try LiveRoom(scene: Self.scene(server))
        try Self.waitFor(room, "joining Tavern") { Self.network($0)["state"] as? String == "connected" }
        let peer = try MumblePeer(label: "talker")
        let session = try peer.connect(to: server, user: "mara", channel: "Tavern")
        try Self.waitFor(room, "mara joining") { _ in (try? room.scenectl("talkers").contains("mara")) == true }

        let speech = try Self.speech(in: peer.directory)
        var sides: [(ild: Double, itd: Double)] = []
        for x: Float in [3, -3] {
            let said = try peer.say(wav: speech.path, position: SIMD3(x, 0, 0))
            let heard = try room.record("phones.monitor", seconds: 3.5)
            try peer.waitUntilSaid(said)
            let ild = Measure.levelDifference(left: heard.left, right: heard.right)
            let itd = Measure.timeDifference(left: Biquad.lowPassed(heard.left, cutoff: 1_000),
                                             right: Biquad.lowPassed(heard.right, cutoff: 1_000))
            print("mara at x = \(x) (Mumble's frame): \(Measure.rmsDecibels(heard.left)) / \(Measure.rmsDecibels(heard.right)) dBFS, "
                  + "ILD \(ild) dB, ITD \(itd * 1e6) µs")
            #expect(max(Measure.rmsDecibels(heard.left), Measure.rmsDecibels(heard.right)) > -45, "the talker is heard")
            sides.append((ild, itd))
        }
        #expect(sides[0].ild > 3 && sides[0].itd > 100e-6, "at +3 m mara is on the right")
        #expect(sides[1].ild < -3 && sides[1].itd < -100e-6, "at -3 m mara is on the left")
        let talkers = try JSONSerialization.jsonObject(with: Data(room.scenectl("talkers", "--json").utf8)) as? [String: Any]
        let mara = try #require((talkers?["talkers"] as? [[String: Any]])?.first)
        print("talkers: \(mara)")
        #expect(mara["session"] as? Int == session && mara["positional"] as? Bool == true)
        #expect((mara["position"] as? [Double]) == [-3, 0, 0], "the room's frame: Mumble's z turned round, x and y as they are")
    }

    /// What the microphone carries, through the chain, reaches the peer:
    /// the same speech as roomd's own uplink recording, at its level, with
    /// the listener's position in Mumble's frame; muted, nothing goes.
    @Test func thePeerHearsTheUplinkWithTheListenersPositionAndNothingWhileMuted() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let room = try LiveRoom(scene: Self.scene(server, listener: [1, 2, 3]), recordsUplink: true)
        try Self.waitFor(room, "joining Tavern") { Self.network($0)["state"] as? String == "connected" }
        let peer = try MumblePeer(label: "listener")
        try peer.connect(to: server, user: "pip", channel: "Tavern")
        try peer.startRecording()
        try room.speak(after: 0)
        Thread.sleep(forTimeInterval: 5.5)
        let heard = try #require(try peer.stopRecording().first { $0.name == "room" }, "the peer heard the room")
        let sent = try AudioFileReader.read(path: room.uplink).monoSamples(at: 48_000)
        let received = try heard.samples()
        let (lag, correlation) = Self.alignment(of: received, with: sent)
        let start = max(0, -lag), end = min(sent.count, received.count - lag)
        let sentPart = Array(sent[start..<end]), receivedPart = Array(received[(start + lag)..<(end + lag)])
        let levels = (Measure.rmsDecibels(sentPart), Measure.rmsDecibels(receivedPart))
        print("uplink at the peer: \(heard.packets) packets in \(heard.spurts) spurts, correlation \(correlation) at lag \(lag), "
              + "level \(levels.1) dBFS against \(levels.0) dBFS sent, position \(heard.lastPosition.map { "\($0)" } ?? "none")")
        #expect(heard.packets > 100, "seconds of speech went")
        #expect(correlation > 0.7, "the peer hears the uplink's speech")
        #expect(abs(levels.1 - levels.0) < 6)
        #expect(heard.positionCount == heard.packets && heard.lastPosition == SIMD3(1, 2, -3),
                "the listener at (1, 2, 3) is (1, 2, -3) in Mumble's left-handed frame")

        try room.scenectl("mute", "on")
        try peer.startRecording()
        try room.speak(after: 0)
        Thread.sleep(forTimeInterval: 5)
        let whileMuted = try peer.stopRecording().first { $0.name == "room" }
        print("while muted: \(whileMuted?.packets ?? 0) packets")
        #expect((whileMuted?.packets ?? 0) == 0, "muted, the room sends nothing")
    }
}

extension NetworkedRoomTests {
    /// Where `copy` best matches `original` (`copy[n + lag] ≈ original[n]`),
    /// and their correlation coefficient there: first by 10 ms envelopes,
    /// then sample by sample within 20 ms of that.
    static func alignment(of copy: [Float], with original: [Float]) -> (lag: Int, correlation: Double) {
        func envelope(_ samples: [Float]) -> [Double] {
            stride(from: 0, to: samples.count - 480, by: 480).map { Measure.rms(samples[$0..<$0 + 480]) }
        }
        let a = envelope(original), b = envelope(copy)
        var coarse = 0, best = -Double.infinity
        for lag in -a.count..<b.count {
            var sum = 0.0
            for n in max(0, -lag)..<min(a.count, b.count - lag) { sum += a[n] * b[n + lag] }
            if sum > best { (best, coarse) = (sum, lag) }
        }
        func coefficient(_ lag: Int) -> Double {
            var (ab, aa, bb) = (0.0, 0.0, 0.0)
            for n in max(0, -lag)..<min(original.count, copy.count - lag) {
                let (x, y) = (Double(original[n]), Double(copy[n + lag]))
                ab += x * y; aa += x * x; bb += y * y
            }
            return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
        }
        var fine = (lag: coarse * 480, correlation: -1.0)
        for lag in stride(from: coarse * 480 - 960, through: coarse * 480 + 960, by: 1) {
            let value = coefficient(lag)
            if value > fine.correlation { fine = (lag, value) }
        }
        return fine
    }
}

private extension Double {
    var toInt: Int { Int(self) }
}

/// Talkers, events, reconnection and refusals against a real murmurd.
@Suite(.serialized, .enabled(if: PulseServer.isAvailable && MumbleServer.isAvailable, "needs pulseaudio and murmurd"))
struct NetworkedRoomLifeTests {
    typealias Room = NetworkedRoomTests

    /// A looping 1 kHz tone at the listener's left, so what the room plays can be checked throughout.
    static func scene(_ server: MumbleServer, _ mumble: String) -> LiveRoom.Scene {
        LiveRoom.Scene(text: """
            version: 1
            name: Networked room
            distance: { model: inverse, reference: 1, maximum: 50, rolloff: 1 }
            sources:
              - { id: tone, file: tone.wav, mode: point, position: [-2, 0, 0], loop: true, reverbBlend: 0, gain: -12 }
            voice:
              mic: default
              aec: off
              network:
                mumble: { server: "\(server.host):\(server.port)", \(mumble) }

            """)
    }

    /// The tone's level in each 100 ms of `samples`: a room that stopped playing shows a gap.
    static func quietestTenth(_ samples: [Float]) -> Double {
        stride(from: 0, to: samples.count - 4_800, by: 4_800).map { Measure.rmsDecibels(Array(samples[$0..<$0 + 4_800])) }.min() ?? -.infinity
    }

    @Test func joinsTalkingLeavingAndConnectionEventsArriveInOrder() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let room = try LiveRoom(scene: Self.scene(server, "channel: Tavern, user: room"))
        try Room.waitFor(room, "joining Tavern") { Room.network($0)["state"] as? String == "connected" }
        let peer = try MumblePeer(label: "talker")
        let speech = try Room.speech(in: peer.directory)
        var session = 0
        let events = try room.events {
            session = try peer.connect(to: server, user: "mara", channel: "Tavern")
            try peer.waitUntilSaid(try peer.say(wav: speech.path))
            Thread.sleep(forTimeInterval: 0.5)
            peer.quit()
            Thread.sleep(forTimeInterval: 0.5)
        }
        let network = events.filter { ["talkerJoined", "talkerLeft", "speechStarted", "speechEnded"].contains($0["event"] as? String) }
            .filter { $0["talker"] as? String == "mara" }
        let names = network.map { $0["event"] as? String ?? "?" }
        print("mara's events: \(network)")
        #expect(names.first == "talkerJoined" && names.last == "talkerLeft")
        #expect(names.dropFirst().dropLast().first == "speechStarted" && names.dropLast().last == "speechEnded")
        #expect(network.allSatisfy { $0["session"] as? Int == session }, "every event carries mara's session")
        #expect(network.last?["reason"] as? String == "left the server")
        let seqs = network.compactMap { $0["seq"] as? Int }
        #expect(seqs == seqs.sorted())
    }

    @Test func aRestartedServerIsRejoinedAndTheRoomNeverStops() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let room = try LiveRoom(scene: Self.scene(server, "channel: Tavern, user: room"))
        try Room.waitFor(room, "joining Tavern") { Room.network($0)["state"] as? String == "connected" }
        var answered = Date(), rejoined = Date()
        var states: [String] = []
        let events = try room.events {
            let played = try room.record("phones.monitor", seconds: 4) {
                server.kill()
                try Room.waitFor(room, "noticing the loss") { Room.network($0)["state"] as? String != "connected" }
                Thread.sleep(forTimeInterval: 1)
                try server.start()
                answered = Date()
                try Room.waitFor(room, "rejoining Tavern") { Room.network($0)["state"] as? String == "connected" }
                rejoined = Date()
            }
            let quietest = Self.quietestTenth(played.left), level = Measure.rmsDecibels(played.left)
            print("while the server was down and back: the tone at \(level) dBFS, its quietest 100 ms \(quietest) dBFS")
            #expect(level > -50 && quietest > level - 1, "the room played on throughout")
        }
        states = events.filter { $0["event"] as? String == "connectionChanged" }.compactMap { $0["state"] as? String }
        let reconnect = rejoined.timeIntervalSince(answered)
        print("connection states: \(states); rejoined \(reconnect) s after the server answered")
        #expect(reconnect < 2)
        #expect(states.first == "lost" && states.last == "connected" && states.contains("connecting"))
        let status = Room.network(try room.status())
        #expect(status["channel"] as? String == "Tavern" && (status["reconnects"] as? Int ?? 0) >= 1)
    }

    @Test func aTalkerInAnotherContextStandsOnTheArc() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let room = try LiveRoom(scene: Self.scene(server, "channel: Tavern, user: room, context: tavern-game"))
        try room.scenectl("stop", "tone")
        try Room.waitFor(room, "joining Tavern") { Room.network($0)["state"] as? String == "connected" }
        let peer = try MumblePeer(label: "elsewhere")
        try peer.connect(to: server, user: "olaf", channel: "Tavern", context: "another-game")
        let speech = try Room.speech(in: peer.directory)
        let said = try peer.say(wav: speech.path, position: SIMD3(3, 0, 0))
        let heard = try room.record("phones.monitor", seconds: 3.5)
        try peer.waitUntilSaid(said)
        let ild = Measure.levelDifference(left: heard.left, right: heard.right)
        let talkers = try JSONSerialization.jsonObject(with: Data(room.scenectl("talkers", "--json").utf8)) as? [String: Any]
        let olaf = try #require((talkers?["talkers"] as? [[String: Any]])?.first)
        print("olaf, in another context, sending (3, 0, 0): \(Measure.rmsDecibels(heard.left)) dBFS, ILD \(ild) dB, at \(olaf["position"] ?? "?")")
        #expect(Measure.rmsDecibels(heard.left) > -45, "olaf is heard")
        #expect(abs(ild) < 1.5, "ahead, not at the right")
        #expect(olaf["positional"] as? Bool == false && (olaf["position"] as? [Double]) == [0, 0, -2])
    }

    @Test func twoRoomsInOneChannelHearEachOther() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let ann = try LiveRoom(scene: Self.scene(server, "channel: Tavern, user: ann"))
        let ben = try LiveRoom(scene: Self.scene(server, "channel: Tavern, user: ben"))
        for room in [ann, ben] {
            try room.scenectl("stop", "tone")
            try Room.waitFor(room, "joining Tavern") { Room.network($0)["state"] as? String == "connected" }
        }
        for (speaker, listener, name) in [(ann, ben, "ann"), (ben, ann, "ben")] {
            try Room.waitFor(listener, "\(name) joining") { _ in (try? listener.scenectl("talkers").contains(name)) == true }
            let quiet = try listener.record("phones.monitor", seconds: 1)
            let heard = try listener.record("phones.monitor", seconds: 4) { try speaker.speak(after: 0) }
            let level = Measure.rmsDecibels(heard.left + heard.right), floor = Measure.rmsDecibels(quiet.left + quiet.right)
            print("\(name) heard in the other room: \(level) dBFS over a floor of \(floor) dBFS")
            #expect(level > -45 && level - floor > 20, "\(name)'s microphone is heard in the other room")
        }
    }

    @Test func refusalsAreOneClearLineAndTheRoomPlaysOn() throws {
        let server = try MumbleServer(serverPassword: "hunter2", channels: ["Tavern"])
        let cases: [(mumble: String, state: String, says: [String])] = [
            ("channel: Tavern, user: room, password: wrong", "rejected", ["\(server.host):\(server.port)", "refused the login"]),
            ("channel: Attic, user: room, password: hunter2", "rejected", ["no channel \"Attic\"", "\"Root\"", "\"Tavern\""]),
            ("channel: Tavern, user: room, password: hunter2, fingerprint: \"\(String(repeating: "ab", count: 32))\"", "rejected",
             [server.certificateFingerprint, String(repeating: "ab", count: 32)]),
        ]
        for (mumble, state, says) in cases {
            let room = try LiveRoom(scene: Self.scene(server, mumble))
            try Room.waitFor(room, state) { Room.network($0)["state"] as? String == state }
            let reason = Room.network(try room.status())["reason"] as? String ?? ""
            let played = try room.record("phones.monitor", seconds: 1)
            print("\(mumble): \(state): \(reason); the tone at \(Measure.rmsDecibels(played.left)) dBFS")
            for part in says { #expect(reason.contains(part), "\(reason)") }
            #expect(!reason.contains("\n"))
            #expect(Measure.rmsDecibels(played.left) > -50, "the room plays its scene")
        }
        // Nobody listens: the room says so and keeps trying.
        let closed = try MumbleServer(channels: [])
        let port = closed.port
        closed.kill()
        let room = try LiveRoom(scene: LiveRoom.Scene(text: Self.scene(server, "channel: Tavern, user: room").text
            .replacingOccurrences(of: ":\(server.port)", with: ":\(port)")))
        try Room.waitFor(room, "a lost server") { ($0["network"] as? [String: Any])?["reconnects"] as? Int ?? 0 >= 2 }
        let status = Room.network(try room.status())
        print("nobody listening: \(status["state"] ?? "?"): \(status["reason"] ?? "?")")
        #expect(status["reason"] as? String == "127.0.0.1:\(port): connection refused")
    }

    /// A server that stops answering (stopped, not gone) is lost after 30 s of silence.
    @Test func aSilentServerIsLostAfterThirtySeconds() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let room = try LiveRoom(scene: Self.scene(server, "channel: Tavern, user: room"))
        try Room.waitFor(room, "joining Tavern") { Room.network($0)["state"] as? String == "connected" }
        let pid = try #require(Int32(try room.server.run("pgrep", ["-f", server.iniPath]).split(separator: "\n").first ?? ""))
        kill(pid, SIGSTOP)
        defer { kill(pid, SIGCONT) }
        var after = 0.0
        let events = try room.events {
            let stopped = Date()
            try Room.waitFor(room, within: 40, "noticing the silence") { Room.network($0)["state"] as? String != "connected" }
            after = Date().timeIntervalSince(stopped)
        }
        let lost = events.first { $0["event"] as? String == "connectionChanged" && $0["state"] as? String == "lost" }
        let reason = lost?["reason"] as? String ?? ""
        let played = try room.record("phones.monitor", seconds: 1)
        print("a stopped server: lost after \(after) s: \(reason); the tone at \(Measure.rmsDecibels(played.left)) dBFS")
        #expect((29...36).contains(after), "30 s of silence, counted from the last message before the stop, and told within a second")
        #expect(reason == "\(server.host):\(server.port): the server sent nothing for 30 s")
        #expect(Measure.rmsDecibels(played.left) > -50)
    }

    /// `talker ID gain`, `talker ID mute`, and a `load` that keeps the talker where it was.
    @Test func aTalkersVolumeAndMuteAreHeardAndSurviveALoad() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let room = try LiveRoom(scene: Self.scene(server, "channel: Tavern, user: room"))
        try room.scenectl("stop", "tone")
        try Room.waitFor(room, "joining Tavern") { Room.network($0)["state"] as? String == "connected" }
        let peer = try MumblePeer(label: "talker")
        try peer.connect(to: server, user: "mara", channel: "Tavern")
        try Room.waitFor(room, "mara joining") { _ in (try? room.scenectl("talkers").contains("mara")) == true }
        let speech = try Room.speech(in: peer.directory)
        func level() throws -> Double {
            let said = try peer.say(wav: speech.path, position: SIMD3(3, 0, 0))
            let heard = try room.record("phones.monitor", seconds: 3.5)
            try peer.waitUntilSaid(said)
            return Measure.rmsDecibels(heard.left + heard.right)
        }
        let full = try level()
        try room.scenectl("talker", "mara", "gain", "--", "-12")
        let quieter = try level()
        try room.scenectl("talker", "mara", "mute", "on")
        let muted = try level()
        try room.scenectl("talker", "mara", "mute", "off")
        _ = try room.scenectl("load", room.folder + "/room.yaml")
        try room.scenectl("stop", "tone")
        let reloaded = try level()
        print("mara: \(full) dBFS, gain -12: \(quieter), muted: \(muted), after a load: \(reloaded)")
        #expect(full > -45)
        #expect(abs(full - quieter - 12) < 2, "gain -12 dB is heard as 12 dB quieter")
        #expect(muted < full - 60, "muted here, mara is not heard")
        #expect(abs(reloaded - quieter) < 2, "the loaded room keeps mara, at her gain")
        let bad = try? room.scenectl("talker", "nobody", "gain", "--", "-3")
        #expect(bad == nil, "an unknown talker is refused")
    }

    /// Push-to-talk sends only while the key is held; a voice-activity room refuses the key.
    @Test func pushToTalkSendsOnlyWhileHeld() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let room = try LiveRoom(scene: Self.scene(server, "channel: Tavern, user: room, transmission: pushToTalk"))
        try room.scenectl("stop", "tone")
        try Room.waitFor(room, "joining Tavern") { Room.network($0)["state"] as? String == "connected" }
        let peer = try MumblePeer(label: "listener")
        try peer.connect(to: server, user: "pip", channel: "Tavern")
        func packets(holding held: Bool) throws -> Int {
            try room.scenectl("ptt", held ? "on" : "off")
            try peer.startRecording()
            try room.speak(after: 0)
            Thread.sleep(forTimeInterval: 5)
            return try peer.stopRecording().first { $0.name == "room" }?.packets ?? 0
        }
        let released = try packets(holding: false), held = try packets(holding: true)
        print("push-to-talk: \(released) packets released, \(held) held")
        #expect(released == 0 && held > 200, "held, the key sends everything, speech and pauses")

        let other = try LiveRoom(scene: Self.scene(server, "channel: Tavern, user: other"))
        let refused = try? other.scenectl("ptt", "on")
        #expect(refused == nil, "a voice-activity room has no talk key")
    }

    @Test func theFirstCertificateIsRememberedForTheUserAlone() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let room = try LiveRoom(scene: Self.scene(server, "channel: Tavern, user: room"))
        try Room.waitFor(room, "joining Tavern") { Room.network($0)["state"] as? String == "connected" }
        let store = room.folder + "/home/.local/share/roomd/known_servers"
        let text = try String(contentsOfFile: store, encoding: .utf8)
        let attributes = try FileManager.default.attributesOfItem(atPath: store)
        print("known servers: \(text.trimmingCharacters(in: .newlines)), mode \(String(attributes[.posixPermissions] as? Int ?? 0, radix: 8))")
        #expect(text == "\(server.host):\(server.port) \(server.certificateFingerprint)\n")
        #expect(attributes[.posixPermissions] as? Int == 0o600)
    }
}
