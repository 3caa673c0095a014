import ArgumentParser
import AudioCore
import Control
import Devices
import Engine
import Network
import Foundation
import Scene
import Synchronization

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

    @Option(help: "Where the room plays when there is no sound server: a WAV file (default: roomd-NAME.wav here), in the route's channels as it starts; while the route has others, it records silence.")
    var output: String?

    @Option(help: "Records the uplink, what the other talkers would hear, to a WAV file.")
    var uplink: String?

    @Option(parsing: .unconditional,
            help: "The most decoded audio the room may hold (2G, 512M, ...): a scene, load, add or mic over it is refused (default: \(MemoryBudget.standard)).",
            transform: MemoryBudget.parse)
    var memoryBudget = MemoryBudget.standard

    @Option(help: "Appends every line of the control socket, each way, to this file: `CLIENT > REQUEST`, `CLIENT < REPLY or EVENT`.")
    var protocolLog: String?

    func validate() throws {
        guard (5...500).contains(latencyMilliseconds) else {
            throw ValidationError("--latency-ms \(latencyMilliseconds): expected 5 to 500")
        }
        guard FileManager.default.fileExists(atPath: scene) else { throw ValidationError("\(scene): no such scene file") }
        // A recording is a WAV whose header is rewritten as it grows: a file or a device, followed through symlinks.
        for (option, path) in [("--output", output), ("--uplink", uplink), ("--protocol-log", protocolLog)] {
            switch path.map({ FileKind(path: $0) }) {
            case .pipe?: throw ValidationError("\(option) \(path!): a named pipe or a socket; a recording needs a file or a device")
            case .directory?: throw ValidationError("\(option) \(path!): it is a folder; name a file in it")
            default: break
            }
        }
        if let repeated = OutputFile.repeated(in: [("--output", output), ("--uplink", uplink), ("--protocol-log", protocolLog)]) {
            throw ValidationError("\(repeated.option) \(repeated.path) is also the \(repeated.earlier) file; it would be overwritten")
        }
    }

    /// Where the room plays when there is no sound server.
    private var outputFile: String {
        output ?? "roomd-\(URL(fileURLWithPath: scene).deletingPathExtension().lastPathComponent).wav"
    }

    /// Runs the daemon; usage errors exit with 2, as a scene that fails validation does.
    static func main() async {
        Console.start()
        do {
            let command = try parse()
            try await command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                Console.error(fullMessage(for: error))
                Foundation.exit(2)
            }
            exit(withError: error)
        }
    }

    func run() async throws {
        let path = socket ?? defaultControlSocketPath()
        // Before anything plays: another daemon at the socket, or an unsafe folder, stops this one.
        do {
            try ControlServer.prepare(socket: path)
        } catch let refusal as ControlSocketPlace.Refusal {
            Console.error("roomd: \(refusal)")
            throw refusal.isUsage ? ExitCode(2) : ExitCode.failure
        }
        let room: Room
        do {
            room = try Room.load(path: scene, budget: memoryBudget)
        } catch let error as SceneValidationError {
            Console.error(error.issues.map(\.description).joined(separator: "\n") + "\nroomd: nothing played")
            throw ExitCode(2)
        }
        // No recording may be the scene or the audio it plays.
        for (option, path) in [("--output", output), ("--uplink", uplink), ("--protocol-log", protocolLog)] {
            if let path, let clash = OutputFile.clash(path, inputs: room.inputFiles) {
                Console.error("roomd: \(option) \(path): \(clash)")
                throw ExitCode(2)
            }
        }
        let trace: ProtocolTrace?
        do {
            trace = try protocolLog.map { try ProtocolTrace(path: $0) }
        } catch {
            Console.error("roomd: --protocol-log \(error)")
            throw ExitCode(2)
        }
        let connection: PulseConnection?
        do {
            connection = try PulseConnection(applicationName: "roomd", iconName: "audio-card")
        } catch {
            connection = nil
        }
        if connection == nil, output == nil,
           let repeated = OutputFile.repeated(in: [("--output", outputFile), ("--uplink", uplink), ("--protocol-log", protocolLog)]) {
            Console.error("roomd: \(repeated.option) \(repeated.path) is also the file the room plays into without a sound server; pass --output")
            throw ExitCode(2)
        }
        // The session that hears why the uplink's file stopped, if it does, is made with the recording.
        let sessionForEvents = Mutex<RoomSession?>(nil)
        let uplinkRecorder = try uplink.map { path in
            RecordingSink(path: path, writer: try AudioFileWriter(path: path, format: .wavFloat, channelCount: 1, sampleRate: Room.sampleRate)) { reason in
                sessionForEvents.withLock { $0 }?.post(.recordingStopped(path: path, reason: reason))
                Console.error("roomd: stopped writing \(path): \(reason); the room plays on")
            }
        }
        // A room that joins a Mumble server sends its uplink there too.
        let mumble = room.scene.voice?.mumble
        let networkUplink = mumble.map { MumbleUplink(settings: $0) }
        // The room plays into a file only when there is no server as it starts.
        let fallback = outputFile
        let played = connection == nil ? fallback : nil
        let session = try RoomSession(room: room, devices: (connection != nil, connection != nil), deviceRoute: nil,
                                         uplink: uplinkRecorder, budget: memoryBudget, voiceUplink: networkUplink,
                                         programOutputs: [played, uplink, protocolLog].compactMap { $0 })
        sessionForEvents.withLock { $0 = session }
        session.startPumping()
        let network = mumble.flatMap { settings in networkUplink.map { MumbleRoom(settings: settings, session: session, uplink: $0) } }
        network?.start()
        if connection == nil {
            Console.out("roomd: no PulseAudio server; the room plays on its own clock into \(fallback)")
        }
        let live = LiveOutput(session: session, targetLatencyFrames: latencyMilliseconds * Room.sampleRate / 1000,
                              fallbackFile: fallback)
        live.start(connection: connection)
        let shutdown = Shutdown { signal in
            // The render stops first, so every file it writes is whole when closed.
            network?.close()
            networkUplink?.close()
            live.stop()
            session.close()
            session.finishRecording()
            uplinkRecorder?.close()
            trace?.close()
            unlink(path)
            Console.out("roomd: stopped on \(signal)")
        }
        shutdown.install()
        let name = room.scene.name
        do {
            try await ControlServer(service: ControlService(session: session), path: path, trace: trace).run {
                Console.out("roomd: \(name) playing; control socket \(path)")
            }
        } catch let refusal as ControlSocketPlace.Refusal {
            Console.error("roomd: \(refusal)")
            live.stop()
            throw ExitCode.failure
        }
    }
}

/// Stops roomd cleanly on SIGTERM, SIGINT or SIGHUP: the room stops
/// rendering, every file it writes is finished, the socket goes, and the
/// process exits 0 within a second. A second signal, or a second gone by,
/// exits at once.
final class Shutdown: @unchecked Sendable {
    private let stop: (String) -> Void
    private let queue = DispatchQueue(label: "roomd signals")
    private var sources: [DispatchSourceSignal] = []
    private let stopping = Atomic<Bool>(false)

    init(stop: @escaping (String) -> Void) { self.stop = stop }

    func install() {
        sources = [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT"), (SIGHUP, "SIGHUP")].map { number, name in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [self] in begin(name) }
            source.resume()
            return source
        }
    }

    private func begin(_ name: String) {
        guard !stopping.exchange(true, ordering: .acquiringAndReleasing) else {
            Console.error("roomd: \(name) again; exiting at once")
            _exit(1)
        }
        let watchdog = Thread {
            Thread.sleep(forTimeInterval: 1)
            Console.error("roomd: did not stop within a second; exiting at once")
            _exit(1)
        }
        watchdog.start()
        // Off this queue, so a second signal is heard while the first stops the room.
        // Everything is written by then: _exit skips atexit handlers, among
        // them OpenAL's, which tears its locks down under threads that may
        // still be answering a request.
        Thread { [self] in
            stop(name)
            fflush(nil)
            _exit(0)
        }.start()
    }
}
