/// Peak and RMS per channel over everything it has seen.
///
/// Storage is fixed at creation, so `measure` can run on the render thread.
public struct LevelMeter: Sendable {
    /// Channels per frame of the blocks it measures.
    public let channelCount: Int
    private var peaks: [Float]
    private var sumsOfSquares: [Double]
    /// Frames measured so far.
    public private(set) var frameCount = 0

    /// A meter for `channelCount` channels that has seen nothing yet.
    public init(channelCount: Int) {
        self.channelCount = channelCount
        peaks = [Float](repeating: 0, count: channelCount)
        sumsOfSquares = [Double](repeating: 0, count: channelCount)
    }

    /// Adds the whole frames of an interleaved `block` to the measurement.
    public mutating func measure(interleaved block: UnsafeBufferPointer<Float>) {
        let frames = block.count / channelCount
        peaks.withUnsafeMutableBufferPointer { peaks in
            sumsOfSquares.withUnsafeMutableBufferPointer { sums in
                for channel in 0..<channelCount {
                    var peak = peaks[channel]
                    var sum: Double = 0
                    for frame in 0..<frames {
                        let sample = block[frame * channelCount + channel]
                        peak = max(peak, abs(sample))
                        sum += Double(sample) * Double(sample)
                    }
                    peaks[channel] = peak
                    sums[channel] += sum
                }
            }
        }
        frameCount += frames
    }

    /// The largest absolute sample seen on `channel`, linear (1 is full scale).
    public func peak(channel: Int) -> Double { Double(peaks[channel]) }

    /// The RMS of `channel` over every frame seen, linear; 0 before any.
    public func rms(channel: Int) -> Double {
        frameCount > 0 ? (sumsOfSquares[channel] / Double(frameCount)).squareRoot() : 0
    }

    /// The peak of `channel` in dBFS; `-infinity` for silence.
    public func peakDecibels(channel: Int) -> Double { Level.decibels(fromLinear: peak(channel: channel)) }
    /// The RMS of `channel` in dBFS; `-infinity` for silence.
    public func rmsDecibels(channel: Int) -> Double { Level.decibels(fromLinear: rms(channel: channel)) }
}
