import AudioCore
import CMixKernels
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
/// with them. Each chunk is encoded just before the bus renders it, so a
/// move is heard in the block after it is made; the streams loop over
/// their buffers, and OpenAL reads nothing past the frames it renders.
final class SoundFieldBus {
    static let order = 3
    static let components = Ambisonics.channelCount(order: order)
    static let chunkFrames = RoomRenderer.blockFrames
    /// Enough chunks for the longest render call, with room to spare.
    static let chunks = RoomRenderer.maximumCallFrames / chunkFrames + 3

    /// What an emitter is anchored to.
    enum Anchor {
        /// A point in the world, attenuated with distance.
        case point(SourceMotion, DistanceModel)
        /// A bed's speaker: a direction in the world (OpenAL axes), never attenuated.
        case direction(SIMD3<Double>)
    }

    struct Emitter {
        var signal: TimelineSamples
        var anchor: Anchor
        /// The source's gain, and the share of it the direct path keeps.
        var gain: Double
        let scale: Double
        /// Obstruction and occlusion on the direct path; nil when they leave it alone.
        var shelf: HighShelfFilter?
        /// The part rendered spatially: less than 1 while an in-head source
        /// crossfades to its bypass copy.
        var spatialShare = 1.0
    }

    /// A crowd source: panned onto the direction bins with its neighbours
    /// instead of encoded alone, which costs a quarter as much.
    struct CrowdEmitter {
        var signal: TimelineSamples
        var motion: SourceMotion
        let distance: DistanceModel
        /// The source's gain, and the share of it the direct path keeps.
        var gain: Double
        let scale: Double
        /// The part rendered in the field; the rest plays per source.
        var share = 1.0
        /// The bins' gains and the direction-less part reached at the end of the last chunk.
        var bins = DirectionBins.Weights()
        var omni: Float = 0
    }

    /// A place for a source that joins the room while it plays, as
    /// `JoinedVoices` hands it over: the field reads the place's feed itself.
    struct JoinedPlace {
        /// The `SourceFeed`, unretained: the room's controls keep it while any renderer may read it.
        var feed: UnsafeRawPointer?
        var state = SourceState(gain: 0, playing: false, startFrame: 0)
        /// The share of the source's gain its direct path keeps, and the part rendered spatially.
        var scale = 1.0
        var spatialShare = 1.0
        var shelf: HighShelfFilter?
        /// Heard in the field; a place that leaves ramps to silence over one more chunk.
        var sounding = false
        var leaving = false
    }

    /// Within this distance of the listener a source's directional
    /// components fade out, to none at the centre, so a source passing
    /// through the listener becomes omnidirectional rather than jumping
    /// sides. Over one head radius the fade stepped by nearly 1 dB a block
    /// at walking pace; two were enough until the low band decoded without
    /// max-rE weights, whose stronger directional part needs three.
    static let focusDistance = 3 * PointSource.headRadius

    /// Below this gain at the listener a crowd source is not encoded at all: -80 dB.
    static let audibleGain: Float = 1e-4

    /// The decoded feeds, interleaved, into the route's bus.
    private let stream: StreamedVoice
    /// How the field reaches the route's channels.
    private enum Decoder {
        /// On loudspeakers: rows of `components` gains, one per output channel.
        case loudspeakers([Float])
        /// On headphones: the virtual speakers' responses folded with their rows.
        case binaural(BinauralDecoder)
    }
    private let decoder: Decoder
    private let outputs: Int
    /// Per field component, on headphones: the high-frequency power the
    /// virtual speakers' spread loses.
    @exclusivity(unchecked) private var diffuseShelves: [HighShelfFilter]
    @exclusivity(unchecked) private var listenerPosition: Position
    @exclusivity(unchecked) private var toListener: Rotation
    @exclusivity(unchecked) private var emitters: [Emitter] = []
    /// The timeline frame the next chunk starts at.
    @exclusivity(unchecked) private var producedFrame: Int
    @exclusivity(unchecked) private var primed = false
    /// Each emitter's encoding gains reached at the end of the last chunk, `components` apiece.
    @exclusivity(unchecked) private var coefficients: [Float] = []
    @exclusivity(unchecked) private var target = [Float](repeating: 0, count: components)
    @exclusivity(unchecked) private var harmonics = [Double](repeating: 0, count: components)
    @exclusivity(unchecked) private var field: [Float]
    @exclusivity(unchecked) private var signal: [Float]
    @exclusivity(unchecked) private var feeds: [Float]
    @exclusivity(unchecked) private var crowd: [CrowdEmitter] = []
    @exclusivity(unchecked) private var joined: [JoinedPlace]
    /// Each joined emitter's encoding gains reached at the end of the last chunk, `components` apiece.
    @exclusivity(unchecked) private var joinedCoefficients: [Float]
    @exclusivity(unchecked) private var joinedSounding = 0
    /// The joined places that keep their level under the scene's ducking: the talkers'.
    private let heldAboveDucking: Range<Int>
    /// The bus's listener gain (the scene's ducking) ramping across the
    /// start of the next chunk, as OpenAL ramps it across its first mix of
    /// the render that plays the chunk. Chunks line up with the renders
    /// when the renderer starts on a block's edge, as every live one does.
    @exclusivity(unchecked) private var ducking: (from: Float, to: Float, frames: Int) = (1, 1, chunkFrames)
    private let distance: DistanceModel
    /// Nothing sounds in it: its streams are stopped and no chunk is made,
    /// until a source joins. A room without field sources pays nothing for it.
    @exclusivity(unchecked) private(set) var isIdle = true
    /// Per direction bin, bin-major, and one for the direction-less part: a
    /// chunk of what its sources add at their gains at the chunk's start,
    /// and a chunk of what they add as their gains change across it.
    /// Made with the first crowd source, freed with the field.
    private var steadyBins = UnsafeMutableBufferPointer<Float>(start: nil, count: 0)
    private var rampingBins = UnsafeMutableBufferPointer<Float>(start: nil, count: 0)
    @exclusivity(unchecked) private var binTouched: [Bool] = []
    /// One crowd source's bins and gains for the chunk, for `mix_add_to_bins`: at most
    /// the four it leaves, the four it enters, and the direction-less part.
    private let entryBins = UnsafeMutableBufferPointer<Int32>.allocate(capacity: 9)
    private let entryStarts = UnsafeMutableBufferPointer<Float>.allocate(capacity: 9)
    private let entryChanges = UnsafeMutableBufferPointer<Float>.allocate(capacity: 9)
    /// Each bin's encoding gains, `components` apiece; the last is the direction-less part.
    private let binHarmonics: [Float]
    /// (frame + 1) / chunk: how far through the chunk a gain has ramped.
    private let ramp: [Float]

    /// - Parameter mixer: the route's own bus, which plays the decoded field.
    /// Emitters per joined place: a bed's speaker feeds, at most those of a third-order field sampled.
    static let joinedEmittersPerPlace = max(Ambisonics.virtualSpeakerDirections(order: order).count,
                                            ChannelLayout.surround71.channelCount)

    /// - Parameters:
    ///   - distance: the room's distance law, for the sources that join.
    ///   - joinPlaces: how many sources may join the field while the room plays.
    ///   - heldAboveDucking: the places among them that keep their level while the bus's listener gain ducks the rest.
    init(mixer: SpatialMixer, listenerPosition: Position, listenerOrientation: Orientation, distance: DistanceModel,
         joinPlaces: Int, heldAboveDucking: Range<Int>, startingAt frame: Int) throws {
        self.heldAboveDucking = heldAboveDucking
        self.listenerPosition = listenerPosition
        self.distance = distance
        joined = Array(repeating: JoinedPlace(), count: joinPlaces)
        joinedCoefficients = [Float](repeating: 0, count: joinPlaces * Self.joinedEmittersPerPlace * Self.components)
        toListener = listenerOrientation.rotation.transposed
        producedFrame = frame
        let chunk = Self.chunkFrames
        if mixer.algorithm == .hrtf {
            let directions = Ambisonics.virtualSpeakerDirections(order: Self.order)
            // Two bands. Below 1.5 kHz, where neighbouring virtual speakers
            // reach the ears in phase and the interaural time difference
            // lives, the basic decoder sums the field's pressure and
            // velocity back exactly, so a source keeps its ITD. Above, the
            // speakers add in power: a shelf on each order gives the max-rE
            // weights, which focus the energy, and restores the power the
            // decoder's spread loses. With max-rE in both bands a source at
            // 90 degrees had the ITD of one at 60.
            let rows = Self.samplingDecoder(directions, maxRE: false)
            decoder = .binaural(try BinauralDecoder(rows: rows, directions: directions, chunkFrames: chunk))
            outputs = 2
            let restore = 1 / Self.meanPower(Self.samplingDecoder(directions, maxRE: true)).squareRoot()
            let weights = Ambisonics.maxREWeights(order: Self.order)
            // The shelf reaches the square of its gain at the top.
            diffuseShelves = Self.degrees.map { degree in
                HighShelfFilter(gainHF: (weights[degree] * restore).squareRoot(), sampleRate: Double(Room.sampleRate), corner: 1_500)
            }
        } else {
            decoder = .loudspeakers(Self.loudspeakerDecoder(mixer.layout).flatMap { $0 })
            outputs = mixer.channelCount
            diffuseShelves = []
        }
        stream = try mixer.makeOutputStream(chunkFrames: chunk, chunks: Self.chunks)
        feeds = [Float](repeating: 0, count: chunk * outputs)
        field = [Float](repeating: 0, count: chunk * Self.components)
        signal = [Float](repeating: 0, count: chunk)
        ramp = (0..<chunk).map { Float($0 + 1) / Float(chunk) }
        binHarmonics = DirectionBins.directions.flatMap { Ambisonics.harmonics(direction: $0, order: Self.order).map(Float.init) }
            + [1] + [Float](repeating: 0, count: Self.components - 1)
    }

    /// Measures the virtual speakers' responses the headphone decode is made of,
    /// once per process: done as a room opens, a later switch to headphones
    /// makes its field without waiting for them.
    static func measureHeadphoneResponses() throws {
        _ = try BinauralDecoder.responses(directions: Ambisonics.virtualSpeakerDirections(order: order))
    }

    deinit {
        for buffer in [steadyBins, rampingBins, entryStarts, entryChanges] { buffer.deallocate() }
        entryBins.deallocate()
    }

    /// Adds a point source; returns its index for `setSpatialShare` and `setPoint`.
    /// - Parameter scale: the share of the source's gain its direct path keeps.
    @discardableResult
    func addPoint(_ signal: TimelineSamples, motion: SourceMotion, distance: DistanceModel, gain: Double, scale: Double,
                  directPathHF: Double) -> Int {
        emitters.append(Emitter(signal: signal, anchor: .point(motion, distance), gain: gain, scale: scale,
                                shelf: Self.shelf(directPathHF)))
        coefficients += Self.silent
        isIdle = false
        return emitters.count - 1
    }

    /// Adds a bed: one emitter per speaker feed, at its direction turned by the bed's orientation.
    func addBed(feeds: [[Float]], directions: [SIMD3<Double>], orientation: Orientation,
                startFrame: Int, playing: Bool, loop: Bool, rate: Double, gain: Double) -> Range<Int> {
        let rotation = orientation.rotation, first = emitters.count
        isIdle = false
        for (feed, direction) in zip(feeds, directions) {
            emitters.append(Emitter(signal: TimelineSamples(samples: feed, startFrame: startFrame, rate: rate, loop: loop, playing: playing),
                                    anchor: .direction(rotation * direction), gain: gain, scale: 1))
            coefficients += Self.silent
        }
        return first..<emitters.count
    }

    func setSpatialShare(_ share: Double, of emitter: Int) { emitters[emitter].spatialShare = share }

    /// Takes a point source's live state: gain, move and play; from the next chunk on, ramped.
    func setPoint(_ index: Int, _ state: SourceState) {
        emitters[index].gain = state.gain
        if case .point(var motion, let distance) = emitters[index].anchor {
            motion.glide = state.glide
            emitters[index].anchor = .point(motion, distance)
        }
        emitters[index].signal.follow(state)
    }

    /// Takes a bed's live state: gain and play.
    func setBed(_ indices: Range<Int>, _ state: SourceState) {
        for index in indices {
            emitters[index].gain = state.gain
            emitters[index].signal.follow(state)
        }
    }

    /// Where the field is heard from, from the next chunk on.
    func setListener(position: Position, orientation: Orientation) {
        listenerPosition = position
        toListener = orientation.rotation.transposed
    }

    /// Adds a crowd source; returns its index for `setCrowdShare` and `setCrowdPoint`.
    func addCrowdPoint(_ signal: TimelineSamples, motion: SourceMotion, distance: DistanceModel, gain: Double, scale: Double) -> Int {
        if crowd.isEmpty {
            precondition(Int(MIX_FIELD_COMPONENTS) == Self.components, "the crowd's kernel encodes a third-order field")
            DirectionBins.prepare()
            steadyBins = .allocate(capacity: (DirectionBins.count + 1) * Self.chunkFrames)
            steadyBins.initialize(repeating: 0)
            rampingBins = .allocate(capacity: (DirectionBins.count + 1) * Self.chunkFrames)
            rampingBins.initialize(repeating: 0)
            binTouched = [Bool](repeating: false, count: DirectionBins.count + 1)
        }
        crowd.append(CrowdEmitter(signal: signal, motion: motion, distance: distance, gain: gain, scale: scale))
        isIdle = false
        return crowd.count - 1
    }

    /// How much of crowd source `index` the field renders, 0 to 1.
    func setCrowdShare(_ share: Double, of index: Int) { crowd[index].share = share }

    /// Takes a crowd source's live state: gain, move and play.
    func setCrowdPoint(_ index: Int, _ state: SourceState) {
        crowd[index].gain = state.gain
        crowd[index].motion.glide = state.glide
        crowd[index].signal.follow(state)
    }

    // MARK: Sources that join, on the render thread

    /// Place `place` takes `feed` from timeline frame `frame`: it rises from
    /// silence over its first chunk, and wakes the field if it was idle.
    func join(_ place: Int, feed: UnsafeRawPointer, at frame: Int) {
        if !joined[place].sounding { joinedSounding += 1 }
        joined[place].feed = feed
        joined[place].sounding = true
        joined[place].leaving = false
        joined[place].shelf = nil
        let span = Self.joinedEmittersPerPlace * Self.components
        joinedCoefficients.withUnsafeMutableBufferPointer { all in
            UnsafeMutableBufferPointer(rebasing: all[(place * span)..<((place + 1) * span)]).update(repeating: 0)
        }
        if isIdle {
            isIdle = false
            producedFrame = frame
        }
    }

    /// Place `place` fades to silence over the next chunk and lets its feed go.
    func leave(_ place: Int) {
        if joined[place].sounding { joined[place].leaving = true }
    }

    /// Takes a joined source's live state: gain, moves, play, and its direct path.
    func setJoined(_ place: Int, _ state: SourceState, scale: Double, directPathHF: Double) {
        if state.paths != joined[place].state.paths || joined[place].shelf == nil && directPathHF < 1 {
            joined[place].shelf = Self.shelf(directPathHF)
        }
        joined[place].state = state
        joined[place].scale = scale
    }

    /// The part of joined place `place` rendered spatially: less than 1 while it crossfades to its in-head copy.
    func setJoinedSpatialShare(_ share: Double, of place: Int) { joined[place].spatialShare = share }

    /// The bus's listener gain goes from `from` to `to` over the first
    /// `frames` of the next render: the talkers in the field are lifted
    /// against it sample by sample, since the product of two linear ramps would bulge.
    func setDucking(from: Double, to: Double, over frames: Int) { ducking = (Float(from), Float(to), max(1, frames)) }

    /// Queues the field up to `end`, the end of what the bus renders next
    /// from `start`. Once nothing sounds and all it made has played, it
    /// stops its streams and idles.
    func prepare(from start: Int, through end: Int) throws {
        if isIdle { return }
        if emitters.isEmpty && crowd.isEmpty && joinedSounding == 0 && producedFrame <= start {
            try stream.rewind()
            isIdle = true
            return
        }
        while producedFrame < end {
            try produceChunk()
        }
    }

    private func produceChunk() throws {
        let chunk = Self.chunkFrames, components = Self.components
        field.withUnsafeMutableBufferPointer { $0.update(repeating: 0) }
        for index in emitters.indices {
            signal.withUnsafeMutableBufferPointer { signal in
                emitters[index].signal.read(into: signal, from: producedFrame)
                if emitters[index].shelf != nil { emitters[index].shelf!.process(signal) }
            }
            encode(emitters[index], at: producedFrame)
            coefficients.withUnsafeMutableBufferPointer { all in
                let current = UnsafeMutableBufferPointer(rebasing: all[(index * components)..<((index + 1) * components)])
                if !primed { _ = current.update(fromContentsOf: target) }
                // Gains ramp across the chunk, as OpenAL's do across a mix.
                addSignal(ramping: current, over: chunk)
            }
        }
        if joinedSounding > 0 { encodeJoined() }
        ducking.from = ducking.to
        if !crowd.isEmpty { encodeCrowd() }
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
            try feeds.withUnsafeMutableBufferPointer { feeds in
                switch decoder {
                case .binaural(let binaural):
                    binaural.decode(field.baseAddress!, into: feeds.baseAddress!)
                case .loudspeakers(let rows):
                    rows.withUnsafeBufferPointer { decoder in
                        for frame in 0..<chunk {
                            for output in 0..<outputs {
                                var sum: Float = 0
                                for component in 0..<components { sum += decoder[output * components + component] * field[frame * components + component] }
                                feeds[frame * outputs + output] = sum
                            }
                        }
                    }
                }
                try stream.queue(UnsafeBufferPointer(feeds))
            }
        }
    }

    /// Encodes every sounding joined place from its feed, its gains ramping
    /// from where the last chunk left them; a place leaving ramps to silence.
    /// A point is one emitter; a bed, one per speaker feed, at its direction.
    private func encodeJoined() {
        for place in joined.indices where joined[place].sounding {
            let feed = Unmanaged<SourceFeed>.fromOpaque(joined[place].feed!)
            let state = joined[place].state
            let gain = joined[place].leaving || !state.playing ? 0 : state.gain * joined[place].scale * joined[place].spatialShare
            let first = place * Self.joinedEmittersPerPlace
            // Leaving, it is silent by half a chunk, so the bus's look-ahead carries nothing into the next.
            let rampFrames = joined[place].leaving ? Self.chunkFrames / 2 : Self.chunkFrames
            let lifted = heldAboveDucking.contains(place) && (ducking.from != 1 || ducking.to != 1)
            if let speakers = feed._withUnsafeGuaranteedRef({ $0.speakers }) {
                for (speaker, direction) in speakers.enumerated() {
                    signal.withUnsafeMutableBufferPointer { signal in
                        feed._withUnsafeGuaranteedRef { $0.fill(signal, from: producedFrame, state, channel: speaker) }
                        if lifted { liftAboveDucking(signal) }
                    }
                    encode(gain: gain, towards: toListener * direction, focus: 1)
                    addSignal(rampingFrom: first + speaker, over: rampFrames)
                }
            } else {
                signal.withUnsafeMutableBufferPointer { signal in
                    feed._withUnsafeGuaranteedRef { $0.fill(signal, from: producedFrame, state) }
                    if joined[place].shelf != nil { joined[place].shelf!.process(signal) }
                    if lifted { liftAboveDucking(signal) }
                }
                encode(gain: gain, at: feed._withUnsafeGuaranteedRef { $0.position(at: producedFrame, state) }, distance: distance)
                addSignal(rampingFrom: first, over: rampFrames)
            }
            if joined[place].leaving {
                joined[place] = JoinedPlace()
                joinedSounding -= 1
            }
        }
    }

    /// Divides a talker's signal by the bus's listener gain as it ramps across the chunk.
    private func liftAboveDucking(_ signal: UnsafeMutableBufferPointer<Float>) {
        let (from, to, frames) = ducking
        for frame in signal.indices { signal[frame] /= from + (to - from) * min(1, Float(frame + 1) / Float(frames)) }
    }

    /// Adds `signal` for joined emitter `emitter`, ramping over `rampFrames` from its last gains.
    private func addSignal(rampingFrom emitter: Int, over rampFrames: Int) {
        let components = Self.components
        joinedCoefficients.withUnsafeMutableBufferPointer { all in
            addSignal(ramping: UnsafeMutableBufferPointer(rebasing: all[(emitter * components)..<((emitter + 1) * components)]),
                      over: rampFrames)
        }
    }

    /// Adds `signal` into the field at gains ramping over the chunk's first
    /// `rampFrames` frames from `current` to `target`, and leaves `current` at `target`.
    private func addSignal(ramping current: UnsafeMutableBufferPointer<Float>, over rampFrames: Int) {
        let chunk = Self.chunkFrames, components = Self.components
        field.withUnsafeMutableBufferPointer { field in
            signal.withUnsafeBufferPointer { signal in
                target.withUnsafeBufferPointer { target in
                    for frame in 0..<chunk {
                        let sample = signal[frame], ramp = min(Float(frame + 1) / Float(rampFrames), 1)
                        for component in 0..<components {
                            field[frame * components + component] += sample * (current[component] + (target[component] - current[component]) * ramp)
                        }
                    }
                    _ = current.update(fromContentsOf: target)
                }
            }
        }
    }

    /// Pans every audible crowd source onto its bins, its gains ramping
    /// across the chunk, then encodes each bin that got any into the field.
    /// A source costs two multiply-adds per sample and bin it touches,
    /// whichever way it moves; the ramp and the encoding are paid per bin.
    private func encodeCrowd() {
        let chunk = Self.chunkFrames, omniBin = DirectionBins.count
        crowd.withUnsafeMutableBufferPointer { crowd in
            for index in crowd.indices {
                var next = DirectionBins.Weights(), nextOmni: Float = 0
                var direction = toListener * (crowd[index].motion.position(at: producedFrame) - listenerPosition)
                let length = (direction * direction).sum().squareRoot()
                let amplitude = crowd[index].gain * crowd[index].scale * crowd[index].distance.gain(at: length) * crowd[index].share
                if Float(amplitude) >= Self.audibleGain {
                    // Near the head the direction fades out, as for single emitters.
                    let focus = min(length / Self.focusDistance, 1)
                    if length == 0 { direction = SIMD3(0, 0, -1) }
                    next = DirectionBins.weights(for: direction)
                    next.weights *= Float(amplitude * focus)
                    nextOmni = Float(amplitude * (1 - focus))
                }
                let previous = primed ? crowd[index].bins : next
                let previousOmni = primed ? crowd[index].omni : nextOmni
                crowd[index].bins = next
                crowd[index].omni = nextOmni
                // The bins it leaves ramp to nothing, those it enters from nothing.
                var entries = 0
                func add(_ bin: Int, from start: Float, to end: Float) {
                    entryBins[entries] = Int32(bin)
                    entryStarts[entries] = start
                    entryChanges[entries] = end - start
                    binTouched[bin] = true
                    entries += 1
                }
                if previous.bins == next.bins {
                    // Still between the same grid points: the usual case, block after block.
                    for slot in 0..<4 where previous.weights[slot] != 0 || next.weights[slot] != 0 {
                        add(Int(next.bins[slot]), from: previous.weights[slot], to: next.weights[slot])
                    }
                } else {
                    for slot in 0..<4 where previous[slot].weight != 0 {
                        add(previous[slot].bin, from: previous[slot].weight, to: next.weight(of: previous[slot].bin))
                    }
                    for slot in 0..<4 where next[slot].weight != 0 && previous.weight(of: next[slot].bin) == 0 {
                        add(next[slot].bin, from: 0, to: next[slot].weight)
                    }
                }
                if previousOmni != 0 || nextOmni != 0 { add(omniBin, from: previousOmni, to: nextOmni) }
                guard entries > 0 else { continue }
                signal.withUnsafeMutableBufferPointer { scratch in
                    crowd[index].signal.withSamples(from: producedFrame, scratch: scratch) { samples in
                        mix_add_to_bins(steadyBins.baseAddress, rampingBins.baseAddress, Int32(chunk), samples,
                                        entryBins.baseAddress, entryStarts.baseAddress, entryChanges.baseAddress, Int32(entries))
                    }
                }
            }
        }
        field.withUnsafeMutableBufferPointer { field in
            ramp.withUnsafeBufferPointer { ramp in
                binHarmonics.withUnsafeBufferPointer { harmonics in
                    for bin in 0...omniBin where binTouched[bin] {
                        mix_bin_into_field(field.baseAddress, Int32(chunk),
                                           steadyBins.baseAddress! + bin * chunk, rampingBins.baseAddress! + bin * chunk,
                                           ramp.baseAddress, harmonics.baseAddress! + bin * Self.components)
                        binTouched[bin] = false
                    }
                }
            }
        }
    }

    /// Writes the emitter's gains into the field at `frame` to `target`.
    private func encode(_ emitter: Emitter, at frame: Int) {
        let gain = emitter.gain * emitter.scale * emitter.spatialShare
        switch emitter.anchor {
        case .point(let motion, let distance): encode(gain: gain, at: motion.position(at: frame), distance: distance)
        case .direction(let world): encode(gain: gain, towards: toListener * world, focus: 1)
        }
    }

    /// Writes the gains of a sound of `gain` at `position` into `target`.
    /// Within `focusDistance` the directional components fade out.
    private func encode(gain: Double, at position: Position, distance: DistanceModel) {
        let direction = toListener * (position - listenerPosition)
        let length = (direction * direction).sum().squareRoot()
        encode(gain: gain * distance.gain(at: length), towards: length == 0 ? SIMD3(0, 0, -1) : direction,
               focus: min(length / Self.focusDistance, 1))
    }

    private func encode(gain: Double, towards direction: SIMD3<Double>, focus: Double) {
        harmonics.withUnsafeMutableBufferPointer { Ambisonics.harmonics(direction: direction, order: Self.order, into: $0) }
        for component in 0..<Self.components {
            target[component] = Float(harmonics[component] * gain * (component == 0 ? 1 : focus))
        }
    }

    private static let silent = [Float](repeating: 0, count: components)

    private static func shelf(_ gainHF: Double) -> HighShelfFilter? {
        gainHF < 1 ? HighShelfFilter(gainHF: gainHF, sampleRate: Double(Room.sampleRate)) : nil
    }

    /// Each field component's order, in ACN order.
    static let degrees = (0...order).flatMap { n in [Int](repeating: n, count: 2 * n + 1) }

    /// Sampling-decoder rows for `directions`, with max-rE weights or
    /// without: every row sums a field's pressure back exactly, so the
    /// speakers add up to the source as the ear hears them together.
    static func samplingDecoder(_ directions: [SIMD3<Double>], maxRE weighted: Bool) -> [[Float]] {
        let maxRE = weighted ? Ambisonics.maxREWeights(order: order) : [Double](repeating: 1, count: order + 1)
        let degree = degrees
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
        let sampled = samplingDecoder(virtual, maxRE: true)
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
