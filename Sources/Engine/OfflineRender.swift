import AudioCore
import Devices
import Foundation
import Scene
import Spatial

/// What a render did, for people (`description`) and programs (JSON).
public struct RenderSummary: Codable, Sendable {
    /// One source as it rendered.
    public struct Source: Codable, Sendable {
        /// Its id in the room.
        public var id: String
        /// Its scene mode: point, bed, bypass, spatializeIfMono.
        public var mode: String
        /// The algorithm it got and why: "auto on headphones -> hrtf".
        public var rendering: String
        /// A bed's channels: "order-3 ambisonics", "5.1 channels".
        public var layout: String?
        /// Its audio file, as the scene names it.
        public var file: String
        /// The file's channels.
        public var channels: Int
        /// The file's rate.
        public var sampleRate: Int
        /// The rate it was converted to, if it was.
        public var resampledTo: Int?
        /// The file's length in seconds.
        public var seconds: Double
        /// Its scene gain in dB.
        public var gainDecibels: Double
        /// Whether it starts again when it ends.
        public var loop: Bool
        /// When it starts, in seconds on the room's timeline.
        public var start: Double
        /// Whether it moves along keyframes.
        public var moving: Bool
    }

    /// The voice session as it rendered.
    public struct Voice: Codable, Sendable {
        /// Where the microphone came from.
        public var microphone: String
        /// "on (auto: ...)"
        public var echoCancellation: String
        /// The echo path the microphone heard the output through, if one was given.
        public var echoPath: String?
        /// Whether the uplink was muted.
        public var muted: Bool
        /// "-12.0 dB (default), advanced"
        public var ducking: String
        /// The remote talkers' ids.
        public var participants: [String]
        /// How many events the session posted.
        public var events: Int
    }

    /// One output channel's levels over the render.
    public struct Channel: Codable, Sendable {
        /// The channel's name in its layout: "left", "LFE".
        public var name: String
        /// Peak level in dBFS; nil (JSON null) for a channel of digital silence.
        public var peakDBFS: Double?
        /// RMS level in dBFS; nil (JSON null) for a channel of digital silence.
        public var rmsDBFS: Double?

        init(name: String, peak: Double, rms: Double) {
            self.name = name
            peakDBFS = peak.isFinite ? peak : nil
            rmsDBFS = rms.isFinite ? rms : nil
        }
    }

    /// The scene file.
    public var scene: String
    /// The room's name.
    public var name: String
    /// The route rendered for.
    public var route: String
    /// The output's channel layout.
    public var layout: String
    /// Why the route is what it is.
    public var routeReason: String
    /// The route's algorithm.
    public var algorithm: String
    /// The HRTF data set OpenAL loaded, if any.
    public var hrtf: String?
    /// The room's reverb preset and return level, if it has one.
    public var reverb: String?
    /// The output's rate.
    public var sampleRate: Int
    /// Seconds rendered.
    public var seconds: Double
    /// The file written, if one was.
    public var output: String?
    /// The written file's format.
    public var format: String?
    /// Every source, in the scene's order.
    public var sources: [Source]
    /// Routes taken during the render: "5.00 s -> speakers (panning)".
    public var routeChanges: [String]
    /// A prompt triggered but still waiting when the render ended.
    public struct WaitingPrompt: Codable, Sendable {
        /// Its id.
        public var prompt: String
        /// Seconds it had waited.
        public var waited: Double
    }

    /// Prompts triggered but still waiting when the render ended, oldest first.
    public var promptsWaiting: [WaitingPrompt]
    /// The voice session, if the room has one.
    public var voice: Voice?
    /// Each output channel's levels.
    public var channels: [Channel]
    /// Wall-clock seconds the render took.
    public var renderSeconds: Double
    /// Audio seconds rendered per wall-clock second.
    public var realTimeFactor: Double
}

/// A change of output route at a time on the room's timeline.
public struct RouteChange: Sendable, Equatable {
    /// When, in seconds on the room's timeline.
    public var seconds: Double
    /// The route the output moves to.
    public var route: OutputRoute

    /// The output moves to `route` at `seconds` on the room's timeline.
    public init(seconds: Double, route: OutputRoute) {
        self.seconds = seconds
        self.route = route
    }

    /// The frame it is taken on.
    public var frame: Int { Room.frame(atSeconds: seconds) }

    /// Why a render of `frames` frames cannot take `changes` as asked, if it cannot.
    public static func problem(in changes: [RouteChange], renderingFrames frames: Int) -> RouteChangeProblem? {
        if let late = changes.first(where: { $0.frame >= frames }) {
            return .outside(late, renderSeconds: Double(frames) / Double(Room.sampleRate))
        }
        let inOrder = changes.sorted { $0.frame < $1.frame }
        let block = RoomEngine.blockFrames
        if let (first, second) = zip(inOrder, inOrder.dropFirst()).first(where: { $0.frame / block == $1.frame / block }) {
            return .sharingABlock(first, second)
        }
        return nil
    }
}

/// Why a render cannot take its route changes as asked.
public enum RouteChangeProblem: Error, Equatable, CustomStringConvertible {
    /// The change falls at or after the end of a render this long.
    case outside(RouteChange, renderSeconds: Double)
    /// The two fall in one of the engine's blocks, which takes one route change a block.
    case sharingABlock(RouteChange, RouteChange)

    /// The problem in the engine's words, without the option that asked for the changes.
    public var description: String {
        switch self {
        case let .outside(change, seconds):
            "a route change at \(change.seconds) s is not inside the \(seconds) s rendered"
        case let .sharingABlock(first, second):
            "route changes at \(first.seconds) s and at \(second.seconds) s fall in one of the engine's "
                + "\(RoomEngine.blockFrames * 1000 / Room.sampleRate) ms blocks, which takes one route change a block"
        }
    }
}

/// What the voice session hears offline, besides the room's own settings.
public struct OfflineVoice: Sendable {
    /// A microphone file in place of the scene's.
    public var microphonePath: String?
    /// An impulse response at 48 kHz: the output reaches the microphone through it.
    public var echoPath: [Float]?
    /// Where it came from, for the summary.
    public var echoPathName: String?
    /// Prompts triggered at times on the room's timeline.
    public var prompts: [PromptTrigger]

    /// Nothing besides the room's own settings, unless given.
    public init(microphonePath: String? = nil, echoPath: [Float]? = nil, echoPathName: String? = nil, prompts: [PromptTrigger] = []) {
        self.microphonePath = microphonePath
        self.echoPath = echoPath
        self.echoPathName = echoPathName
        self.prompts = prompts
    }
}

/// A prompt triggered at a time on the room's timeline.
public struct PromptTrigger: Sendable, Equatable {
    /// When, in seconds on the room's timeline.
    public var seconds: Double
    /// The prompt's id.
    public var id: String

    /// The frame it starts on: the first block at or after its time, as a
    /// live prompt starts at the block after it is asked for.
    public var startFrame: Int {
        let frame = Room.frame(atSeconds: seconds), block = RoomEngine.blockFrames
        return (frame + block - 1) / block * block
    }

    /// Prompt `id` triggered at `seconds` on the room's timeline.
    public init(seconds: Double, id: String) {
        self.seconds = seconds
        self.id = id
    }
}

/// One block of an offline render as the output got it, with the ducking
/// the engine applied to the scene in it.
public struct RenderedBlock {
    /// The block's first frame on the room's timeline.
    public var frame: Int
    /// The output's interleaved samples, valid only during the call; the
    /// last block holds only the frames up to the render's end.
    public var samples: UnsafeBufferPointer<Float>
    /// Channels per frame of `samples`.
    public var channels: Int
    /// The Ducker's `gainDecibels` at the end of the block: 0, or the scene's
    /// gain under voice (such as -18).
    public var duckingDecibels: Double
}

/// Renders a room from its start into an optional file, metering every block.
public enum OfflineRender {
    /// Renders `seconds` of `room` and returns what it did.
    ///
    /// - Parameters:
    ///   - room: the room, from its start.
    ///   - requested: the route to render for; nil takes the scene's.
    ///   - seconds: how long to render.
    ///   - writer: where the output is written block by block, if anywhere.
    ///   - format: the writer's encoding, for the summary.
    ///   - voice: the voice session's inputs: microphone, echo path, prompts.
    ///   - routeChanges: taken on their exact frame, each crossfaded; every
    ///     route must have the first route's channel count, each must fall inside the
    ///     render, and no two in one block (`RouteChangeProblem`).
    ///   - events: called with each event as the render makes it.
    ///   - blocks: called with each block once it is rendered and played, before
    ///     the next is rendered.
    ///   - progress: called with the fraction done after each block.
    public static func run(room: Room, route requested: OutputRoute?, seconds: Double,
                           routeChanges: [RouteChange] = [],
                           writer: AudioFileWriter?, format: AudioFileFormat?,
                           voice: OfflineVoice = OfflineVoice(),
                           events: (EngineEvent) -> Void = { _ in },
                           blocks: (RenderedBlock) -> Void = { _ in },
                           progress: (Double) -> Void = { _ in }) throws -> RenderSummary {
        let totalFrames = Room.frame(atSeconds: seconds)
        if let problem = RouteChange.problem(in: routeChanges, renderingFrames: totalFrames) { throw problem }
        var microphone: AudioSource?
        var microphoneName = "none"
        if let path = voice.microphonePath {
            microphone = try FileAudioSource(path: path)
            microphoneName = "\((path as NSString).lastPathComponent) (--mic)"
        } else if let samples = room.microphone, case .file(let path)? = room.scene.voice?.microphone {
            microphone = FileAudioSource(samples: samples)
            microphoneName = (path as NSString).lastPathComponent
        } else if room.scene.voice?.microphone == .device {
            microphoneName = "default: no capture device offline, so silence"
        }
        // With an echo path the render stands for a room: its output is played and its microphone hears it.
        let inRoom = voice.echoPath != nil
        let output = OfflineOutput(writer: writer, frames: totalFrames)
        let engine = try RoomEngine(room: room, route: requested, microphone: microphone, sink: output,
                                    echoPath: voice.echoPath, microphoneIsCapture: inRoom, outputIsPlayback: inRoom)
        output.meter = LevelMeter(channelCount: engine.channelCount)
        let renderer = engine.renderer
        let routeChanges = routeChanges.sorted { $0.frame < $1.frame }
        var pending = routeChanges[...]
        var prompts = voice.prompts.sorted { $0.seconds < $1.seconds }[...]
        var eventCount = 0
        let clock = ContinuousClock()
        let started = clock.now
        while engine.framesRendered < totalFrames {
            let blockEnd = engine.framesRendered + RoomEngine.blockFrames
            if let change = pending.first, change.frame < blockEnd {
                try engine.changeRoute(to: change.route, atFrame: change.frame)
                pending.removeFirst()
            }
            while let prompt = prompts.first, prompt.startFrame <= engine.framesRendered {
                try engine.triggerPrompt(prompt.id)
                prompts.removeFirst()
            }
            let start = engine.framesRendered
            let master = try engine.renderBlock()
            let frames = min(RoomEngine.blockFrames, totalFrames - start)
            blocks(RenderedBlock(frame: start, samples: UnsafeBufferPointer(rebasing: master[0..<(frames * engine.channelCount)]),
                                 channels: engine.channelCount, duckingDecibels: engine.ducker.gainDecibels))
            for var event in engine.takeEvents() {
                eventCount += 1
                event.seq = eventCount
                events(event)
            }
            progress(Double(min(engine.framesRendered, totalFrames)) / Double(totalFrames))
        }
        try writer?.close()
        let elapsed = clock.now - started
        let wallSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let meter = output.meter!

        var voiceSummary: RenderSummary.Voice?
        if let session = room.scene.voice {
            let (on, reason) = engine.echoCancellation
            let level = String(format: "%+.1f dB", session.duckingDecibels)
            voiceSummary = RenderSummary.Voice(
                microphone: microphoneName, echoCancellation: "\(on ? "on" : "off") (\(reason))",
                echoPath: voice.echoPathName, muted: session.muted,
                ducking: "\(level) (\(session.duckingLevel.rawValue)), \(session.advancedDucking ? "advanced: while anyone talks" : "while the session is active")",
                participants: session.participants.map(\.id), events: eventCount)
        }
        return RenderSummary(
            scene: room.scene.file, name: room.scene.name,
            route: renderer.route.rawValue, layout: renderer.layout.rawValue,
            routeReason: routeReason(requested: requested, scene: room.requestedRoute, resolved: renderer.route),
            algorithm: renderer.algorithm.rawValue, hrtf: renderer.hrtfName,
            reverb: room.scene.reverb.map { "\($0.preset.rawValue) at \(String(format: "%+.1f", $0.levelDecibels)) dB" },
            sampleRate: Room.sampleRate, seconds: Double(totalFrames) / Double(Room.sampleRate),
            output: writer?.path, format: format?.rawValue,
            sources: zip(room.sources, engine.choices).map(summary),
            routeChanges: routeChanges.map {
                String(format: "%.2f s -> ", $0.seconds) + "\($0.route.resolved()) (\($0.route.automaticAlgorithm))"
            },
            promptsWaiting: engine.waitingPrompts(at: totalFrames).map { RenderSummary.WaitingPrompt(prompt: $0.id, waited: $0.waited) },
            voice: voiceSummary,
            channels: renderer.layout.channelLabels.indices.map {
                RenderSummary.Channel(name: renderer.layout.channelLabels[$0], peak: meter.peakDecibels(channel: $0), rms: meter.rmsDecibels(channel: $0))
            },
            renderSeconds: wallSeconds,
            realTimeFactor: wallSeconds > 0 ? Double(totalFrames) / Double(Room.sampleRate) / wallSeconds : .infinity)
    }

    private static func routeReason(requested: OutputRoute?, scene: OutputRoute, resolved: OutputRoute) -> String {
        if let requested, requested != .auto { return "--route \(requested)" }
        if requested == nil && scene != .auto { return "scene output.route" }
        return "auto: nothing is known about a file's listener, so headphones"
    }

    private static func summary(_ source: RoomSource, _ choice: RenderChoice) -> RenderSummary.Source {
        let description = source.description
        var moving = false
        if case .moving = description.placement { moving = true }
        return .init(id: description.id, mode: description.mode.rawValue, rendering: choice.description,
                     layout: source.bedLayout?.description,
                     file: description.audioPath,
                     channels: source.fileChannels, sampleRate: source.fileSampleRate,
                     resampledTo: source.wasResampled ? Room.sampleRate : nil,
                     seconds: Double(source.audio.frameCount) / Double(Room.sampleRate),
                     gainDecibels: description.gainDecibels, loop: description.loop, start: description.start,
                     moving: moving)
    }
}

extension RenderSummary: CustomStringConvertible {
    /// The summary as `scenectl render` prints it for people.
    public var description: String {
        var lines = ["\(name) (\(scene))"]
        var algorithmText = algorithm
        if let hrtf { algorithmText += " with \(hrtf)" }
        lines.append("route: \(route) (\(routeReason)), \(layout); algorithm: \(algorithmText); \(sampleRate) Hz")
        if let reverb { lines.append("reverb: \(reverb)") }
        lines.append("sources:")
        if sources.isEmpty { lines.append("  (none)") }
        let idWidth = sources.map(\.id.count).max() ?? 0
        for source in sources {
            var text = "  \(source.id.padding(toLength: idWidth, withPad: " ", startingAt: 0))  \(source.mode.padding(toLength: 5, withPad: " ", startingAt: 0))"
            text += " \((source.file as NSString).lastPathComponent), \(source.channels) ch"
            if let layout = source.layout { text += " (\(layout))" }
            text += ", \(source.sampleRate) Hz"
            if let target = source.resampledTo { text += " (resampled to \(target) Hz)" }
            text += String(format: ", %.2f s, gain %+.1f dB, start %.2f s", source.seconds, source.gainDecibels, source.start)
            if source.loop { text += ", looping" }
            if source.moving { text += ", moving" }
            text += "; \(source.rendering)"
            lines.append(text)
        }
        for change in routeChanges { lines.append("route change: \(change)") }
        if !promptsWaiting.isEmpty {
            let waiting = promptsWaiting.map { "\($0.prompt) (waited \(String(format: "%.2f", $0.waited)) s)" }
            lines.append("prompts still waiting when the render ended, never played: \(waiting.joined(separator: ", "))")
        }
        if let voice {
            lines.append("voice: mic \(voice.microphone)\(voice.muted ? ", muted" : ""); echo cancellation \(voice.echoCancellation)")
            if let echoPath = voice.echoPath { lines.append("  echo path: \(echoPath)") }
            lines.append("  ducking \(voice.ducking); participants: \(voice.participants.isEmpty ? "none" : voice.participants.joined(separator: ", ")); \(voice.events) events")
        }
        var rendered = String(format: "rendered %.2f s in %.2f s (%.0fx real time)", seconds, renderSeconds, realTimeFactor)
        if let output { rendered += " -> \(output)" + (format.map { " (\($0))" } ?? "") }
        lines.append(rendered)
        for channel in channels {
            lines.append(String(format: "  %@  peak %7.1f dBFS  RMS %7.1f dBFS",
                                channel.name.padding(toLength: 10, withPad: " ", startingAt: 0),
                                channel.peakDBFS ?? -.infinity, channel.rmsDBFS ?? -.infinity))
        }
        return lines.joined(separator: "\n")
    }
}

/// The render's output: metered, and written to the file up to the frames asked for.
private final class OfflineOutput: AudioSink {
    let writer: AudioFileWriter?
    var meter: LevelMeter?
    private var framesLeft: Int

    init(writer: AudioFileWriter?, frames: Int) {
        self.writer = writer
        framesLeft = frames
    }

    func play(_ block: UnsafeBufferPointer<Float>, channels: Int) throws {
        let frames = min(block.count / channels, framesLeft)
        let written = UnsafeBufferPointer(rebasing: block[0..<(frames * channels)])
        meter?.measure(interleaved: written)
        try writer?.write(interleaved: written)
        framesLeft -= frames
    }
}
