import AudioCore

#if canImport(Glibc)
import Glibc
#endif

/// A look-ahead peak limiter: the signal is delayed while the gain falls
/// smoothly ahead of each peak, so nothing leaves above `ceiling` and
/// nothing is clipped; the gain then recovers over `releaseSeconds`.
///
/// The gain a sample needs is held over the look-ahead window (a running
/// minimum), released towards unity, then averaged over the same window:
/// every average that reaches a peak's sample is of gains no higher than
/// the peak needs, so the ramp into it is a straight line, not a step.
public final class PeakLimiter {
    /// The highest magnitude that leaves, in linear full scale.
    public let ceiling: Float
    /// Samples by which the output lags the input.
    public let latencyFrames: Int
    private let window: Int
    private let release: Float
    private let storage = RealTimeStorage()
    /// The input not yet sent, a ring of `latencyFrames`.
    private let delayed: UnsafeMutableBufferPointer<Float>
    /// The held gains being averaged, a ring of `window`.
    private let held: UnsafeMutableBufferPointer<Float>
    /// The running minimum: gains in increasing order, with the sample each expires after.
    private let minimumGains: UnsafeMutableBufferPointer<Float>
    private let minimumEnds: UnsafeMutableBufferPointer<Int>
    @exclusivity(unchecked) private var minimumFirst = 0, minimumCount = 0
    /// Samples taken, for the running minimum's expiries; the rings' own
    /// positions wrap by comparison, with no division per sample.
    @exclusivity(unchecked) private var position = 0
    @exclusivity(unchecked) private var heldSlot = 0, delaySlot = 0
    @exclusivity(unchecked) private var released: Float = 1
    @exclusivity(unchecked) private var heldSum: Double

    /// A limiter at `sampleRate` Hz to `ceilingDecibels` (dBFS), looking
    /// `lookAheadSeconds` ahead, recovering with a time constant of `releaseSeconds`.
    public init(sampleRate: Int, ceilingDecibels: Double = -1, lookAheadSeconds: Double = 0.0015, releaseSeconds: Double = 0.08) {
        ceiling = Float(pow(10, ceilingDecibels / 20))
        window = max(2, Int((lookAheadSeconds * Double(sampleRate)).rounded()))
        latencyFrames = window - 1
        release = Float(exp(-1 / (releaseSeconds * Double(sampleRate))))
        delayed = storage.zeroed(latencyFrames)
        held = storage.copy(of: [Float](repeating: 1, count: window))
        heldSum = Double(window)
        minimumGains = storage.zeroed(window)
        minimumEnds = .allocate(capacity: window)
        minimumEnds.initialize(repeating: 0)
    }

    deinit { minimumEnds.deallocate() }

    /// Limits `block` in place: it comes out `latencyFrames` later.
    public func process(_ block: UnsafeMutableBufferPointer<Float>) {
        for index in block.indices {
            let sample = block[index]
            let magnitude = abs(sample)
            let needed = magnitude > ceiling ? ceiling / magnitude : 1
            let minimum = pushMinimum(needed)
            released = min(minimum, 1 - (1 - released) * release)
            heldSum += Double(released) - Double(held[heldSlot])
            held[heldSlot] = released
            heldSlot = Self.next(heldSlot, in: window)
            let gain = Float(heldSum / Double(window))
            block[index] = delayed[delaySlot] * min(gain, 1)
            delayed[delaySlot] = sample
            delaySlot = Self.next(delaySlot, in: latencyFrames)
            position += 1
        }
    }

    /// Takes `needed` into the running minimum over the last `window` samples and returns it.
    private func pushMinimum(_ needed: Float) -> Float {
        // Gains no lower than the new one can never be the minimum again.
        while minimumCount > 0 && minimumGains[slot(minimumCount - 1)] >= needed { minimumCount -= 1 }
        let last = slot(minimumCount)
        minimumGains[last] = needed
        minimumEnds[last] = position + window
        minimumCount += 1
        if position >= minimumEnds[minimumFirst] {
            minimumFirst = Self.next(minimumFirst, in: window)
            minimumCount -= 1
        }
        return minimumGains[minimumFirst]
    }

    /// The ring slot of the running minimum's entry `offset` from its first.
    private func slot(_ offset: Int) -> Int {
        let slot = minimumFirst + offset
        return slot >= window ? slot - window : slot
    }

    private static func next(_ slot: Int, in count: Int) -> Int { slot + 1 == count ? 0 : slot + 1 }
}
