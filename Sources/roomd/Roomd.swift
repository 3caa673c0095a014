import ArgumentParser
import AudioCore
import Control
import Devices
import Engine
import Foundation
import Scene

@main
struct Roomd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "roomd",
        abstract: "Runs a room live on PulseAudio, steered through a control socket (see scenectl).",
        discussion: """
            roomd plays the scene on the default PulseAudio output and takes the microphone from the
            default input, following the default output as it changes (headphones, speakers, 5.1).
            With no PulseAudio server it says so and plays on its own clock into --output. If the
            server goes away mid-room, the room plays on and returns to the server when it is back.
            """
    )

    @Argument(help: "The scene file.")
    var scene: String

    @Option(help: "The control socket (default: $XDG_RUNTIME_DIR/roomd.sock).")
    var socket: String?

    @Option(name: .customLong("latency-ms"), help: "Target output latency in milliseconds.")
    var latencyMilliseconds = 30

    @Option(help: "Where the room plays when there is no sound server: a WAV file (default: roomd-NAME.wav here).")
    var output: String?

    @Option(help: "Records the uplink, what the other talkers would hear, to a WAV file.")
    var uplink: String?

    func validate() throws {
        guard (5...500).contains(latencyMilliseconds) else {
            throw ValidationError("--latency-ms \(latencyMilliseconds): expected 5 to 500")
        }
        guard FileManager.default.fileExists(atPath: scene) else { throw ValidationError("\(scene): no such scene file") }
    }

    func run() async throws {
        let room: Room
        do {
            room = try Room.load(path: scene)
        } catch let error as SceneValidationError {
            FileHandle.standardError.write(Data((error.issues.map(\.description).joined(separator: "\n") + "\nroomd: nothing played\n").utf8))
            throw ExitCode(2)
        }
        let connection: PulseConnection?
        do {
            connection = try PulseConnection(applicationName: "roomd", iconName: "audio-card")
        } catch {
            connection = nil
        }
        let uplinkRecorder = try uplink.map { try ThreadedRecorderSink(path: $0) }
        let session = try RoomSession(room: room, devices: (connection != nil, connection != nil), deviceRoute: nil,
                                         uplink: uplinkRecorder)
        session.startPumping()
        let fallback = output ?? "roomd-\(URL(fileURLWithPath: scene).deletingPathExtension().lastPathComponent).wav"
        if connection == nil {
            FileHandle.standardOutput.write(Data("roomd: no PulseAudio server; playing \(room.scene.name) on the room's own clock into \(fallback)\n".utf8))
        }
        let live = LiveOutput(session: session, targetLatencyFrames: latencyMilliseconds * Room.sampleRate / 1000,
                              fallbackFile: fallback)
        live.start(connection: connection)
        let path = socket ?? defaultControlSocketPath()
        FileHandle.standardOutput.write(Data("roomd: \(room.scene.name) playing; control socket \(path)\n".utf8))
        let signals = Self.stopOnSignals()
        try await ControlServer(service: ControlService(session: session), path: path).run()
        _ = signals
    }

    /// Ends the process cleanly on SIGINT and SIGTERM: the socket is removed and files are closed.
    private static func stopOnSignals() -> [DispatchSourceSignal] {
        [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .main)
            source.setEventHandler { Glibc.exit(0) }
            source.resume()
            return source
        }
    }
}

/// Writes what the engine hands it to a WAV file from a thread of its own,
/// so the render thread only copies into a ring.
final class ThreadedRecorderSink: AudioSink, @unchecked Sendable {
    private let ring = SampleRing(capacity: Room.sampleRate * 2)
    private let writer: AudioFileWriter

    init(path: String) throws {
        writer = try AudioFileWriter(path: path, format: .wavFloat, channelCount: 1, sampleRate: Room.sampleRate)
        writer.updateHeaderOnEveryWrite()
        let thread = Thread { [self] in drain() }
        thread.name = "uplink recorder"
        thread.start()
    }

    func play(_ block: UnsafeBufferPointer<Float>, channels: Int) throws {
        ring.write(block)
    }

    private func drain() {
        var chunk = [Float](repeating: 0, count: Room.sampleRate / 10)
        while true {
            let got = chunk.withUnsafeMutableBufferPointer { ring.read(into: $0) }
            if got > 0 { chunk.withUnsafeBufferPointer { try? writer.write(interleaved: UnsafeBufferPointer(rebasing: $0[0..<got])) } }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
}
