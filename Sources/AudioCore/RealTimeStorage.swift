/// Fixed-size sample storage for a real-time processor's state: allocated
/// once, never resized, copied or reference-counted, so the inner loops of
/// a block index raw memory. It frees its buffers when it goes.
public final class RealTimeStorage {
    private var buffers: [UnsafeMutableBufferPointer<Float>] = []

    /// Storage holding no buffers yet.
    public init() {}

    /// A new zeroed buffer of `count` samples, freed with the others.
    public func zeroed(_ count: Int) -> UnsafeMutableBufferPointer<Float> {
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: count)
        buffer.initialize(repeating: 0)
        buffers.append(buffer)
        return buffer
    }

    /// A new buffer holding `values`, freed with the others.
    public func copy(of values: [Float]) -> UnsafeMutableBufferPointer<Float> {
        let buffer = zeroed(values.count)
        _ = buffer.update(fromContentsOf: values)
        return buffer
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
    }
}
