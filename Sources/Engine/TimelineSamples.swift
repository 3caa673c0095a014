/// A mono sound laid on the room's timeline: which of its samples sounds at
/// any frame, at its rate, once or looping. The engine reads the sounds it
/// renders itself through this, in step with OpenAL playing the same audio.
struct TimelineSamples {
    let samples: [Float]
    /// Timeline frame of its first sample.
    var startFrame: Int
    let rate: Double
    let loop: Bool
    /// False: stopped, silent wherever the timeline is.
    var playing = true

    /// Starts and stops as the source's live state says, `delay` frames later on the timeline.
    mutating func follow(_ state: SourceState, delayedBy delay: Int = 0) {
        startFrame = state.startFrame + delay
        playing = state.playing
    }

    /// Writes the samples for timeline frames `frame ..< frame + output.count`
    /// into `output`: silence before the start and after a single play,
    /// linear interpolation between samples at rates other than 1.
    func read(into output: UnsafeMutableBufferPointer<Float>, from frame: Int) {
        let count = samples.count
        guard playing else { return output.update(repeating: 0) }
        if rate == 1 { return copy(into: output, from: frame) }
        samples.withUnsafeBufferPointer { source in
            for index in output.indices {
                let offset = frame + index - startFrame
                guard offset >= 0, count > 0 else {
                    output[index] = 0
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

    /// Hands `body` the samples for timeline frames `frame ..< frame + scratch.count`:
    /// straight from the sound where they lie in one run at rate 1, which
    /// saves a crowd source's copy, or else as `read` writes them into `scratch`.
    func withSamples(from frame: Int, scratch: UnsafeMutableBufferPointer<Float>, _ body: (UnsafePointer<Float>) -> Void) {
        let offset = frame - startFrame
        if playing, rate == 1, !samples.isEmpty, offset >= 0, offset < samples.count || loop {
            let position = offset % samples.count
            if position + scratch.count <= samples.count {
                return samples.withUnsafeBufferPointer { body($0.baseAddress! + position) }
            }
        }
        read(into: scratch, from: frame)
        body(scratch.baseAddress!)
    }

    /// At rate 1 the samples are copied in runs: silence, then the sound
    /// from its offset, wrapping while it loops, then silence.
    private func copy(into output: UnsafeMutableBufferPointer<Float>, from frame: Int) {
        let count = samples.count
        var index = 0
        samples.withUnsafeBufferPointer { source in
            while index < output.count {
                let offset = frame + index - startFrame
                guard offset >= 0, count > 0, offset < count || loop else {
                    let silent = offset < 0 ? min(-offset, output.count - index) : output.count - index
                    UnsafeMutableBufferPointer(rebasing: output[index..<(index + silent)]).update(repeating: 0)
                    index += silent
                    continue
                }
                let position = offset % count
                let run = min(count - position, output.count - index)
                _ = UnsafeMutableBufferPointer(rebasing: output[index..<(index + run)])
                    .update(fromContentsOf: source[position..<(position + run)])
                index += run
            }
        }
    }
}

/// Where in a sound `frames` long, starting at `startFrame` of the room's
/// timeline and played at `rate`, playback is at timeline `frame`: nil
/// before it starts and after a single play.
func playbackOffset(at frame: Int, startFrame: Int, rate: Double, frames: Int, loop: Bool) -> Int? {
    guard frame >= startFrame, frames > 0 else { return nil }
    let offset = Int((Double(frame - startFrame) * rate).rounded())
    if offset < frames { return offset }
    return loop ? offset % frames : nil
}
