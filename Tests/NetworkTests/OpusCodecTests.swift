import AudioCore
import AudioMeasurements
import Network
import Testing

@Suite struct OpusCodecTests {
    static let frame = OpusVoiceEncoder.frameSamples
    /// A 440 Hz sine peaking at -12 dBFS.
    static func sine(seconds: Int) -> [Float] {
        Signals.sine(frequency: 440, frames: seconds * 48_000, amplitude: Float(Level.linear(fromDecibels: -12)))
    }

    /// `signal` in 20 ms Opus packets at `bitrate`.
    static func encode(_ signal: [Float], bitrate: Int) throws -> [[UInt8]] {
        let encoder = try OpusVoiceEncoder(bitrate: bitrate)
        var packet = [UInt8](repeating: 0, count: 1_275)
        return try stride(from: 0, to: signal.count, by: frame).map { start in
            let length = try signal.withUnsafeBufferPointer { samples in
                try packet.withUnsafeMutableBufferPointer { bytes in
                    try encoder.encode(UnsafeBufferPointer(rebasing: samples[start..<(start + frame)]), into: bytes)
                }
            }
            return Array(packet[..<length])
        }
    }

    /// The packets decoded one after another, a nil (lost) one concealed.
    static func decode(_ packets: [[UInt8]?]) throws -> [Float] {
        let decoder = try OpusVoiceDecoder()
        var output = [Float](repeating: 0, count: OpusVoiceDecoder.maxSamples)
        var signal: [Float] = []
        for packet in packets {
            let count = try output.withUnsafeMutableBufferPointer { samples in
                if let packet {
                    try packet.withUnsafeBytes { try decoder.decode($0, into: samples) }
                } else {
                    try decoder.conceal(into: samples)
                }
            }
            signal += output[..<count]
        }
        return signal
    }

    @Test func aSineComesBackAtItsLevelAndPitch() throws {
        let signal = Self.sine(seconds: 2)
        let packets = try Self.encode(signal, bitrate: 40_000)
        let decoded = try Self.decode(packets)
        #expect(decoded.count == signal.count)
        // Past the encoder's first frames, where it settles.
        let steady = 24_000..<96_000
        let levelChange = Measure.rmsDecibels(Array(decoded[steady])) - Measure.rmsDecibels(Array(signal[steady]))
        #expect(abs(levelChange) < 1, "level changed by \(levelChange) dB")
        let pitch = Measure.frequency(Array(decoded[steady]))
        #expect(abs(pitch - 440) < 2, "decoded at \(pitch) Hz")
        let bitrate = Double(packets.reduce(0) { $0 + $1.count } * 8) / 2
        #expect(bitrate > 20_000 && bitrate < 48_000, "\(bitrate) bit/s for 40 kbit/s")
    }

    @Test func theBitrateSetsThePacketSize() throws {
        let signal = Signals.whiteNoise(frames: 48_000, rms: 0.1, seed: 3)
        let encoder = try OpusVoiceEncoder(bitrate: 16_000)
        #expect(encoder.bitrate == 16_000)
        let low = try Self.encode(signal, bitrate: 16_000).reduce(0) { $0 + $1.count }
        let high = try Self.encode(signal, bitrate: 64_000).reduce(0) { $0 + $1.count }
        #expect(Double(low * 8) > 12_000 && Double(low * 8) < 20_000, "\(low * 8) bit/s at 16 kbit/s")
        #expect(Double(high * 8) > 48_000 && Double(high * 8) < 80_000, "\(high * 8) bit/s at 64 kbit/s")
        try encoder.setBitrate(24_000)
        #expect(encoder.bitrate == 24_000)
        #expect(throws: OpusError.self) { try encoder.setBitrate(-5) }
        #expect(throws: OpusError.self) { try encoder.setBitrate(1_000_000) }
        #expect(encoder.bitrate == 24_000)
    }

    @Test func aLostPacketIsConcealedWithoutAClick() throws {
        let packets = try Self.encode(Self.sine(seconds: 1), bitrate: 40_000)
        let lost = 25
        let decoded = try Self.decode(packets.enumerated().map { $0.offset == lost ? nil : $0.element })
        func frame(_ index: Int) -> [Float] { Array(decoded[(index * Self.frame)..<((index + 1) * Self.frame)]) }
        let concealed = Measure.rmsDecibels(frame(lost))
        let before = Measure.rmsDecibels(frame(lost - 1)), after = Measure.rmsDecibels(frame(lost + 1))
        #expect(concealed > -30, "the concealed frame is at \(concealed) dBFS, not silence")
        #expect(abs(concealed - before) < 3 && abs(concealed - after) < 3,
                "concealed at \(concealed) dBFS between \(before) and \(after)")
        // No step across the concealed frame and its edges much larger than the sine's own.
        let sineStep = Measure.largestStep(frame(lost - 2))
        let step = Measure.largestStep(Array(decoded[((lost - 1) * Self.frame)..<((lost + 2) * Self.frame)]))
        #expect(step < 2 * sineStep, "largest step \(step) against the sine's \(sineStep)")
    }

    @Test func malformedPacketsThrow() throws {
        let decoder = try OpusVoiceDecoder()
        var output = [Float](repeating: 0, count: OpusVoiceDecoder.maxSamples)
        let malformed: [[UInt8]] = [
            [],
            [0x03],                   // code 3 without its frame count
            [0x03, 0x00],             // code 3 with no frames
            [0x03, 0x31],             // code 3 with 49 frames, beyond 120 ms
            [0x01, 0x00],             // code 1 whose two equal frames cannot split one byte
            [0x02, 0xFC],             // code 2 whose first length needs a second byte
            [0x02, 0x05, 0x00, 0x00], // code 2 whose first frame is longer than the packet
        ]
        for packet in malformed {
            #expect(throws: OpusError.self, "\(packet)") {
                try output.withUnsafeMutableBufferPointer { samples in
                    try packet.withUnsafeBytes { try decoder.decode($0, into: samples) }
                }
            }
        }
        for packet in malformed[...2] {
            #expect(throws: OpusError.self, "\(packet)") { try packet.withUnsafeBytes { try OpusVoiceDecoder.sampleCount(of: $0) } }
        }
    }

    @Test func aPacketLongerThanTheOutputThrows() throws {
        // One 60 ms frame.
        let encoder = try OpusVoiceEncoder(bitrate: 40_000)
        let signal = Self.sine(seconds: 1)
        var packet = [UInt8](repeating: 0, count: 1_275)
        let length = try signal.withUnsafeBufferPointer { samples in
            try packet.withUnsafeMutableBufferPointer { try encoder.encode(UnsafeBufferPointer(rebasing: samples[..<2_880]), into: $0) }
        }
        let bytes = Array(packet[..<length])
        #expect(try bytes.withUnsafeBytes { try OpusVoiceDecoder.sampleCount(of: $0) } == 2_880)
        let decoder = try OpusVoiceDecoder()
        var output = [Float](repeating: 0, count: Self.frame)
        do {
            _ = try output.withUnsafeMutableBufferPointer { samples in
                try bytes.withUnsafeBytes { try decoder.decode($0, into: samples) }
            }
            Issue.record("a 60 ms packet decoded into 20 ms of output")
        } catch let error as OpusError {
            #expect(error.description == "opus_decode_float failed: buffer too small")
        }
        #expect(throws: OpusError.self) {
            try output.withUnsafeMutableBufferPointer { try decoder.conceal(into: $0, samples: 1_000) }
        }
    }

    @Test func randomBytesDecodeOrThrow() throws {
        let decoder = try OpusVoiceDecoder()
        var output = [Float](repeating: 0, count: OpusVoiceDecoder.maxSamples)
        var generator = SeededBytes(seed: 11)
        var decoded = 0, refused = 0
        for _ in 0..<2_000 {
            let packet = generator.bytes(count: generator.next(below: 64))
            do {
                let count = try output.withUnsafeMutableBufferPointer { samples in
                    try packet.withUnsafeBytes { try decoder.decode($0, into: samples) }
                }
                #expect(count <= OpusVoiceDecoder.maxSamples)
                decoded += 1
            } catch {
                refused += 1
            }
        }
        #expect(decoded + refused == 2_000)
        #expect(decoded > 0 && refused > 0, "\(decoded) decoded, \(refused) refused")
    }
}

/// Reproducible random bytes (xorshift64).
struct SeededBytes {
    private var state: UInt64

    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }

    mutating func next() -> UInt64 {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return state
    }

    /// A number in 0..<bound.
    mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }

    mutating func bytes(count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next() >> 32) } }
}
