#if canImport(Glibc)
import Glibc
#endif

/// Automatic gain control that follows the talker only: it measures the
/// long-term level of frames the voice-activity detector calls speech,
/// moves its gain only on those frames, toward a window around the target
/// level, and holds it through pauses, so neither silence nor residual echo
/// is ever pumped up.
public struct GainControl: Sendable {
    /// Frame RMS the talker is brought to, in dBFS.
    public var targetDecibels = -20.0
    /// A talker this close to the target is left alone; one further off is
    /// brought to the edge of this window. A gain that moves while someone
    /// talks colours their voice, so it only moves for a talker who needs it.
    public var toleranceDecibels = 6.0
    /// The most it boosts and cuts, in dB.
    public var maximumGainDecibels = 18.0
    /// The deepest cut it makes to level the talker, in dB; the peak ceiling may cut further.
    public var minimumGainDecibels = -12.0
    /// How fast the gain may move, in dB per second.
    public var slewDecibelsPerSecond = 12.0
    /// Peaks are kept below this, in linear full scale.
    public var peakCeiling: Float = 0.9

    /// The gain at the end of the last frame, in dB; 0 dB at the start.
    public private(set) var gainDecibels = 0.0
    private var speechPower: Double?
    private var speechSeconds = 0.0
    static let firstMemorySeconds = 0.3
    static let longestMemorySeconds = 3.0
    private let frameSeconds: Double

    /// A gain control at 0 dB for frames of `frameSize` samples at `sampleRate` Hz, which set how
    /// far the gain may move per frame.
    public init(frameSize: Int, sampleRate: Int) {
        frameSeconds = Double(frameSize) / Double(sampleRate)
    }

    /// Applies the gain to one frame in place, ramped from the previous
    /// frame's gain; `speech` says whether the detector heard a talker in it.
    public mutating func process(_ frame: UnsafeMutableBufferPointer<Float>, speech: Bool) {
        let before = gainDecibels
        if speech {
            var energy: Float = 0
            for sample in frame { energy += sample * sample }
            let power = Double(energy / Float(max(frame.count, 1))) + 1e-12
            // The talker's long-term power: settles on a new talker in its
            // first words, then averages over several seconds so the gain
            // does not follow every syllable.
            speechSeconds += frameSeconds
            let memory = min(Self.longestMemorySeconds, Self.firstMemorySeconds + speechSeconds)
            speechPower = speechPower.map { $0 + (power - $0) * frameSeconds / memory } ?? power
            let level = 10 * log10(speechPower!)
            let lowest = targetDecibels - toleranceDecibels, highest = targetDecibels + toleranceDecibels
            let corrected = level < lowest ? lowest - level : level > highest ? highest - level : 0
            let wanted = min(max(corrected, minimumGainDecibels), maximumGainDecibels)
            // It moves only while the talker talks and holds through pauses.
            let step = slewDecibelsPerSecond * frameSeconds
            gainDecibels += min(max(wanted - gainDecibels, -step), step)
        }
        var peak: Float = 0
        for sample in frame { peak = max(peak, abs(sample)) }
        // A peak the gain would push past the ceiling lowers it at once.
        if peak > 0 {
            let ceiling = 20 * log10(Double(peakCeiling / peak))
            gainDecibels = min(gainDecibels, ceiling)
        }
        let from = Float(pow(10, before / 20)), to = Float(pow(10, gainDecibels / 20))
        let count = Float(frame.count)
        for index in frame.indices {
            frame[index] *= from + (to - from) * Float(index + 1) / count
        }
    }
}
