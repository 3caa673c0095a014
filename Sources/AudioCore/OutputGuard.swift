/// The last stage before a device or file: whatever happened upstream, what
/// leaves the engine is finite and within [-1, 1].
///
/// OpenAL Soft's limiter keeps ordinary peaks under 0 dBFS with a look-ahead;
/// this catches what a look-ahead limiter cannot: non-finite samples and the
/// rare overshoot on a transient.
public enum OutputGuard {
    /// Cleans `block` in place and returns how many samples it had to change.
    @discardableResult
    public static func sanitize(_ block: UnsafeMutableBufferPointer<Float>) -> Int {
        var repaired = 0
        for index in block.indices {
            let sample = block[index]
            if !sample.isFinite {
                block[index] = 0
                repaired += 1
            } else if sample > 1 {
                block[index] = 1
                repaired += 1
            } else if sample < -1 {
                block[index] = -1
                repaired += 1
            }
        }
        return repaired
    }
}
