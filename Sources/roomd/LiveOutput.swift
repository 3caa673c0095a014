import AudioCore
import Control
import Devices
import Dispatch
import Engine
import Foundation
import Spatial
import Synchronization

/// Plays the room on PulseAudio, or on the room's own clock while there is
/// no server, and switches between the two as the server comes and goes.
///
/// One of them renders at a time. Everything that opens, closes or
/// switches runs on one serial queue; the render and capture callbacks
/// only move samples through the room's rings.
final class LiveOutput: @unchecked Sendable {
    let session: RoomSession
    let targetLatencyFrames: Int
    /// Where the room's own clock writes when there is no server; nil plays into nothing.
    let fallbackFile: String?
    private let queue = DispatchQueue(label: "roomd output")
    private var connection: PulseConnection?
    private var playback: PlaybackStream?
    private var capture: CaptureStream?
    private var clock: RoomClock?
    private var lostAt: ContinuousClock.Instant?
    /// Underruns of streams already closed, and the total last reported.
    private var earlierUnderruns = 0
    private var reportedUnderruns = 0
    private var sinkName = "none"
    /// The capture records the room's own output: what it hears goes up as silence.
    private let captureSilenced = Atomic<Bool>(false)
    /// Zeros the capture pushes in place of what a silenced device hears.
    private let silence: UnsafeMutableBufferPointer<Float> = {
        let zeros = UnsafeMutableBufferPointer<Float>.allocate(capacity: 4_096)
        zeros.initialize(repeating: 0)
        return zeros
    }()
    /// Underruns since the room started, across every stream it has had.
    private var underruns: Int { earlierUnderruns + (playback?.underruns ?? 0) }
    private var timer: DispatchSourceTimer?

    init(session: RoomSession, targetLatencyFrames: Int, fallbackFile: String?) {
        self.session = session
        self.targetLatencyFrames = targetLatencyFrames
        self.fallbackFile = fallbackFile
        // The output lives as long as the daemon.
        session.onLayoutChange = { _ in self.queue.async { self.reopenPlayback() } }
        session.outputStatus = { self.queue.sync { self.status() } }
    }

    deinit { silence.deallocate() }

    /// Starts on `connection`, or on the room's clock when there is none.
    func start(connection: PulseConnection?) {
        queue.sync {
            if let connection {
                play(on: connection)
            } else {
                startClock(file: fallbackFile)
            }
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now() + .milliseconds(100), repeating: .milliseconds(100))
            timer.setEventHandler { self.tick() }
            timer.resume()
            self.timer = timer
        }
    }

    /// Stops playing for good: no more blocks render, the streams close,
    /// and the room's own clock finishes its file.
    func stop() {
        queue.sync {
            timer?.cancel()
            timer = nil
            closePulse()
            clock?.stop()
            clock = nil
        }
    }

    // MARK: On the queue

    private func play(on connection: PulseConnection) {
        self.connection = connection
        connection.onLost = { self.queue.async { self.lost() } }
        do {
            try connection.subscribeToRouteChanges {
                self.queue.async {
                    self.followDefaultSink()
                    self.followCapture()
                }
            }
            followDefaultSink()
            reopenPlayback()
            capture = try CaptureStream(connection: connection, name: "Room microphone", role: "phone", sampleRate: Room.sampleRate,
                                        fragmentFrames: RoomEngine.blockFrames) { [self, microphone = session.deviceMicrophone, silence] in
                guard captureSilenced.load(ordering: .relaxed) else { return _ = microphone.push($0) }
                var left = $0.count
                while left > 0 {
                    let count = min(left, silence.count)
                    _ = microphone.push(UnsafeBufferPointer(rebasing: silence[0..<count]))
                    left -= count
                }
            }
            followCapture()
        } catch {
            Console.error("roomd: \(error)")
        }
    }

    /// Follows the default sink: its route, and the stream moves with it.
    private func followDefaultSink() {
        guard let connection, let sink = try? connection.defaultSink() else { return }
        sinkName = sink.name
        try? session.deviceChanged(to: OutputRoute(sink: sink))
    }

    /// Follows the capture as the server moves it: says where it records
    /// now, and silences it while that is the room's own output monitor,
    /// where the server puts it when the microphone goes away.
    private func followCapture() {
        guard let connection, let capture, let device = capture.deviceName else { return }
        let monitored = try? connection.monitoredSink(ofSource: device)
        let ownMonitor = monitored != nil && monitored == playback?.deviceName
        captureSilenced.store(ownMonitor, ordering: .relaxed)
        session.captureChanged(to: device, isRoomOutputMonitor: ownMonitor)
    }

    private func reopenPlayback() {
        guard let connection else { return }
        closePlayback()
        let channels = session.channelLayout.channelCount
        do {
            playback = try PlaybackStream(connection: connection, name: "Room", role: session.hasVoiceSession ? "phone" : "game",
                                          channels: channels, sampleRate: Room.sampleRate,
                                          targetLatencyFrames: targetLatencyFrames) { [live = session.live] buffer in
                live.render(into: buffer, channels: channels)
            }
        } catch {
            playback = nil
            Console.error("roomd: cannot open playback: \(error)")
        }
    }

    /// The server went away or stopped answering: the room plays on its
    /// own clock and tries to get back.
    private func lost(_ why: String = "lost the PulseAudio server") {
        guard connection != nil else { return }
        lostAt = .now
        closePulse()
        captureSilenced.store(false, ordering: .relaxed)
        session.post(.serverLost)
        Console.error("roomd: \(why); the room plays on its own clock and reconnects when it can")
        startClock(file: nil)
    }

    private func closePulse() {
        closePlayback()
        capture?.close()
        connection?.close()
        capture = nil
        connection = nil
    }

    /// Closes the playback stream, keeping the count of its underruns.
    private func closePlayback() {
        guard let playback else { return }
        earlierUnderruns += playback.underruns
        playback.close()
        self.playback = nil
    }

    private func tick() {
        if connection == nil, let lostAt {
            guard let connection = try? PulseConnection(applicationName: "roomd", iconName: "audio-card", timeout: .milliseconds(500)) else { return }
            clock?.stop()
            clock = nil
            play(on: connection)
            self.lostAt = nil
            let after = ContinuousClock.now - lostAt
            session.post(.serverReconnected(afterSeconds: Double(after.components.seconds) + Double(after.components.attoseconds) * 1e-18))
            Console.error("roomd: PulseAudio is back; playing on it again")
            return
        }
        // A server that stops answering (stopped, hung) is as good as gone.
        if let connection {
            let deadline = PulseConnection.answerTimeout / .seconds(1)
            if connection.secondsSinceAnswer >= deadline {
                return lost("the PulseAudio server has not answered for \(Int(deadline)) s")
            }
            connection.ping()
        }
        guard let playback else { return }
        if underruns > reportedUnderruns {
            reportedUnderruns = underruns
            session.post(.underrun(total: underruns))
        }
        // The microphone hears a block after it has gone through the
        // playback buffer and come back through the capture buffer.
        if let played = playback.latencyFrames() {
            let captured = max(0, capture?.latencyFrames() ?? 0)
            let delay = played + captured + session.deviceMicrophone.queued - RoomEngine.blockFrames / 2
            session.reportEchoDelay(frames: max(0, delay))
        }
    }

    private func startClock(file: String?) {
        clock = RoomClock(live: session.live, file: file) { [session] path, reason in
            session.post(.recordingStopped(path: path, reason: reason))
            Console.error("roomd: stopped writing \(path): \(reason); the room plays on")
        }
        clock?.start()
    }

    private func status() -> [String: Any] {
        var result: [String: Any] = ["server": connection != nil ? "pulseaudio" : "none (the room's own clock)", "device": sinkName,
                                     "underruns": underruns]
        if let playback {
            if let frames = playback.latencyFrames() { result["latencyMs"] = Double(frames) / 48 }
            if let attributes = playback.bufferAttributes { result["bufferMs"] = Double(attributes.targetFrames) / 48 }
        }
        return result
    }
}

/// Renders the room in real time on a thread of its own, for when there is
/// no sound server: into a WAV file, or into nothing.
final class RoomClock: @unchecked Sendable {
    private let live: LiveRoom
    private let file: String?
    /// Hears why the file stopped early, if it does.
    private let stopped: @Sendable (String, String) -> Void
    private var thread: Thread?
    private let done = DispatchSemaphore(value: 0)
    private let running = Atomic<Bool>(false)

    init(live: LiveRoom, file: String?, stopped: @escaping @Sendable (String, String) -> Void) {
        self.live = live
        self.file = file
        self.stopped = stopped
    }

    func start() {
        running.store(true, ordering: .releasing)
        let thread = Thread { [self] in run() }
        thread.name = "room clock"
        thread.start()
        self.thread = thread
    }

    /// Stops and waits for the clock's last block.
    func stop() {
        running.store(false, ordering: .releasing)
        done.wait()
    }

    private func run() {
        defer { done.signal() }
        let channels = live.channelCount
        var recorder: RecordingSink?
        if let file {
            do {
                // Written off this thread, so a slow or full disk never holds the room's clock.
                let writer = try AudioFileWriter(path: file, format: .wavFloat, channelCount: channels, sampleRate: Room.sampleRate)
                recorder = RecordingSink(path: file, writer: writer) { [stopped] in stopped(file, $0) }
            } catch {
                Console.error("roomd: cannot write \(file): \(error); the room plays into nothing")
            }
        }
        let block = UnsafeMutableBufferPointer<Float>.allocate(capacity: RoomEngine.blockFrames * ChannelLayout.surround71.channelCount)
        defer { block.deallocate() }
        let silence = [Float](repeating: 0, count: RoomEngine.blockFrames * channels)
        let period = Duration.milliseconds(10)
        var next = ContinuousClock.now
        while running.load(ordering: .acquiring) {
            let now = live.channelCount
            let slice = UnsafeMutableBufferPointer(rebasing: block[0..<(RoomEngine.blockFrames * now)])
            live.render(into: slice, channels: now)
            // A file keeps the channels it was opened with: while the route has others, it keeps time in silence.
            if now == channels {
                try? recorder?.play(UnsafeBufferPointer(slice), channels: channels)
            } else {
                try? silence.withUnsafeBufferPointer { try recorder?.play($0, channels: channels) }
            }
            next += period
            // Behind by more than a block: catch up on the clock, not in a burst.
            if ContinuousClock.now - next > period { next = .now }
            Thread.sleep(forTimeInterval: max(0, (next - .now) / .seconds(1)))
        }
        recorder?.close()
    }
}
