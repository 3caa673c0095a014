import AudioCore
import Scene
import Spatial

#if canImport(Glibc)
import Glibc
#endif

/// The sources that asked for `soundField`, panned by the engine into one
/// third-order ambisonic field (AmbiX) around the listener and decoded once
/// for the route:
///
/// - on loudspeakers, onto the real layout: the field is sampled on a dense
///   set of virtual directions with max-rE weights, and each is panned onto
///   its pair of real speakers (AllRAD), so the decoder keeps its energy on
///   the speakers nearest the source even on 5.1's uneven layout;
/// - on headphones, onto 36 virtual speakers heard through HRTF.
///
/// The decoded feeds stream into the route's OpenAL bus, which adds its
/// limiter and latency like every other bus: the field stays sample-aligned
/// with them. It is computed a chunk ahead of what the bus renders, because
/// an OpenAL stream that runs dry stops.
final class SoundFieldBus {
    static let order = 3
    static let components = Ambisonics.channelCount(order: order)
    static let chunkFrames = RoomRenderer.blockFrames
    /// Enough chunks for the longest render call and the chunk ahead.
    static let chunks = RoomRenderer.maximumCallFrames / chunkFrames + 3

    /// What an emitter is anchored to.
    enum Anchor {
        /// A point in the world, attenuated with distance.
        case point(Placement, DistanceModel)
        /// A bed's speaker: a direction in the world (OpenAL axes), never attenuated.
        case direction(SIMD3<Double>)
    }

    struct Emitter {
        let signal: TimelineSamples
        let anchor: Anchor
        let gain: Double
        /// Obstruction and occlusion on the direct path; nil when they leave it alone.
        var shelf: HighShelfFilter?
        /// The part rendered spatially: less than 1 while an in-head source
        /// crossfades to its bypass copy.
        var spatialShare = 1.0
    }

    private let streams: [StreamedVoice]
    /// Rows of `components` gains, one per stream channel (or per stream).
    private let decoder: [Float]
    private let outputs: Int
    /// Per field component, on headphones: the high-frequency power the
    /// virtual speakers' spread loses.
    private var diffuseShelves: [HighShelfFilter]
    private let listenerPosition: Position
    private let toListener: Rotation
    private var emitters: [Emitter] = []
    /// The timeline frame the next chunk starts at.
    private var producedFrame: Int
    private var primed = false
    /// Each emitter's encoding gains reached at the end of the last chunk, `components` apiece.
    private var coefficients: [Float] = []
    private var target = [Float](repeating: 0, count: components)
    private var harmonics = [Double](repeating: 0, count: components)
    private var field: [Float]
    private var signal: [Float]
    private var feeds: [Float]

    /// - Parameter mixer: the route's own bus, which plays the decoded field.
    init(mixer: SpatialMixer, listenerPosition: Position, listenerOrientation: Orientation, startingAt frame: Int) throws {
        self.listenerPosition = listenerPosition
        toListener = listenerOrientation.rotation.transposed
        producedFrame = frame
        let chunk = Self.chunkFrames
        if mixer.algorithm == .hrtf {
            let directions = Ambisonics.virtualSpeakerDirections(order: Self.order)
            streams = try directions.map { try mixer.makeVirtualSpeakerStream(direction: $0, chunkFrames: chunk, chunks: Self.chunks) }
            let rows = Self.samplingDecoder(directions)
            decoder = rows.flatMap { $0 }
            outputs = directions.count
            // The rows sum a source's pressure back exactly, which is what
            // the ears hear below about 1.5 kHz, where neighbouring virtual
            // speakers reach them in phase. Above, they add in power, which
            // the spread of the decoder lowers: a shelf restores it.
            let restore = 1 / Self.meanPower(rows).squareRoot()
            // OpenAL's shelf reaches the square of its gain at the top.
            diffuseShelves = [HighShelfFilter](repeating: HighShelfFilter(gainHF: restore.squareRoot(), sampleRate: Double(Room.sampleRate),
                                                                          corner: 1_500),
                                               count: Self.components)
            feeds = [Float](repeating: 0, count: chunk)
        } else {
            streams = [try mixer.makeOutputStream(chunkFrames: chunk, chunks: Self.chunks)]
            decoder = Self.loudspeakerDecoder(mixer.layout).flatMap { $0 }
            outputs = mixer.channelCount
            diffuseShelves = []
            feeds = [Float](repeating: 0, count: chunk * outputs)
        }
        field = [Float](repeating: 0, count: chunk * Self.components)
        signal = [Float](repeating: 0, count: chunk)
    }

    /// Adds a point source; returns its index for `setSpatialShare`.
    @discardableResult
    func addPoint(_ signal: TimelineSamples, placement: Placement, distance: DistanceModel, gain: Double,
                  directPathHF: Double) -> Int {
        emitters.append(Emitter(signal: signal, anchor: .point(placement, distance), gain: gain, shelf: Self.shelf(directPathHF)))
        coefficients += Self.silent
        return emitters.count - 1
    }

    /// Adds a bed: one emitter per speaker feed, at its direction turned by the bed's orientation.
    func addBed(feeds: [[Float]], directions: [SIMD3<Double>], orientation: Orientation,
                startFrame: Int, loop: Bool, rate: Double, gain: Double) {
        let rotation = orientation.rotation
        for (feed, direction) in zip(feeds, directions) {
            emitters.append(Emitter(signal: TimelineSamples(samples: feed, startFrame: startFrame, rate: rate, loop: loop),
                                    anchor: .direction(rotation * direction), gain: gain))
            coefficients += Self.silent
        }
    }

    func setSpatialShare(_ share: Double, of emitter: Int) { emitters[emitter].spatialShare = share }

    /// Queues the field up to a chunk beyond `frame`, the end of what the bus renders next.
    func prepare(through frame: Int) throws {
        while producedFrame < frame + Self.chunkFrames {
            try produceChunk()
        }
    }

    private func produceChunk() throws {
        let chunk = Self.chunkFrames, components = Self.components
        let time = Double(producedFrame) / Double(Room.sampleRate)
        field.withUnsafeMutableBufferPointer { field in
            field.update(repeating: 0)
            for index in emitters.indices {
                signal.withUnsafeMutableBufferPointer { signal in
                    emitters[index].signal.read(into: signal, from: producedFrame)
                    if emitters[index].shelf != nil { emitters[index].shelf!.process(signal) }
                }
                encode(emitters[index], at: time)
                signal.withUnsafeBufferPointer { signal in
                    target.withUnsafeBufferPointer { target in
                        coefficients.withUnsafeMutableBufferPointer { all in
                            let current = UnsafeMutableBufferPointer(rebasing: all[(index * components)..<((index + 1) * components)])
                            if !primed { _ = current.update(fromContentsOf: target) }
                            // Gains ramp across the chunk, as OpenAL's do across a mix.
                            for frame in 0..<chunk {
                                let sample = signal[frame], ramp = Float(frame + 1) / Float(chunk)
                                for component in 0..<components {
                                    field[frame * components + component] += sample * (current[component] + (target[component] - current[component]) * ramp)
                                }
                            }
                            _ = current.update(fromContentsOf: target)
                        }
                    }
                }
            }
        }
        primed = true
        if !diffuseShelves.isEmpty {
            field.withUnsafeMutableBufferPointer { field in
                for frame in 0..<chunk {
                    for component in 0..<components {
                        field[frame * components + component] = diffuseShelves[component].process(field[frame * components + component])
                    }
                }
            }
        }
        try decodeAndQueue()
        producedFrame += chunk
    }

    private func decodeAndQueue() throws {
        let chunk = Self.chunkFrames, components = Self.components
        try field.withUnsafeBufferPointer { field in
            try decoder.withUnsafeBufferPointer { decoder in
                try feeds.withUnsafeMutableBufferPointer { feeds in
                    if streams.count == 1 {
                        for frame in 0..<chunk {
                            for output in 0..<outputs {
                                var sum: Float = 0
                                for component in 0..<components { sum += decoder[output * components + component] * field[frame * components + component] }
                                feeds[frame * outputs + output] = sum
                            }
                        }
                        try streams[0].queue(UnsafeBufferPointer(feeds))
                    } else {
                        for (output, stream) in streams.enumerated() {
                            for frame in 0..<chunk {
                                var sum: Float = 0
                                for component in 0..<components { sum += decoder[output * components + component] * field[frame * components + component] }
                                feeds[frame] = sum
                            }
                            try stream.queue(UnsafeBufferPointer(feeds))
                        }
                    }
                }
            }
        }
    }

    /// Writes the emitter's gains into the field at `time` to `target`.
    /// Within two head radii the directional components fade out, to none
    /// at the centre, so a source passing through the listener becomes
    /// omnidirectional rather than jumping sides; over one radius the fade
    /// was steep enough to step by nearly 1 dB a block at walking pace.
    private func encode(_ emitter: Emitter, at time: Double) {
        var direction: SIMD3<Double>
        var gain = emitter.gain * emitter.spatialShare
        var focus = 1.0
        switch emitter.anchor {
        case .point(let placement, let distance):
            direction = toListener * (placement.position(at: time) - listenerPosition)
            let length = (direction * direction).sum().squareRoot()
            gain *= distance.gain(at: length)
            focus = min(length / (2 * PointSource.headRadius), 1)
            if length == 0 { direction = SIMD3(0, 0, -1) }
        case .direction(let world):
            direction = toListener * world
        }
        harmonics.withUnsafeMutableBufferPointer { Ambisonics.harmonics(direction: direction, order: Self.order, into: $0) }
        for component in 0..<Self.components {
            target[component] = Float(harmonics[component] * gain * (component == 0 ? 1 : focus))
        }
    }

    private static let silent = [Float](repeating: 0, count: components)

    private static func shelf(_ gainHF: Double) -> HighShelfFilter? {
        gainHF < 1 ? HighShelfFilter(gainHF: gainHF, sampleRate: Double(Room.sampleRate)) : nil
    }

    /// Sampling-decoder rows with max-rE weights for `directions`: every row
    /// sums a field's pressure back exactly, so the speakers add up to the
    /// source as the ear hears them together.
    static func samplingDecoder(_ directions: [SIMD3<Double>]) -> [[Float]] {
        let maxRE = Ambisonics.maxREWeights(order: order)
        let degree = (0...order).flatMap { n in [Int](repeating: n, count: 2 * n + 1) }
        let scale = 1 / Double(directions.count)
        return directions.map { direction in
            let values = Ambisonics.harmonics(direction: direction, order: order)
            return values.indices.map { Float(values[$0] * Double(2 * degree[$0] + 1) * maxRE[degree[$0]] * scale) }
        }
    }

    /// An AllRAD decoder onto a loudspeaker layout, in its channel order,
    /// normalised so a source anywhere on the horizon keeps unit power. The
    /// LFE gets nothing; a mono output gets the omnidirectional component.
    static func loudspeakerDecoder(_ layout: ChannelLayout) -> [[Float]] {
        if layout == .mono { return [[1] + [Float](repeating: 0, count: components - 1)] }
        let speakers = layout.speakers.indices.filter { layout.speakers[$0] != .lowFrequency }
        let virtual = Ambisonics.fibonacciDirections(count: 240)
        let sampled = samplingDecoder(virtual)
        var rows = [[Double]](repeating: [Double](repeating: 0, count: components), count: layout.channelCount)
        for (direction, row) in zip(virtual, sampled) {
            let azimuth = atan2(direction.x, -direction.z) * 180 / .pi
            for (speaker, gain) in pairwisePanning(azimuth: azimuth, speakers: speakers.map { ($0, layout.azimuths[$0]) }) {
                for component in 0..<components { rows[speaker][component] += gain * Double(row[component]) }
            }
        }
        let normalise = 1 / meanPower(rows.map { $0.map(Float.init) }).squareRoot()
        return rows.map { $0.map { Float($0 * normalise) } }
    }

    /// The summed power of a decoder's outputs for a source on the horizon, averaged around it.
    static func meanPower(_ rows: [[Float]]) -> Double {
        var power = 0.0
        let probes = 360
        for step in 0..<probes {
            let angle = Double(step) * 2 * .pi / Double(probes)
            let harmonics = Ambisonics.harmonics(direction: SIMD3(sin(angle), 0, -cos(angle)), order: order)
            for row in rows {
                let gain = zip(row, harmonics).map { Double($0) * $1 }.reduce(0, +)
                power += gain * gain
            }
        }
        return power / Double(probes)
    }

    /// Constant-power panning of a horizontal direction onto the pair of
    /// speakers around it (2D VBAP). A gap of half the circle or more (the
    /// back of a stereo pair) gets an imaginary speaker in its middle whose
    /// share is split between the gap's two edges.
    static func pairwisePanning(azimuth: Double, speakers: [(index: Int, azimuth: Double)]) -> [(Int, Double)] {
        func wrapped(_ degrees: Double) -> Double { (degrees.truncatingRemainder(dividingBy: 360) + 360).truncatingRemainder(dividingBy: 360) }
        let ring = speakers.sorted { wrapped($0.azimuth) < wrapped($1.azimuth) }
        guard ring.count > 1 else { return ring.map { ($0.index, 1) } }
        for (position, first) in ring.enumerated() {
            let second = ring[(position + 1) % ring.count]
            let span = wrapped(second.azimuth - first.azimuth)
            let into = wrapped(azimuth - first.azimuth)
            guard into <= span else { continue }
            if span < 180 {
                let (a, b) = pairGains(into, span)
                return [(first.index, a), (second.index, b)]
            }
            let half = span / 2, split = 0.5.squareRoot()
            let (a, b) = into <= half ? pairGains(into, half) : pairGains(into - half, half)
            let gains = into <= half ? (a + b * split, b * split) : (a * split, b + a * split)
            let norm = (gains.0 * gains.0 + gains.1 * gains.1).squareRoot()
            return [(first.index, gains.0 / norm), (second.index, gains.1 / norm)]
        }
        return []
    }

    /// Tangent-law gains, unit power, for a direction `into` degrees past
    /// the first of two speakers `span` degrees apart.
    private static func pairGains(_ into: Double, _ span: Double) -> (Double, Double) {
        let first = SIMD2(0.0, 1.0), second = SIMD2(sin(span * .pi / 180), cos(span * .pi / 180))
        let target = SIMD2(sin(into * .pi / 180), cos(into * .pi / 180))
        let determinant = first.x * second.y - second.x * first.y
        let a = (target.x * second.y - second.x * target.y) / determinant
        let b = (first.x * target.y - target.x * first.y) / determinant
        let norm = (a * a + b * b).squareRoot()
        return (a / norm, b / norm)
    }
}
