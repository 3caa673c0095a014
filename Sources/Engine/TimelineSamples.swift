/// A mono sound laid on the room's timeline: which of its samples sounds at
/// any frame, at its rate, once or looping. The engine reads the sounds it
/// renders itself through this, in step with OpenAL playing the same audio.
struct TimelineSamples {
    let samples: [Float]
    /// Timeline frame of its first sample.
    let startFrame: Int
    let rate: Double
    let loop: Bool

    /// Writes the samples for timeline frames `frame ..< frame + output.count`
    /// into `output`: silence before the start and after a single play,
    /// linear interpolation between samples at rates other than 1.
    func read(into output: UnsafeMutableBufferPointer<Float>, from frame: Int) {
        let count = samples.count
        samples.withUnsafeBufferPointer { source in
            for index in output.indices {
                let offset = frame + index - startFrame
                guard offset >= 0, count > 0 else {
                    output[index] = 0
                    continue
                }
                if rate == 1 {
                    output[index] = offset < count ? source[offset] : loop ? source[offset % count] : 0
                    continue
                }
                let position = Double(offset) * rate
                var whole = Int(position)
                if whole >= count {
                    guard loop else {
                        output[index] = 0
                        continue
                    }
                    whole %= count
                }
                let next = whole + 1 < count ? source[whole + 1] : loop ? source[0] : 0
                let fraction = Float(position - position.rounded(.down))
                output[index] = source[whole] + (next - source[whole]) * fraction
            }
        }
    }
}
