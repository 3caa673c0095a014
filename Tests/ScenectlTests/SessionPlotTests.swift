import AudioCore
import AudioMeasurements
import Devices
import Foundation
import Testing
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An SVG that `--plot` wrote, read back as a program would: every element
/// with its attributes, its text and its parent.
final class PlotDocument: NSObject, XMLParserDelegate {
    struct Element {
        let name: String
        let attributes: [String: String]
        let parent: Int?
        var text = ""
    }

    private(set) var elements: [Element] = []
    private var open: [Int] = []
    private(set) var width = 0, height = 0

    init(path: String) throws {
        let parser = try #require(XMLParser(contentsOf: URL(fileURLWithPath: path)))
        super.init()
        parser.delegate = self
        try #require(parser.parse(), "\(String(describing: parser.parserError))")
        let svg = try #require(elements.first { $0.name == "svg" })
        (width, height) = (Int(svg.attributes["width"] ?? "") ?? 0, Int(svg.attributes["height"] ?? "") ?? 0)
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        elements.append(Element(name: name, attributes: attributes, parent: open.last))
        open.append(elements.count - 1)
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if let last = open.last { elements[last].text += string }
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        open.removeLast()
    }

    var title: String { elements.first { $0.name == "title" }?.text ?? "" }

    func children(of index: Int) -> [Element] { elements.filter { $0.parent == index } }

    /// The legend's entries: what the data calls each, and the name it shows.
    var legend: [String: String] {
        guard let legend = elements.firstIndex(where: { $0.attributes["id"] == "legend" }) else { return [:] }
        var entries: [String: String] = [:]
        for (index, entry) in elements.enumerated() where entry.parent == legend {
            entries[entry.attributes["data-series"] ?? ""] = children(of: index).first { $0.name == "text" }?.text
        }
        return entries
    }

    /// A trace's values, one per 10 ms window, as its `data-values` carry them.
    func trace(_ series: String) -> [Double]? {
        elements.first { $0.name == "path" && $0.attributes["data-series"] == series }?.attributes["data-values"]
            .map { $0.split(separator: " ").map { Double(String($0))! } }
    }

    /// The spans of one band, in seconds.
    func band(_ key: String) -> [(start: Double, end: Double)] {
        elements.filter { $0.attributes["data-band"] == key }.map { (Double($0.attributes["data-start"]!)!, Double($0.attributes["data-end"]!)!) }
    }

    /// Where each marker's label is drawn, and the span its text takes at 11 px, at least 5.5 px a character.
    var labelSpans: [(y: Double, span: ClosedRange<Double>, text: String)] {
        elements.enumerated().filter { $0.element.attributes["class"] == "marker" }.compactMap { index, _ in
            guard let label = children(of: index).first(where: { $0.name == "text" }) else { return nil }
            let x = Double(label.attributes["x"]!)!, width = Double(label.text.count) * 5.5
            return (Double(label.attributes["y"]!)!, label.attributes["text-anchor"] == "end" ? (x - width)...x : x...(x + width), label.text)
        }
    }

    /// Each event's marker: its event's name, its time and its label (a tooltip where labels crowd).
    var markers: [(event: String, seconds: Double, label: String)] {
        elements.enumerated().filter { $0.element.attributes["class"] == "marker" }.map { index, marker in
            (marker.attributes["data-event"]!, Double(marker.attributes["data-t"]!)!,
             children(of: index).first { $0.name == "text" || $0.name == "title" }?.text ?? "")
        }
    }
}

extension Scenectl {
    /// Runs scenectl with `PATH` alone in its environment.
    static func run(_ arguments: [String], searchPath: String) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ["PATH": searchPath]
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let stdout = out.fileHandleForReading.readDataToEndOfFile(), stderr = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
                      stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// The level in dBFS of each 10 ms window of `samples` at `rate`, as a person would measure it.
private func windowLevels(_ samples: [Float], rate: Int) -> [Double] {
    let windows = (samples.count * 100 + rate - 1) / rate
    return (0..<windows).map { Measure.rmsDecibels(Array(samples[($0 * rate / 100)..<min(samples.count, ($0 + 1) * rate / 100)])) }
}

private func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

private func events(_ path: String) throws -> [[String: Any]] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map {
        try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any]
    }
}

@Suite struct SessionPlotTests {
    static let tavern = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Scenes/tavern.yaml").standardized.path

    @Test func theTavernsPlotShowsTheGuestTheDuckingAndEveryEvent() throws {
        let folder = try RenderFolder()
        let out = folder.path + "/tavern.wav", eventsPath = folder.path + "/tavern.events.jsonl", plot = folder.path + "/tavern.svg"
        let result = try Scenectl.run(["render", Self.tavern, "--out", out, "--events", eventsPath, "--plot", plot,
                                       "--seconds", "18", "--route", "speakers", "--prompt", "0.5:welcome"])
        try #require(result.status == 0, "\(result.stderr) (run Tools/make_assets.sh to make the demo audio)")
        let document = try PlotDocument(path: plot)
        #expect(document.title.contains("Tavern") && document.title.contains("speakers (panning)"), "\(document.title)")
        let legend = document.legend
        #expect(legend["level:left"] == "left" && legend["level:right"] == "right", "\(legend)")
        #expect(legend["ducking"] == "ducking gain" && legend["band:guest"] == "guest", "\(legend)")
        #expect(legend["band:local"] != nil && legend["band:muted"] == "muted talking", "\(legend)")

        let posted = try events(eventsPath)
        func time(_ name: String, _ talker: String? = nil) throws -> Double {
            try #require(posted.first { $0["event"] as? String == name && (talker == nil || $0["talker"] as? String == talker) }?["t"] as? Double)
        }
        let (talks, stops) = (try time("speechStarted", "guest"), try time("speechEnded", "guest"))
        let depth = try #require(posted.compactMap { $0["targetDecibels"] as? Double }.first { $0 < 0 })
        #expect(depth == -18, "the tavern ducks to its mid level")

        // The ducking as the engine applied it: none before the guest, the room's depth while she talks.
        let ducking = try #require(document.trace("ducking"))
        #expect(ducking.count == 1_800)
        #expect(ducking[..<Int(talks * 100)].allSatisfy { $0 == 0 })
        let held = ducking[Int((talks + 0.1) * 100)..<Int(stops * 100)]
        #expect(!held.isEmpty && held.allSatisfy { abs($0 - depth) <= 1 }, "\(held.min()!)...\(held.max()!) dB")
        #expect(abs(ducking.last!) < 0.01, "back to 0 dB by the end")

        // Who talks when: the guest's band and the muted pair, from their events.
        let guest = document.band("guest"), muted = document.band("muted")
        #expect(guest.count == 1 && abs(guest[0].start - talks) < 0.01 && abs(guest[0].end - stops) < 0.01, "\(guest)")
        let mutedTalking = try time("mutedSpeechStarted")
        #expect(muted.count == 1 && abs(muted[0].start - mutedTalking) < 0.01, "\(muted)")

        // One marker per event, at its time.
        let markers = document.markers
        #expect(markers.count == posted.count)
        for (marker, event) in zip(markers, posted) {
            #expect(marker.event == event["event"] as? String && abs(marker.seconds - (event["t"] as! Double)) < 0.01, "\(marker)")
        }
        // Labels close in time are staggered into rows: none overlaps another.
        let spans = document.labelSpans
        #expect(spans.count == posted.count)
        for (index, one) in spans.enumerated() {
            for other in spans[(index + 1)...] where one.y == other.y {
                #expect(!one.span.overlaps(other.span), "\(one.text) and \(other.text)")
            }
        }
        #expect(markers.contains { $0.label == "duck -18 dB" } && markers.contains { $0.label == "prompt welcome (short)" }
                && markers.contains { $0.label == "muted talking" }, "\(markers.map(\.label))")
    }

    @Test func levelTracesAreTheWrittenFilesLevelsEvery10ms() throws {
        let folder = try RenderFolder()
        let out = folder.path + "/out.wav", plot = folder.path + "/plot.svg"
        let result = try Scenectl.run(["render", folder.scene, "--out", out, "--plot", plot, "--route", "surround51", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let channels = try result.summary()["channels"] as! [[String: Any]]
        let audio = try AudioFileReader.read(path: out).buffer
        let document = try PlotDocument(path: plot)
        for (index, channel) in channels.enumerated() {
            let name = channel["name"] as! String
            #expect(document.legend["level:\(name)"] == name)
            let trace = try #require(document.trace("level:\(name)"))
            let measured = windowLevels(audio.channel(index), rate: 48_000)
            #expect(trace.count == measured.count && trace.count == 300)
            for (plotted, level) in zip(trace, measured) where level > -100 || plotted > -100 {
                #expect(abs(plotted - level) <= 1, "\(name): plotted \(plotted), measured \(level) dBFS")
            }
            // Over the whole render the windows add up to the summary's RMS.
            let power = trace.map { pow(10, $0 / 10) }.reduce(0, +) / Double(trace.count)
            if let rms = channel["rmsDBFS"] as? Double {
                #expect(abs(10 * log10(power) - rms) <= 1, "\(name): \(10 * log10(power)) against \(rms) dBFS")
            } else {
                #expect(power == 0, "\(name) is silent in the summary")
            }
        }
        // No voice section: nothing ducks and nobody talks.
        #expect(document.trace("ducking") == nil && document.band("local").isEmpty && document.markers.isEmpty)
    }

    @Test func aPNGHasItsSignatureAndThePlotsSize() throws {
        let folder = try RenderFolder()
        let png = folder.path + "/plot.png", svg = folder.path + "/plot.svg"
        let result = try Scenectl.run(["render", folder.scene, "--out", folder.path + "/out.wav", "--plot", png, "--plot", svg, "--seconds", "1"])
        #expect(result.status == 0, "\(result.stderr)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: png)))
        #expect(bytes.prefix(8) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        // IHDR comes first: width and height, big-endian, after its length and name.
        func word(_ offset: Int) -> Int { bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) } }
        let document = try PlotDocument(path: svg)
        #expect(String(decoding: bytes[12..<16], as: UTF8.self) == "IHDR")
        #expect(word(16) == document.width && word(20) == document.height && document.width == 1_200 && document.height == 700)
    }

    @Test func aMinuteOfStereoIsAFewHundredKilobytes() throws {
        let folder = try RenderFolder()
        let plot = folder.path + "/plot.svg"
        let result = try Scenectl.run(["render", folder.scene, "--out", folder.path + "/out.wav", "--plot", plot, "--seconds", "60"])
        #expect(result.status == 0, "\(result.stderr)")
        let size = try #require(try FileManager.default.attributesOfItem(atPath: plot)[.size] as? Int)
        #expect(size < 400_000, "\(size) bytes")
        // Every window is still in the data, though the lines are drawn at most two points a pixel.
        let document = try PlotDocument(path: plot)
        #expect(document.trace("level:left")?.count == 6_000)
    }

    @Test func processVoicePlotShowsTheEchoTakenOffTheUplink() throws {
        let folder = try VoiceFolder()
        // The barkeep is the far end; the microphone hears its echo, 6 dB down
        // over a short room, and once the far end is quiet, at 6 s, a near talker.
        let rate = 16_000
        func speech(_ name: String) throws -> [Float] {
            let path = URL(fileURLWithPath: Self.tavern).deletingLastPathComponent().appendingPathComponent("audio/\(name).wav").path
            return try AudioFileReader.read(path: path).monoSamples(at: rate)
        }
        let far = try speech("barkeep"), near = try speech("vendor")
        var mic = Signals.whiteNoise(frames: 9 * rate, rms: 0.0003, seed: 4)
        for (index, sample) in far.enumerated() {
            for (tap, gain) in [(48, Float(0.5)), (80, 0.2), (160, 0.08)] where index + tap < mic.count { mic[index + tap] += sample * gain }
        }
        let nearStart = 6 * rate
        for (index, sample) in near.enumerated() where nearStart + index < mic.count { mic[nearStart + index] += sample }
        for (samples, path) in [(far, folder.far), (mic, folder.mic)] {
            let writer = try AudioFileWriter(path: path, format: .wavFloat, channelCount: 1, sampleRate: rate)
            try writer.write(AudioBuffer(mono: samples))
            try writer.close()
        }

        let up = folder.path + "/up.wav", plot = folder.path + "/voice.svg", eventsPath = folder.path + "/events.jsonl"
        let result = try Scenectl.run(["process-voice", "--far", folder.far, "--mic", folder.mic, "--out", up,
                                       "--events", eventsPath, "--plot", plot])
        try #require(result.status == 0, "\(result.stderr) (run Tools/make_assets.sh to make the demo audio)")
        let document = try PlotDocument(path: plot)
        #expect(document.title.contains("mic.wav") && document.title.contains("far.wav"), "\(document.title)")
        let micTrace = try #require(document.trace("level:microphone")), uplink = try #require(document.trace("level:uplink"))
        let farTrace = try #require(document.trace("level:far")), reduction = try #require(document.trace("echoReduction"))
        try #require(micTrace.count == 900 && uplink.count == 900 && farTrace.count == 900 && reduction.count == 900)

        // The microphone's trace is the file's level.
        let measured = windowLevels(try AudioFileReader.read(path: folder.mic).buffer.samples, rate: rate)
        for (plotted, level) in zip(micTrace, measured) { #expect(abs(plotted - level) <= 1) }

        // Single talk, once the canceller has had a second: the uplink far below the microphone.
        let single = (100..<560).filter { farTrace[$0] > -40 }
        #expect(single.count > 200)
        let below = median(single.map { micTrace[$0] - uplink[$0] })
        #expect(below > 30, "the uplink is \(below) dB below the microphone in single talk")
        #expect(median(single.map { reduction[$0] }) > 30)
        // Where the far end is silent, there is no echo to reduce and nothing is drawn.
        #expect((0..<900).filter { farTrace[$0] == -.infinity }.allSatisfy { reduction[$0].isNaN })

        // The detector's decisions: none on the echo alone, the near talker's speech found.
        let vad = document.band("vad")
        let onEcho = vad.map { max(0, min($0.end, 5.7) - max($0.start, 0.5)) }.reduce(0, +)
        let onNear = vad.map { max(0, min($0.end, 9) - max($0.start, 6)) }.reduce(0, +)
        #expect(onEcho <= 0.1 && onNear >= 1, "VAD on \(onEcho) s of echo and \(onNear) s of the near talker")
        let posted = try events(eventsPath)
        #expect(document.markers.count == posted.count)
        #expect(document.markers.first { $0.event == "speechStarted" }.map { (6...7).contains($0.seconds) } == true, "\(document.markers)")
    }

    @Test func aBadPlotIsAUsageErrorAndNothingIsRendered() throws {
        let folder = try RenderFolder()
        let out = folder.path + "/out.wav"
        let cases: [([String], String)] = [
            (["--plot", folder.path + "/plot.jpg"], "--plot must name a .svg or .png file, got \"\(folder.path)/plot.jpg\""),
            (["--plot", folder.path + "/plot"], "--plot must name a .svg or .png file, got \"\(folder.path)/plot\""),
            (["--events", folder.path + "/e.svg", "--plot", folder.path + "/./e.svg"], "--plot \"\(folder.path)/./e.svg\" is also the --events file"),
            (["--plot", folder.path + "/p.svg", "--plot", folder.path + "/p.svg"], "--plot \"\(folder.path)/p.svg\" is also the --plot file"),
        ]
        for (options, message) in cases {
            let result = try Scenectl.run(["render", folder.scene, "--out", out] + options)
            #expect(result.status == 2 && result.stderr.contains(message), "\(options): \(result.status) \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: out))
        // A plot that is one of the room's files, or the audio output, under another name.
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/tone.svg", withDestinationPath: folder.path + "/tone.wav")
        let input = try Scenectl.run(["render", folder.scene, "--out", out, "--plot", folder.path + "/tone.svg"])
        #expect(input.status == 2 && input.stderr.contains("--plot \(folder.path)/tone.svg: it is") && input.stderr.contains("one of the room's own inputs"),
                "\(input.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        try Data().write(to: URL(fileURLWithPath: out))
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/out.svg", withDestinationPath: out)
        let output = try Scenectl.run(["render", folder.scene, "--out", out, "--plot", folder.path + "/out.svg"])
        #expect(output.status == 2 && output.stderr.contains("is also the --out file"), "\(output.stderr)")

        let voice = try VoiceFolder()
        let bad = try Scenectl.run(["process-voice", "--mic", voice.mic, "--out", voice.path + "/up.wav", "--plot", voice.path + "/p.pdf"])
        #expect(bad.status == 2 && bad.stderr.contains("--plot must name a .svg or .png file, got \"\(voice.path)/p.pdf\""), "\(bad.stderr)")
        let same = try Scenectl.run(["process-voice", "--mic", voice.mic, "--out", voice.path + "/up.wav", "--events", voice.path + "/p.svg",
                                     "--plot", voice.path + "/p.svg"])
        #expect(same.status == 2 && same.stderr.contains("--plot \"\(voice.path)/p.svg\" is also the --events file"), "\(same.stderr)")
        #expect(!FileManager.default.fileExists(atPath: voice.path + "/up.wav"))
    }

    @Test func aPNGWithoutRsvgConvertIsAUsageErrorBeforeRendering() throws {
        let folder = try RenderFolder()
        let out = folder.path + "/out.wav"
        let result = try Scenectl.run(["render", folder.scene, "--out", out, "--plot", folder.path + "/plot.png"], searchPath: folder.path)
        #expect(result.status == 2 && result.stderr.contains("rsvg-convert") && result.stderr.contains("librsvg2-bin"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        // An SVG needs nothing from PATH.
        let svg = try Scenectl.run(["render", folder.scene, "--out", out, "--plot", folder.path + "/plot.svg", "--seconds", "1"],
                                   searchPath: folder.path)
        #expect(svg.status == 0, "\(svg.stderr)")
    }
}
