import AudioMeasurements
import Foundation
import Testing

/// The Mumble fixtures on their own: a real murmurd and two independent
/// pymumble peers, before any test puts the room between them.
@Suite(.serialized, .enabled(if: MumbleServer.isAvailable, "murmurd is not installed (apt-get install mumble-server)"))
struct MumbleFixtureTests {
    /// A 1 kHz tone at -9 dBFS RMS, two seconds, as the WAV file peers say.
    static func toneFile(in folder: String) throws -> (path: String, samples: [Float]) {
        let samples = Signals.sine(frequency: 1_000, frames: 96_000, amplitude: 0.5)
        let path = folder + "/tone.wav"
        try MumblePeer.writeWAV16(samples, to: path)
        return (path, samples)
    }

    /// One second of what was heard, from 0.1 s after the sound began.
    static func steadyPart(of samples: [Float]) throws -> [Float] {
        let onset = try #require(samples.firstIndex { abs($0) > 0.05 })
        let start = onset + 4_800
        try #require(samples.count >= start + 48_000)
        return Array(samples[start..<start + 48_000])
    }

    @Test func aPeerHearsAnotherPeersToneWithItsPosition() throws {
        let server = try MumbleServer(channels: ["Tavern", "Cellar"])
        #expect(server.certificateFingerprint.count == 64)
        #expect(server.certificateFingerprint.allSatisfy { $0.isHexDigit && !$0.isUppercase })

        let listener = try MumblePeer(label: "listener")
        let speaker = try MumblePeer(label: "speaker")
        try listener.connect(to: server, user: "listener", channel: "Tavern")
        try listener.startRecording()
        let speakerSession = try speaker.connect(to: server, user: "speaker", channel: "Tavern")
        try listener.waitForEvent("user_moved") { $0["name"] as? String == "speaker" && $0["channel"] as? String == "Tavern" }
        #expect(try listener.users().map(\.name).sorted() == ["listener", "speaker"])
        #expect(try listener.users(all: true).allSatisfy { $0.channel == "Tavern" })

        let tone = try Self.toneFile(in: listener.directory)
        let said = try speaker.say(wav: tone.path, position: SIMD3(3, 0, 0))
        try speaker.waitForEvent("say_started") { ($0["say"] as? Int) == said }
        try speaker.waitUntilSaid(said, timeout: 10)
        Thread.sleep(forTimeInterval: 0.3)
        let recordings = try listener.stopRecording()

        let heard = try #require(recordings.first { $0.session == speakerSession })
        #expect(heard.name == "speaker")
        #expect(heard.packets == 100)  // 2 s in 20 ms packets
        #expect(abs(heard.seconds - 2) < 0.01)
        let steady = try Self.steadyPart(of: heard.samples())
        #expect(abs(Measure.frequency(steady) - 1_000) < 5)
        #expect(abs(Measure.rmsDecibels(steady) - Measure.rmsDecibels(tone.samples)) < 6)
        #expect(heard.positionCount == heard.packets)
        #expect(heard.lastPosition == SIMD3(3, 0, 0))
        #expect(heard.positionRuns == [MumblePeer.PositionRun(position: SIMD3(3, 0, 0), count: 100)])

        speaker.quit()
        try listener.waitForEvent("user_left") { ($0["session"] as? Int) == speakerSession }
    }

    @Test func positionsChangePartwayAndPassOnlyWithinAPluginContext() throws {
        let server = try MumbleServer(channels: ["Tavern"])
        let inContext = try MumblePeer(label: "in-context")
        let elsewhere = try MumblePeer(label: "elsewhere")
        let speaker = try MumblePeer(label: "speaker")
        try inContext.connect(to: server, user: "ann", channel: "Tavern", context: "game\u{0}tavern")
        try elsewhere.connect(to: server, user: "bob", channel: "Tavern", context: "another game")
        let session = try speaker.connect(to: server, user: "cid", channel: "Tavern", context: "game\u{0}tavern")
        try inContext.startRecording()
        try elsewhere.startRecording()

        let tone = try Self.toneFile(in: inContext.directory)
        let said = try speaker.say(wav: tone.path, segments: [.init(seconds: 1, position: SIMD3(3, 0, 0)),
                                                              .init(seconds: 1, position: SIMD3(-1.5, 2, 0.25))])
        try speaker.waitUntilSaid(said, timeout: 10)
        Thread.sleep(forTimeInterval: 0.3)

        let same = try #require(try inContext.stopRecording().first { $0.session == session })
        #expect(same.positionRuns == [MumblePeer.PositionRun(position: SIMD3(3, 0, 0), count: 50),
                                      MumblePeer.PositionRun(position: SIMD3(-1.5, 2, 0.25), count: 50)])
        let other = try #require(try elsewhere.stopRecording().first { $0.session == session })
        #expect(other.packets == 100)
        #expect(other.positionCount == 0)
        #expect(other.unpositionedCount == 100)
    }

    @Test func theServerComesBackWithItsCertificateAndChannelsAfterACrash() throws {
        let server = try MumbleServer(channels: ["Tavern", "Cellar"])
        let port = server.port
        let fingerprint = server.certificateFingerprint
        let peer = try MumblePeer(label: "survivor")
        try peer.connect(to: server, user: "survivor", channel: "Cellar")

        server.kill()
        try peer.waitForEvent("disconnected", timeout: 5)
        let restarted = ContinuousClock.now
        try server.start()
        #expect(ContinuousClock.now - restarted < .seconds(5))
        #expect(server.port == port)
        #expect(try server.fetchCertificateFingerprint() == fingerprint)
        try peer.connect(to: server, user: "survivor", channel: "Cellar")
        #expect(try peer.users() == [MumblePeer.User(session: try #require(peer.session), name: "survivor", channel: "Cellar")])

        server.stop()
        #expect(!server.isRunning)
        try peer.waitForEvent("disconnected", timeout: 5)
    }

    @Test func wrongPasswordsAreRejected() throws {
        let server = try MumbleServer(serverPassword: "open sesame")
        let peer = try MumblePeer(label: "stranger")
        #expect(throws: MumbleServerError.self) { try peer.connect(to: server, user: "stranger", password: "wrong") }
        #expect(throws: MumbleServerError.self) { try peer.connect(to: server, user: "SuperUser", password: "wrong") }
        try peer.connect(to: server, user: "stranger")
    }
}
