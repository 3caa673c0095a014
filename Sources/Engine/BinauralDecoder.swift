import AudioCore
import CMixKernels
import Spatial
import Synchronization

/// The field's decode for headphones: each of its components convolved with
/// the pair of filters that the virtual loudspeakers around the head, heard
/// through OpenAL Soft's own HRTF, make of it.
///
/// Playing each virtual speaker as an OpenAL voice cost an HRTF mix per
/// speaker, 36 of them, every block. A static voice's HRTF is a fixed
/// filter, so each speaker's pair of responses is measured once, through an
/// OpenAL device made like the route's, and folded with the decoder's rows:
/// the same sum, computed as 16 convolutions per ear. The result streams to
/// the route's bus as plain stereo.
final class BinauralDecoder {
    let components: Int
    let taps: Int
    private let chunkFrames: Int
    /// For each component, the left ear's `taps` coefficients, then the right's.
    private let filters: UnsafeMutableBufferPointer<Float>
    /// For each component, its last `taps - 1` samples, then the chunk being decoded.
    private let history: UnsafeMutableBufferPointer<Float>

    /// - Parameters:
    ///   - rows: one row of component gains per virtual speaker.
    ///   - directions: each speaker's direction, in the listener's frame (OpenAL axes).
    init(rows: [[Float]], directions: [SIMD3<Double>], chunkFrames: Int) throws {
        let responses = try Self.responses(directions: directions)
        components = rows[0].count
        taps = responses.taps
        self.chunkFrames = chunkFrames
        filters = .allocate(capacity: components * 2 * taps)
        filters.initialize(repeating: 0)
        for (speaker, row) in rows.enumerated() {
            let response = responses.pairs[speaker]
            for component in 0..<components where row[component] != 0 {
                for index in 0..<(2 * taps) { filters[component * 2 * taps + index] += row[component] * response[index] }
            }
        }
        history = .allocate(capacity: components * (taps - 1 + chunkFrames))
        history.initialize(repeating: 0)
    }

    deinit {
        filters.deallocate()
        history.deallocate()
    }

    /// Decodes a chunk of the field (frames of `components` interleaved) into
    /// interleaved stereo, `chunkFrames` frames of it, overwriting `output`.
    func decode(_ field: UnsafePointer<Float>, into output: UnsafeMutablePointer<Float>) {
        let length = taps - 1 + chunkFrames
        for component in 0..<components {
            let channel = history.baseAddress! + component * length + taps - 1
            for frame in 0..<chunkFrames { channel[frame] = field[frame * components + component] }
        }
        output.update(repeating: 0, count: 2 * chunkFrames)
        mix_convolve(output, 2, Int32(chunkFrames), history.baseAddress, Int32(components), filters.baseAddress, Int32(taps))
    }

    /// Each virtual speaker's response at the two ears: `taps` samples for the left, then `taps` for the right.
    struct Responses: Sendable {
        var taps: Int
        var pairs: [[Float]]
    }

    /// The responses for one set of directions, measured once per process.
    private static let measured = Mutex<[[SIMD3<Double>]: Responses]>([:])

    /// The longest response measured: OpenAL Soft 1.19's, an HRIR and its
    /// interaural delay, take 64 frames at 48 kHz, well within it.
    static let measuredFrames = 192

    static func responses(directions: [SIMD3<Double>]) throws -> Responses {
        if let known = measured.withLock({ $0[directions] }) { return known }
        let made = try measure(directions: directions)
        measured.withLock { $0[directions] = made }
        return made
    }

    /// Plays an impulse from each direction through an OpenAL device with
    /// HRTF, made as the route's buses are, and records both ears. The
    /// responses are cut where the last of them has faded below -120 dB.
    private static func measure(directions: [SIMD3<Double>]) throws -> Responses {
        let mixer = try SpatialMixer(algorithm: .hrtf, layout: .stereo, sources: 4, voices: 4)
        // The stream plays two chunks: the impulse, its response and the
        // limiter's look-ahead fit in them, and no more is rendered.
        let latency = mixer.latencyFrames, at = 16, amplitude: Float = 0.25
        let chunk = (at + latency + measuredFrames + 1) / 2
        var impulse = [Float](repeating: 0, count: chunk)
        impulse[at] = amplitude
        let silence = [Float](repeating: 0, count: chunk)
        var output = [Float](repeating: 0, count: 4 * chunk)
        var pairs: [[Float]] = []
        for direction in directions {
            let stream = try mixer.makeVirtualSpeakerStream(direction: direction, chunkFrames: chunk, chunks: 2)
            try impulse.withUnsafeBufferPointer { try stream.queue($0) }
            try silence.withUnsafeBufferPointer { try stream.queue($0) }
            output.withUnsafeMutableBufferPointer { mixer.render(into: $0, frameCount: 2 * chunk) }
            let start = at + latency
            let left = (0..<measuredFrames).map { output[2 * (start + $0)] / amplitude }
            let right = (0..<measuredFrames).map { output[2 * (start + $0) + 1] / amplitude }
            pairs.append(left + right)
        }
        let peak = pairs.joined().map(abs).max() ?? 0
        var taps = 1
        for pair in pairs {
            for index in 0..<measuredFrames where abs(pair[index]) > peak * 1e-6 || abs(pair[measuredFrames + index]) > peak * 1e-6 {
                taps = max(taps, index + 1)
            }
        }
        taps = (taps + 7) / 8 * 8
        return Responses(taps: taps, pairs: pairs.map { Array($0[0..<taps]) + Array($0[measuredFrames..<(measuredFrames + taps)]) })
    }
}
