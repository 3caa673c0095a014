import AudioCore
import AudioMeasurements
import Devices
import Foundation
import Testing

/// Against a private PulseAudio daemon with null sinks. Serialized: libpulse
/// reads `PULSE_SERVER` from the process's one environment.
@Suite(.serialized, .enabled(if: PulseServer.isAvailable, "pulseaudio is not installed"))
struct PulseTests {
    /// A sine whose RMS is -12 dBFS (peak about -9 dBFS).
    static let toneAmplitude = Float(Level.linear(fromDecibels: -12) * 2.0.squareRoot())

    /// A fresh server, made the one this process's clients connect to.
    func startServer() throws -> PulseServer {
        let server = try PulseServer()
        setenv("PULSE_SERVER", server.serverAddress, 1)
        return server
    }

    @Test func connectingWithoutAServerFailsWithinTheTimeout() throws {
        setenv("PULSE_SERVER", "unix:/tmp/no-such-pulse-server/native", 1)
        let started = ContinuousClock.now
        let error = #expect(throws: PulseError.self) {
            try PulseConnection(applicationName: "PulseTests", iconName: "audio-card", timeout: .seconds(1))
        }
        #expect(ContinuousClock.now - started < .milliseconds(1_500))
        #expect(error?.call == "pa_context_connect")
        #expect(error?.description == "pa_context_connect: Connection refused")
    }

    @Test func theDefaultSinkAndItsChangesAreReported() throws {
        let server = try startServer()
        let connection = try PulseConnection(applicationName: "PulseTests", iconName: "audio-card")
        defer { connection.close() }
        #expect(connection.isConnected)
        #expect(try connection.sinkNames().sorted() == ["mic_feed", "phones", "speakers", "surround"])

        let phones = try connection.defaultSink()
        #expect(phones == SinkInfo(name: "phones", description: "Phones", channels: 2, sampleRate: 48_000,
                                   formFactor: "headphone"))

        let changed = DispatchSemaphore(value: 0)
        try connection.subscribeToRouteChanges { changed.signal() }
        try server.pactl("set-default-sink", "surround")
        #expect(changed.wait(timeout: .now() + 1) == .success)
        let surround = try connection.defaultSink()
        #expect(surround.name == "surround" && surround.channels == 6 && surround.formFactor == nil)
    }

    @Test func aPlayedToneArrivesAtItsLevel() throws {
        let server = try startServer()
        let connection = try PulseConnection(applicationName: "PulseTests", iconName: "audio-card")
        defer { connection.close() }
        let tone = ToneGenerator(amplitude: Self.toneAmplitude, channels: 2)
        let playback = try PlaybackStream(connection: connection, name: "tone", role: "music", channels: 2,
                                          sampleRate: 48_000, device: "speakers", targetLatencyFrames: 2_400,
                                          render: tone.render)
        defer { playback.close() }

        // Record what the speakers play, with PulseAudio's own client.
        let recording = server.directory + "/speakers.raw"
        let parec = try server.spawn("parec", ["-d", "speakers.monitor", "--format=float32le", "--rate=48000",
                                               "--channels=2", "--raw", "--latency-msec=20"], output: recording)
        // A fresh null sink first renders one 2 s block ahead, during which its
        // monitor stays silent; after that it runs in real time.
        let second = 48_000 * 2 * MemoryLayout<Float>.size
        let deadline = Date().addingTimeInterval(6)
        while Self.size(of: recording) < second && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        parec.signal(SIGTERM)
        parec.wait()

        let left = Self.floats(in: recording).enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        let windows = Self.toneWindows(left)
        #expect(windows.count >= 90, "\(windows.count) loud windows")
        #expect(abs(Self.median(windows) + 12) < 1, "level \(Self.median(windows)) dB")
        #expect(abs(Measure.frequency(Array(left.suffix(24_000))) - 1_000) < 5)

        let latency = try #require(playback.latencyFrames())
        #expect((0...4_800).contains(latency), "latency \(latency) frames")
        let attributes = try #require(playback.bufferAttributes)
        #expect(attributes.targetFrames > 0 && attributes.minimumRequestFrames <= 480)
        #expect(playback.underruns == 0)

        // Holding the lock starves the stream for longer than its buffer lasts.
        connection.withLock { Thread.sleep(forTimeInterval: 0.3) }
        Thread.sleep(forTimeInterval: 0.2)
        #expect(playback.underruns >= 1)
    }

    @Test func aCaptureStreamRecordsTheVirtualMicrophone() throws {
        let server = try startServer()
        let connection = try PulseConnection(applicationName: "PulseTests", iconName: "audio-card")
        defer { connection.close() }
        let recorder = Recorder()
        let capture = try CaptureStream(connection: connection, name: "mic", role: "phone", sampleRate: 48_000,
                                        device: "mic_feed.monitor", fragmentFrames: 480, capture: recorder.append)

        let tone = Signals.sine(frequency: 1_000, frames: 48_000, amplitude: Self.toneAmplitude)
        let file = server.directory + "/tone.raw"
        try tone.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: file)) }
        let pacat = try server.spawn("pacat", ["-d", "mic_feed", "--format=float32le", "--rate=48000", "--channels=1",
                                               "--raw"], input: file)
        #expect(pacat.wait() == 0)
        Thread.sleep(forTimeInterval: 0.2)
        let latency = try #require(capture.latencyFrames())
        #expect(abs(latency) <= 4_800, "latency \(latency) frames")
        capture.close()  // after which the callback is done with the recorder

        let windows = Self.toneWindows(recorder.samples)
        #expect(windows.count >= 90, "\(windows.count) loud windows")
        #expect(abs(Self.median(windows) + 12) < 1, "level \(Self.median(windows)) dB")
    }

    @Test func losingTheServerIsReportedAndClosingAfterwardsIsSafe() throws {
        let server = try startServer()
        let connection = try PulseConnection(applicationName: "PulseTests", iconName: "audio-card")
        let lost = DispatchSemaphore(value: 0)
        connection.onLost = { lost.signal() }
        let tone = ToneGenerator(amplitude: Self.toneAmplitude, channels: 2)
        let playback = try PlaybackStream(connection: connection, name: "tone", role: "music", channels: 2,
                                          sampleRate: 48_000, targetLatencyFrames: 2_400, render: tone.render)

        server.kill()
        #expect(lost.wait(timeout: .now() + 1) == .success)
        #expect(!connection.isConnected)
        #expect(playback.latencyFrames() == nil)
        #expect(throws: PulseError.self) { try connection.defaultSink() }
        playback.close()
        connection.close()
        connection.close()

        // The restarted server is reachable at the same address.
        try server.restart()
        let again = try PulseConnection(applicationName: "PulseTests", iconName: "audio-card")
        #expect(try again.defaultSink().name == "phones")
        again.close()
    }

    /// A server that stops answering holds no request for ever: each gives
    /// up after `answerTimeout`, and the ping shows how long it has waited.
    @Test func aHungServerTimesRequestsOut() throws {
        let server = try startServer()
        let connection = try PulseConnection(applicationName: "PulseTests", iconName: "audio-card")
        defer {
            server.resume()
            connection.close()
        }
        connection.ping()
        let answered = Date().addingTimeInterval(2)
        while connection.secondsSinceAnswer > 0 && Date() < answered { Thread.sleep(forTimeInterval: 0.01) }
        #expect(connection.secondsSinceAnswer == 0, "a running server answers the ping")

        server.freeze()
        connection.ping()
        let start = Date()
        let error = #expect(throws: PulseError.self) { try connection.defaultSink() }
        let waited = Date().timeIntervalSince(start)
        #expect(error?.description == "pa_context_get_server_info: Timeout")
        print("a request to a hung server gave up after \(waited) s; the ping has waited \(connection.secondsSinceAnswer) s")
        #expect(waited >= 1.9 && waited < 3)
        #expect(connection.secondsSinceAnswer >= 1.9)
    }

    static func floats(in path: String) -> [Float] {
        let data = FileManager.default.contents(atPath: path) ?? Data()
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    static func size(of path: String) -> Int {
        (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    }

    /// The levels in dB of the 10 ms windows that hold the tone (louder than -30 dB).
    static func toneWindows(_ samples: [Float]) -> [Double] {
        stride(from: 0, to: samples.count - 479, by: 480)
            .map { Measure.rmsDecibels(Array(samples[$0..<$0 + 480])) }
            .filter { $0 > -30 }
    }

    /// The middle level: robust against the partial windows at the tone's edges.
    static func median(_ levels: [Double]) -> Double {
        levels.isEmpty ? -.infinity : levels.sorted()[levels.count / 2]
    }
}

/// A continuous sine for a render callback, the same on every channel.
private final class ToneGenerator: @unchecked Sendable {
    let amplitude: Float
    let channels: Int
    private var phase = 0.0

    init(amplitude: Float, channels: Int) {
        self.amplitude = amplitude
        self.channels = channels
    }

    func render(_ buffer: UnsafeMutableBufferPointer<Float>) {
        for frame in 0..<buffer.count / channels {
            let sample = amplitude * Float(sin(phase))
            for channel in 0..<channels { buffer[frame * channels + channel] = sample }
            phase = (phase + 2 * .pi * 1_000 / 48_000).truncatingRemainder(dividingBy: 2 * .pi)
        }
    }
}

/// Collects captured samples; read only after the stream is closed.
private final class Recorder: @unchecked Sendable {
    private(set) var samples: [Float] = []

    func append(_ buffer: UnsafeBufferPointer<Float>) { samples.append(contentsOf: buffer) }
}
