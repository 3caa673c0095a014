import Foundation

/// A session on one time axis: levels, ducking, echo reduction, who talks
/// when, and every event, drawn as a self-contained SVG.
///
/// Every trace and band also carries its values in `data-` attributes, so
/// a program reads the plot as exactly as a person does.
struct SessionPlot {
    /// Values in dB, one per 10 ms window from the start.
    struct Trace {
        var name: String
        /// What the data calls it: `level:left`, `ducking`, `echoReduction`.
        var key: String
        var colour: String
        /// -infinity is digital silence, drawn on the axis's floor; NaN is left undrawn.
        var values: [Double]
        /// Drawn as a shaded area down to the floor, under the lines: a
        /// backdrop such as the far end, which other traces are read against.
        var filled = false
    }

    /// The spans of time something was on, drawn as a row of bars.
    struct Band {
        var name: String
        /// What the data calls it: the talker's id, `muted`, `vad`.
        var key: String
        var colour: String
        var spans: [(start: Double, end: Double)]
    }

    /// One event, drawn as a line at its time with a short label.
    struct Marker {
        var seconds: Double
        var label: String
        /// The event's name on the wire.
        var event: String
        var colour: String
        /// A band shows it too (a talker's start or stop), so its label gives way first when labels crowd.
        var inBand = false
    }

    var title: String
    var subtitle: String
    var seconds: Double
    /// Output or signal levels in dBFS.
    var levels: [Trace] = []
    var ducking: Trace?
    /// How far below the microphone the uplink is, in dB, where the far end plays.
    var echoReduction: Trace?
    var bands: [Band] = []
    var markers: [Marker] = []

    static let windowSeconds = 0.01
    /// The page's size in pixels; a plot with many talkers or crowded events grows taller.
    static let width = 1_200, minimumHeight = 700
}

// MARK: Drawing

extension SessionPlot {
    /// The plot as an SVG document.
    func svg() -> String {
        var canvas = Canvas(seconds: seconds)
        canvas.draw(self)
        return canvas.document(title: title)
    }
}

/// Lays the plot out on a fixed page and writes its elements.
private struct Canvas {
    static let left = 130.0, right = 28.0
    static let labelRowHeight = 15.0, bandRowHeight = 20.0, panelGap = 16.0, maximumLabelRows = 8
    static let font = "DejaVu Sans, Verdana, sans-serif"
    /// DejaVu Sans at 11 px averages under this many pixels a character.
    static let labelCharacterWidth = 6.7

    let seconds: Double
    var body: [String] = []
    var pageHeight = Double(SessionPlot.minimumHeight)

    init(seconds: Double) { self.seconds = max(seconds, SessionPlot.windowSeconds) }

    var plotWidth: Double { Double(SessionPlot.width) - Self.left - Self.right }

    func x(_ time: Double) -> Double { Self.left + min(max(time, 0), seconds) / seconds * plotWidth }

    mutating func draw(_ plot: SessionPlot) {
        body.append(text(plot.title, x: 16, y: 28, size: 18, weight: "bold", id: "title"))
        body.append(text(plot.subtitle, x: 16, y: 48, size: 12, colour: "#555", id: "subtitle"))
        let (rows, rowCount) = labelRows(plot.markers)
        var top = drawLegend(plot, unlabelled: rows.filter { $0 == nil }.count, top: 60)
        let labelTop = top + 6
        top = labelTop + Double(rowCount) * Self.labelRowHeight + 6

        // Fixed heights for the small panels; the levels take what is left, and the page grows rather than squeeze them.
        let bottomMargin = 46.0
        let duckingHeight = plot.ducking == nil ? 0 : 96.0
        let reductionHeight = plot.echoReduction == nil ? 0 : 120.0
        let bandsHeight = plot.bands.isEmpty ? 0 : Double(plot.bands.count) * Self.bandRowHeight
        let gaps = Self.panelGap * Double([duckingHeight, reductionHeight, bandsHeight].filter { $0 > 0 }.count)
        let levelsHeight = max(260, pageHeight - top - bottomMargin - duckingHeight - reductionHeight - bandsHeight - gaps)
        pageHeight = top + levelsHeight + duckingHeight + reductionHeight + bandsHeight + gaps + bottomMargin

        var panelTop = top
        let levelRange = Self.levelRange(plot.levels)
        drawPanel(top: panelTop, height: levelsHeight, range: levelRange, axis: "level (dBFS)", traces: plot.levels, id: "levels")
        panelTop += levelsHeight + Self.panelGap
        if let ducking = plot.ducking {
            let deepest = ducking.values.filter(\.isFinite).min() ?? 0
            let step = deepest < -24 ? 12.0 : 6.0
            let floor = min(-step, ((deepest - 2) / step).rounded(.down) * step)
            drawPanel(top: panelTop, height: duckingHeight, range: (floor, 3, step), axis: "ducking (dB)", traces: [ducking], id: "ducking")
            panelTop += duckingHeight + Self.panelGap
        }
        if let reduction = plot.echoReduction {
            let finite = reduction.values.filter(\.isFinite)
            let ceiling = min(100, max(40, ((finite.max() ?? 0) / 20).rounded(.up) * 20))
            // The uplink may be louder than the microphone where gain control lifts a near talker.
            let floor = max(-40, min(0, ((finite.min() ?? 0) / 20).rounded(.down) * 20))
            drawPanel(top: panelTop, height: reductionHeight, range: (floor, ceiling, 20),
                      axis: "echo reduction (dB)", traces: [reduction], id: "echoReduction")
            panelTop += reductionHeight + Self.panelGap
        }
        if !plot.bands.isEmpty {
            drawBands(plot.bands, top: panelTop)
            panelTop += bandsHeight + Self.panelGap
        }
        let axisTop = panelTop - Self.panelGap
        drawTimeAxis(top: top, bottom: axisTop)
        drawMarkers(plot.markers, rows: rows, labelTop: labelTop, panelsTop: top, bottom: axisTop)
    }

    // MARK: Legend

    /// One entry per trace, band and the events, wrapped over as many rows as they need; the legend's bottom.
    mutating func drawLegend(_ plot: SessionPlot, unlabelled: Int, top: Double) -> Double {
        enum Swatch { case line, area, bar, marker }
        var entries: [(key: String, name: String, colour: String, swatch: Swatch)] = []
        for trace in plot.levels + [plot.ducking, plot.echoReduction].compactMap({ $0 }) {
            entries.append((trace.key, trace.name, trace.colour, trace.filled ? .area : .line))
        }
        for band in plot.bands { entries.append(("band:" + band.key, band.name, band.colour, .bar)) }
        if !plot.markers.isEmpty {
            let name = unlabelled > 0 ? "events (\(unlabelled) of \(plot.markers.count) too crowded to label)" : "events"
            entries.append(("events", name, "#555", .marker))
        }
        var items = ["<g id=\"legend\" font-size=\"12\">"]
        var x = 16.0, y = top + 12
        for entry in entries {
            let width = 26 + Double(entry.name.count) * 7.2 + 18
            if x + width > Double(SessionPlot.width) - 16 {
                x = 16
                y += 18
            }
            var item = "<g data-series=\"\(escape(entry.key))\">"
            switch entry.swatch {
            case .line: item += line(x, y - 4, x + 20, y - 4, colour: entry.colour, width: 2.5)
            case .bar: item += "<rect x=\"\(f(x))\" y=\"\(f(y - 9))\" width=\"20\" height=\"10\" fill=\"\(entry.colour)\"/>"
            case .area: item += "<rect x=\"\(f(x))\" y=\"\(f(y - 9))\" width=\"20\" height=\"10\" fill=\"\(entry.colour)\" fill-opacity=\"0.3\"/>"
            case .marker: item += line(x + 10, y - 11, x + 10, y + 2, colour: entry.colour, width: 1, dash: "3,2")
            }
            item += text(entry.name, x: x + 26, y: y) + "</g>"
            items.append(item)
            x += width
        }
        items.append("</g>")
        body += items
        return y + 6
    }

    // MARK: Panels

    /// A range in dB and its tick step, from the quietest windows any trace holds.
    static func levelRange(_ traces: [SessionPlot.Trace]) -> (low: Double, high: Double, step: Double) {
        let finite = traces.flatMap(\.values).filter(\.isFinite).sorted()
        guard !finite.isEmpty else { return (-100, 0, 20) }
        // The quietest percent may be near silence; the axis need not reach it.
        let quiet = finite[finite.count / 100]
        let low = min(-40, max(-120, (quiet / 10).rounded(.down) * 10 - 10))
        let step = low < -60 ? 20.0 : 10.0
        return ((low / step).rounded(.down) * step, 0, step)
    }

    mutating func drawPanel(top: Double, height: Double, range: (low: Double, high: Double, step: Double),
                            axis: String, traces: [SessionPlot.Trace], id: String) {
        func y(_ value: Double) -> Double {
            let clamped = value.isNaN ? value : min(max(value, range.low), range.high)
            return top + (range.high - clamped) / (range.high - range.low) * height
        }
        var items = ["<g id=\"\(id)\">", frame(top: top, height: height)]
        var tick = (range.high / range.step).rounded(.down) * range.step
        while tick >= range.low {
            let ty = y(tick)
            items.append(line(Self.left, ty, Self.left + plotWidth, ty, colour: tick == 0 ? "#bbb" : "#e4e4e4", width: 1))
            items.append(text(f0(tick), x: Self.left - 6, y: ty + 4, size: 11, colour: "#444", anchor: "end"))
            tick -= range.step
        }
        items.append(text(axis, x: 18, y: top + height / 2, size: 12, colour: "#222", anchor: "middle",
                          transform: "rotate(-90 18 \(f(top + height / 2)))"))
        for trace in traces.filter(\.filled) + traces.filter({ !$0.filled }) {
            let runs = self.runs(trace.values, y: y)
            var data = runs.map { "M" + $0.map { f($0.x) + "," + f($0.y) }.joined(separator: " ") }
            var style = "fill=\"none\" stroke=\"\(trace.colour)\" stroke-width=\"1.2\" stroke-linejoin=\"round\" stroke-opacity=\"0.9\""
            if trace.filled {
                let floor = f(y(range.low))
                data = zip(data, runs).map { "\($0) \(f($1.last!.x)),\(floor) \(f($1.first!.x)),\(floor)Z" }
                style = "fill=\"\(trace.colour)\" fill-opacity=\"0.3\" stroke=\"none\""
            }
            items.append("<path data-series=\"\(escape(trace.key))\" data-start=\"0\" data-step=\"\(SessionPlot.windowSeconds)\" "
                + "data-values=\"\(trace.values.map(value).joined(separator: " "))\" \(style) d=\"\(data.joined(separator: " "))\"/>")
        }
        items.append("</g>")
        body += items
    }

    /// The trace as runs of points between the windows left undrawn: every
    /// window, or where there are more windows than pixels, each pixel's
    /// quietest and loudest in their order.
    func runs(_ values: [Double], y: (Double) -> Double) -> [[(x: Double, y: Double)]] {
        let columns = Int(plotWidth)
        var points: [(index: Int, value: Double)] = []
        if values.count <= 2 * columns {
            points = values.enumerated().map { ($0.offset, $0.element) }
        } else {
            var start = 0
            for column in 0..<columns {
                let end = (column + 1) * values.count / columns
                let slice = values[start..<end]
                start = end
                guard !slice.isEmpty else { continue }
                // A window left undrawn leaves a gap, as it does drawn in full.
                if let gap = slice.firstIndex(where: \.isNaN) {
                    points.append((gap, .nan))
                    continue
                }
                let low = slice.indices.min { slice[$0] < slice[$1] }!, high = slice.indices.max { slice[$0] < slice[$1] }!
                for index in [low, high].sorted() where points.last?.index != index { points.append((index, values[index])) }
            }
        }
        var runs: [[(x: Double, y: Double)]] = [], drawing = false
        for (index, value) in points {
            guard !value.isNaN else {
                drawing = false
                continue
            }
            if !drawing { runs.append([]) }
            runs[runs.count - 1].append((x((Double(index) + 0.5) * SessionPlot.windowSeconds), y(value)))
            drawing = true
        }
        return runs
    }

    mutating func drawBands(_ bands: [SessionPlot.Band], top: Double) {
        var items = ["<g id=\"bands\">"]
        for (row, band) in bands.enumerated() {
            let rowTop = top + Double(row) * Self.bandRowHeight
            items.append("<rect x=\"\(f(Self.left))\" y=\"\(f(rowTop + 2))\" width=\"\(f(plotWidth))\" height=\"\(f(Self.bandRowHeight - 4))\" fill=\"#f3f3f3\"/>")
            items.append(text(band.name, x: Self.left - 8, y: rowTop + Self.bandRowHeight / 2 + 4, size: 12, colour: "#222", anchor: "end"))
            for span in band.spans {
                let start = x(span.start), end = max(x(span.end), start + 1)
                items.append("<rect data-band=\"\(escape(band.key))\" data-start=\"\(f3(span.start))\" data-end=\"\(f3(span.end))\" "
                    + "x=\"\(f(start))\" y=\"\(f(rowTop + 3))\" width=\"\(f(end - start))\" height=\"\(f(Self.bandRowHeight - 6))\" "
                    + "fill=\"\(band.colour)\" fill-opacity=\"0.85\"/>")
            }
        }
        items.append("</g>")
        body += items
    }

    mutating func drawTimeAxis(top: Double, bottom: Double) {
        let candidates = [0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600]
        let step = candidates.first { seconds / $0 <= 14 } ?? 600
        var items = ["<g id=\"time-axis\">"]
        var tick = 0.0
        while tick <= seconds + 1e-9 {
            let tx = x(tick)
            items.append(line(tx, top, tx, bottom, colour: "#ececec", width: 1))
            items.append(line(tx, bottom, tx, bottom + 5, colour: "#444", width: 1))
            items.append(text(step < 1 ? String(format: "%.1f", tick) : f0(tick), x: tx, y: bottom + 18, size: 11, colour: "#444", anchor: "middle"))
            tick += step
        }
        items.append(text("time (s)", x: Self.left + plotWidth / 2, y: bottom + 36, size: 12, colour: "#222", anchor: "middle"))
        items.append("</g>")
        // The grid goes under everything drawn so far.
        body.insert(contentsOf: items, at: 2)
    }

    // MARK: Markers

    /// Each marker's label row, so that no two labels overlap: a label goes
    /// in the first row with room for it, and labels near the right edge end
    /// at their line. Where `maximumLabelRows` are full, a marker keeps its
    /// line without a label (nil); labels a band repeats give way first.
    func labelRows(_ markers: [SessionPlot.Marker]) -> (rows: [Int?], count: Int) {
        func place(in order: [Int]) -> (rows: [Int?], count: Int) {
            var taken: [[ClosedRange<Double>]] = []
            var rows = [Int?](repeating: nil, count: markers.count)
            for index in order {
                let extent = labelExtent(markers[index])
                let padded = (extent.lowerBound - 6)...(extent.upperBound + 6)
                if let row = taken.firstIndex(where: { $0.allSatisfy { !$0.overlaps(padded) } }) {
                    taken[row].append(extent)
                    rows[index] = row
                } else if taken.count < Self.maximumLabelRows {
                    taken.append([extent])
                    rows[index] = taken.count - 1
                }
            }
            return (rows, taken.count)
        }
        // In time order, a cause's label sits above its effects'.
        let inTime = place(in: Array(markers.indices))
        guard inTime.rows.contains(nil) else { return inTime }
        return place(in: markers.indices.sorted { (markers[$0].inBand ? 1 : 0, $0) < (markers[$1].inBand ? 1 : 0, $1) })
    }

    func labelWidth(_ label: String) -> Double { Double(label.count) * Self.labelCharacterWidth }

    func endsAtLine(_ marker: SessionPlot.Marker) -> Bool {
        x(marker.seconds) + 3 + labelWidth(marker.label) > Double(SessionPlot.width) - 8
    }

    func labelExtent(_ marker: SessionPlot.Marker) -> ClosedRange<Double> {
        let at = x(marker.seconds), width = labelWidth(marker.label)
        return endsAtLine(marker) ? (at - 3 - width)...at : at...(at + 3 + width)
    }

    /// A line for every marker; its label in its row, or where it has none, as the line's tooltip.
    mutating func drawMarkers(_ markers: [SessionPlot.Marker], rows: [Int?], labelTop: Double, panelsTop: Double, bottom: Double) {
        var items = ["<g id=\"markers\" font-size=\"11\">"]
        for (marker, row) in zip(markers, rows) {
            let at = x(marker.seconds)
            var element = "<g class=\"marker\" data-event=\"\(escape(marker.event))\" data-t=\"\(f3(marker.seconds))\">"
            if let row {
                let rowTop = labelTop + Double(row) * Self.labelRowHeight, ends = endsAtLine(marker)
                element += line(at, rowTop, at, bottom, colour: marker.colour, width: 1, dash: "4,3", opacity: 0.7)
                    + text(marker.label, x: ends ? at - 3 : at + 3, y: rowTop + Self.labelRowHeight - 4, size: 11, colour: marker.colour,
                           anchor: ends ? "end" : "start", halo: true)
            } else {
                element += "<title>\(escape(marker.label))</title>"
                    + line(at, panelsTop, at, bottom, colour: marker.colour, width: 1, dash: "4,3", opacity: 0.7)
            }
            items.append(element + "</g>")
        }
        items.append("</g>")
        body += items
    }

    // MARK: Elements

    func frame(top: Double, height: Double) -> String {
        "<rect x=\"\(f(Self.left))\" y=\"\(f(top))\" width=\"\(f(plotWidth))\" height=\"\(f(height))\" fill=\"none\" stroke=\"#999\" stroke-width=\"1\"/>"
    }

    func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, colour: String, width: Double,
              dash: String? = nil, opacity: Double = 1) -> String {
        var element = "<line x1=\"\(f(x1))\" y1=\"\(f(y1))\" x2=\"\(f(x2))\" y2=\"\(f(y2))\" stroke=\"\(colour)\" stroke-width=\"\(f(width))\""
        if let dash { element += " stroke-dasharray=\"\(dash)\"" }
        if opacity < 1 { element += " stroke-opacity=\"\(f(opacity))\"" }
        return element + "/>"
    }

    /// A label; with `halo`, a white outline keeps it legible over lines it crosses.
    func text(_ content: String, x: Double, y: Double, size: Double = 12, weight: String? = nil, colour: String = "#111",
              anchor: String = "start", id: String? = nil, transform: String? = nil, halo: Bool = false) -> String {
        var element = "<text x=\"\(f(x))\" y=\"\(f(y))\" font-size=\"\(f(size))\" fill=\"\(colour)\""
        if anchor != "start" { element += " text-anchor=\"\(anchor)\"" }
        if let weight { element += " font-weight=\"\(weight)\"" }
        if let id { element += " id=\"\(id)\"" }
        if let transform { element += " transform=\"\(transform)\"" }
        if halo { element += " stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\" stroke-linejoin=\"round\"" }
        return element + ">\(escape(content))</text>"
    }

    func document(title: String) -> String {
        let (width, height) = (SessionPlot.width, Int(pageHeight.rounded(.up)))
        return """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" font-family="\(Self.font)">
        <title>\(escape(title))</title>
        <rect width="\(width)" height="\(height)" fill="white"/>
        \(body.joined(separator: "\n"))
        </svg>

        """
    }
}

// MARK: Formatting

/// Pixels to a tenth, enough for any screen.
private func f(_ value: Double) -> String { String(format: "%.1f", value) }
private func f0(_ value: Double) -> String { String(format: "%.0f", value) }
private func f3(_ value: Double) -> String { String(format: "%.3f", value) }

/// A value for `data-values`: dB to a hundredth, `-inf` for silence, `nan` where nothing is drawn.
private func value(_ decibels: Double) -> String {
    if decibels.isNaN { return "nan" }
    if decibels.isInfinite { return decibels < 0 ? "-inf" : "inf" }
    return String(format: "%.2f", decibels)
}

private func escape(_ text: String) -> String {
    var escaped = ""
    for character in text {
        switch character {
        case "&": escaped += "&amp;"
        case "<": escaped += "&lt;"
        case ">": escaped += "&gt;"
        case "\"": escaped += "&quot;"
        default: escaped.append(character)
        }
    }
    return escaped
}
