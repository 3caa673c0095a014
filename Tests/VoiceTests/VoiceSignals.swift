import AudioCore
import AudioMeasurements
import Devices
import Foundation
import Voice

/// Speech for the voice tests: the demo rooms' spoken lines (made by
/// Tools/make_assets.sh with espeak-ng), at the chain's 16 kHz.
enum VoiceSignals {
    static let rate = UplinkChain.sampleRate

    static func speech(_ name: String) throws -> [Float] {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../Scenes/audio/\(name).wav").standardized.path
        let decoded = try AudioFileReader.read(path: path)
        let mono = decoded.buffer.downmixedToMono()
        let samples = try SampleRateConverter.convert(mono, from: decoded.sampleRate, to: rate).samples
        let peak = samples.map(abs).max() ?? 1
        return samples.map { $0 / peak * 0.5 }
    }

    /// `names`' lines one after another, the whole round over and over, `frames` long.
    static func voices(_ names: [String], frames: Int) throws -> [Float] {
        var voices: [Float] = []
        while voices.count < frames { for name in names { voices += try speech(name) } }
        return Array(voices.prefix(frames))
    }

    /// A game's sound as the far end plays it, `frames` long: the lute's
    /// music over the fire, each looped.
    static func game(frames: Int) throws -> [Float] {
        let lute = try speech("lute"), fire = try speech("fire")
        return (0..<frames).map { 0.6 * lute[$0 % lute.count] + 0.4 * fire[$0 % fire.count] }
    }

    /// A near talker, `frames` long: silence until `start`, then the
    /// vendor's lines over and over.
    static func talker(from start: Int, frames: Int) throws -> [Float] {
        var near = [Float](repeating: 0, count: start)
        while near.count < frames { near += try speech("vendor") }
        return Array(near.prefix(frames))
    }

    /// The near talker from `start`, `decibels` under `echo` over the same span.
    static func talker(from start: Int, decibels: Double, under echo: [Float]) throws -> [Float] {
        let near = try talker(from: start, frames: echo.count)
        let scale = Float(Measure.rms(Array(echo[start...])) / Measure.rms(Array(near[start...])) / pow(10, decibels / 20))
        return near.map { $0 * scale }
    }

    /// A room's echo path: 12 ms of flight, then an exponentially decaying
    /// noise tail of `rt60` seconds, scaled so the echo is `loss` dB below the far end.
    static func echo(of far: [Float], rt60: Double = 0.3, loss: Double = 6, seed: UInt64 = 11) -> [Float] {
        let length = Int(0.4 * Double(rate)), delay = Int(0.012 * Double(rate))
        var state = seed
        var response = [Float](repeating: 0, count: length)
        for index in delay..<length {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let noise = Float(Int64(bitPattern: state) >> 40) / Float(1 << 23)
            response[index] = noise * Float(exp(-6.9 * Double(index - delay) / Double(rate) / rt60)) * 0.08
        }
        response[delay] += 0.6
        var echo = [Float](repeating: 0, count: far.count)
        for (tap, weight) in response.enumerated() where weight != 0 {
            for index in tap..<far.count { echo[index] += far[index - tap] * weight }
        }
        let scale = Float(Measure.rms(far) / Measure.rms(echo) * pow(10, -loss / 20))
        return echo.map { $0 * scale }
    }

    /// Runs `mic` through `canceller` against `far`, block by block:
    /// filtered, then suppressed with the near end as `unsaid` says (by
    /// default nobody's word on it), or, given `start`, told the near end
    /// is silent until that sample and talks from it on. `eachBlock` looks
    /// at the canceller after each block.
    static func cancel(mic: [Float], far: [Float], talkingFrom start: Int? = nil,
                       unsaid: EchoCanceller.NearEnd = .unknown, with canceller: EchoCanceller = EchoCanceller(),
                       eachBlock: (EchoCanceller) -> Void = { _ in }) -> [Float] {
        var output = mic
        let blocks = mic.count / EchoCanceller.blockSize
        output.withUnsafeMutableBufferPointer { out in
            far.withUnsafeBufferPointer { reference in
                for block in 0..<blocks {
                    let range = (block * 160)..<((block + 1) * 160)
                    let samples = UnsafeMutableBufferPointer(rebasing: out[range])
                    canceller.filter(samples, reference: UnsafeBufferPointer(rebasing: reference[range]))
                    let nearEnd: EchoCanceller.NearEnd = start.map { range.lowerBound >= $0 ? .talking : .silent } ?? unsaid
                    canceller.suppress(samples, nearEnd: nearEnd)
                    eachBlock(canceller)
                }
            }
        }
        return Array(output.prefix(blocks * 160))
    }
}
