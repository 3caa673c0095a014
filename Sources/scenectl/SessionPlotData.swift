import Engine
import Foundation

/// A render's output level per channel and its ducking, one 10 ms block at
/// a time, as the output got them.
struct RenderTrace {
    /// Per channel, the level of each block in dBFS.
    private(set) var levels: [[Double]] = []
    /// The scene's ducking gain at the end of each block, in dB.
    private(set) var ducking: [Double] = []
    private let blocks: Int

    /// Room for the blocks of `seconds`, taken at the first block.
    init(seconds: Double) {
        blocks = Int((seconds / SessionPlot.windowSeconds).rounded(.up))
    }

    /// Blocks are the engine's 10 ms, so each is one window of the plot.
    mutating func add(_ block: RenderedBlock) {
        if levels.isEmpty {
            var empty = [Double]()
            empty.reserveCapacity(blocks)
            levels = Array(repeating: empty, count: block.channels)
            ducking = empty
        }
        var meter = LevelMeter(channelCount: block.channels)
        meter.measure(interleaved: block.samples)
        for channel in 0..<block.channels { levels[channel].append(meter.rmsDecibels(channel: channel)) }
        ducking.append(block.duckingDecibels)
    }
}

extension SessionPlot {
    static let channelColours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    static let participantColours = ["#c2459b", "#d46a00", "#8a8a12", "#6a3d9a", "#8c564b", "#138d9c"]
    static let duckingColour = "#00796b", promptColour = "#9467bd", mutedColour = "#d62728", localColour = "#2ca02c"
    static let otherEventColour = "#555555"
    /// Where the far end is quieter than this, its echo is too faint for its reduction to mean anything.
    static let farEndPlaysAboveDBFS = -60.0

    /// A render's plot: each output channel's level, the ducking of a room
    /// with a voice session, its talkers and events.
    static func render(summary: RenderSummary, routeChanges: [RouteChange], trace: RenderTrace, events: [EngineEvent]) -> SessionPlot {
        var route = "\(summary.route) (\(summary.algorithm))"
        for change in routeChanges.sorted(by: { $0.seconds < $1.seconds }) {
            route += String(format: ", then %@ (%@) at %.2f s", change.route.resolved().rawValue, change.route.automaticAlgorithm.rawValue, change.seconds)
        }
        var subtitle = String(format: "%@ · %.2f s · %@ at %d Hz", summary.scene, summary.seconds, summary.layout, summary.sampleRate)
        var plot = SessionPlot(title: "\(summary.name) — route \(route)", subtitle: "", seconds: summary.seconds)
        plot.levels = zip(summary.channels, trace.levels).enumerated().map { index, channel in
            Trace(name: channel.0.name, key: "level:" + channel.0.name, colour: channelColours[index % channelColours.count], values: channel.1)
        }
        var talkers: [(key: String, name: String, colour: String)] = []
        if let voice = summary.voice {
            subtitle += " · ducking \(voice.ducking) · mic \(voice.microphone)\(voice.muted ? ", muted" : "")"
            plot.ducking = Trace(name: "ducking gain", key: "ducking", colour: duckingColour, values: trace.ducking)
            talkers.append(("local", "local (mic)", localColour))
            for (index, id) in voice.participants.enumerated() {
                talkers.append((id, id, participantColours[index % participantColours.count]))
            }
            if voice.muted { talkers.append(("muted", "muted talking", mutedColour)) }
        }
        plot.subtitle = subtitle
        plot.bands = bands(talkers: talkers, events: events, seconds: summary.seconds)
        plot.markers = markers(events, bands: plot.bands)
        return plot
    }

    /// A process-voice plot: the microphone, the uplink and the far end,
    /// the echo the uplink is rid of, the detector's decisions and the events.
    static func voice(micPath: String, farPath: String?, outPath: String, mic: DecodedAudio, far: DecodedAudio?,
                      result: VoiceFileProcessor.Result, muted: Bool, echoCancellation: Bool) -> SessionPlot {
        func name(_ path: String) -> String { (path as NSString).lastPathComponent }
        let micLevels = windowLevels(mic.buffer.samples, rate: mic.sampleRate)
        let uplinkLevels = windowLevels(result.uplink.samples, rate: mic.sampleRate)
        var plot = SessionPlot(
            title: "process-voice: mic \(name(micPath)), far end \(farPath.map(name) ?? "none (silence)")",
            subtitle: String(format: "uplink -> %@ · %.2f s at %d Hz · echo cancellation %@%@ · speech in %d of %d frames",
                             name(outPath), mic.seconds, mic.sampleRate, echoCancellation ? "on" : "off", muted ? " · muted" : "",
                             result.decisions.filter { $0 }.count, result.decisions.count),
            seconds: mic.seconds)
        plot.levels = [Trace(name: "microphone", key: "level:microphone", colour: channelColours[0], values: micLevels),
                       Trace(name: "uplink", key: "level:uplink", colour: localColour, values: uplinkLevels)]
        if let far {
            // The far end on the microphone's windows: cut to its length, or padded with the silence the chain heard.
            var farLevels = Array(windowLevels(far.buffer.downmixedToMono().samples, rate: far.sampleRate).prefix(micLevels.count))
            farLevels += Array(repeating: -.infinity, count: micLevels.count - farLevels.count)
            plot.levels.insert(Trace(name: "far end", key: "level:far", colour: "#7f7f7f", values: farLevels, filled: true), at: 0)
        }
        // Muted, the uplink is the gate's silence: there is no echo in it to measure.
        if let farLevels = plot.levels.first(where: { $0.key == "level:far" })?.values, !muted {
            let reduction = micLevels.indices.map { index in
                farLevels[index] > farEndPlaysAboveDBFS && micLevels[index].isFinite ? micLevels[index] - uplinkLevels[index] : .nan
            }
            plot.echoReduction = Trace(name: "echo reduction: mic − uplink while the far end plays", key: "echoReduction",
                                       colour: promptColour, values: reduction)
        }
        var vad = Band(name: "VAD (10 ms)", key: "vad", colour: channelColours[0], spans: [])
        var onset: Int?
        for (index, speech) in (result.decisions + [false]).enumerated() {
            if speech, onset == nil { onset = index }
            if !speech, let start = onset {
                vad.spans.append((Double(start) * windowSeconds, min(Double(index) * windowSeconds, mic.seconds)))
                onset = nil
            }
        }
        let talker = muted ? ("muted", "muted talking", mutedColour) : ("local", "local talker", localColour)
        plot.bands = [vad] + bands(talkers: [talker], events: result.events, seconds: mic.seconds)
        plot.markers = markers(result.events, bands: plot.bands)
        return plot
    }

    /// The level in dBFS of each 10 ms window of one channel at `rate`.
    static func windowLevels(_ samples: [Float], rate: Int) -> [Double] {
        let windows = (samples.count * 100 + rate - 1) / rate
        return (0..<windows).map { window in
            let start = window * rate / 100, end = min(samples.count, (window + 1) * rate / 100)
            var meter = LevelMeter(channelCount: 1)
            samples[start..<end].withUnsafeBufferPointer { meter.measure(interleaved: $0) }
            return meter.rmsDecibels(channel: 0)
        }
    }

    /// A row for each talker, from their speechStarted and speechEnded
    /// events (the muted pair for `muted`); a talker the events name that
    /// was not expected gets a row too. Speech still on at the end lasts to it.
    static func bands(talkers: [(key: String, name: String, colour: String)], events: [EngineEvent], seconds: Double) -> [Band] {
        var bands = talkers.map { Band(name: $0.name, key: $0.key, colour: $0.colour, spans: []) }
        var open: [String: Double] = [:]
        for event in events {
            let change: (key: String, on: Bool)
            switch event.kind {
            case .speechStarted(let talker, _): change = (talker, true)
            case .speechEnded(let talker, _): change = (talker, false)
            case .mutedSpeechStarted: change = ("muted", true)
            case .mutedSpeechEnded: change = ("muted", false)
            default: continue
            }
            if !bands.contains(where: { $0.key == change.key }) {
                bands.append(Band(name: change.key == "muted" ? "muted talking" : change.key, key: change.key,
                                  colour: participantColours[bands.count % participantColours.count], spans: []))
            }
            if change.on {
                open[change.key] = open[change.key] ?? event.seconds
            } else if let start = open.removeValue(forKey: change.key) {
                bands[bands.firstIndex { $0.key == change.key }!].spans.append((start, event.seconds))
            }
        }
        for (key, start) in open { bands[bands.firstIndex { $0.key == key }!].spans.append((start, seconds)) }
        return bands
    }

    /// One marker per event, in time order, coloured as what it is about.
    static func markers(_ events: [EngineEvent], bands: [Band]) -> [Marker] {
        func talkerColour(_ key: String) -> String { bands.first { $0.key == key }?.colour ?? otherEventColour }
        return events.sorted { $0.frame < $1.frame }.map { event in
            let label: String, colour: String
            switch event.kind {
            case .echoCancellation(let on, _): (label, colour) = ("echo cancellation \(on ? "on" : "off")", otherEventColour)
            case .speechStarted(let talker, _): (label, colour) = ("\(talker) talks", talkerColour(talker))
            case .speechEnded(let talker, _): (label, colour) = ("\(talker) stops", talkerColour(talker))
            case .mutedSpeechStarted: (label, colour) = ("muted talking", mutedColour)
            case .mutedSpeechEnded: (label, colour) = ("muted talking ends", mutedColour)
            case .duckingChanged(let target):
                (label, colour) = (target == 0 ? "duck back to 0 dB" : String(format: "duck %g dB", target), duckingColour)
            case .promptStyleChanged(let style): (label, colour) = ("style \(style.rawValue)", promptColour)
            case .promptPlayed(let id, let variant, let waited):
                let wait = waited > 0 ? String(format: ", waited %.1f s", waited) : ""
                (label, colour) = ("prompt \(id) (\(variant.rawValue)\(wait))", promptColour)
            case .promptDropped(let id, _): (label, colour) = ("prompt \(id) dropped", promptColour)
            case .routeChanged(_, let to, let algorithm): (label, colour) = ("route \(to.rawValue) (\(algorithm.rawValue))", otherEventColour)
            default: (label, colour) = (event.name, otherEventColour)
            }
            var inBand = false
            if case .speechStarted = event.kind { inBand = true }
            if case .speechEnded = event.kind { inBand = true }
            return Marker(seconds: event.seconds, label: label, event: event.name, colour: colour, inBand: inBand)
        }
    }
}
