/// A delay line of up to `maximum` samples whose delay may change between
/// blocks, for lining a signal up with a later one. It allocates once.
public final class SampleDelay {
    /// The longest delay the line holds, in samples.
    public let maximum: Int
    /// The delay in samples, 0 to `maximum`.
    public var delay = 0 {
        didSet { delay = min(max(delay, 0), maximum) }
    }
    private let line: UnsafeMutableBufferPointer<Float>
    private var writeIndex = 0

    /// - Parameters:
    ///   - maximum: the longest delay, in samples.
    ///   - storage: owns the line's memory.
    public init(maximum: Int, storage: RealTimeStorage) {
        self.maximum = maximum
        line = storage.zeroed(maximum + 1)
    }

    /// Replaces each sample of `block` with the one `delay` samples before it.
    public func process(_ block: UnsafeMutableBufferPointer<Float>) {
        let length = line.count
        for index in block.indices {
            line[writeIndex] = block[index]
            block[index] = line[(writeIndex - delay + length) % length]
            writeIndex = (writeIndex + 1) % length
        }
    }
}
