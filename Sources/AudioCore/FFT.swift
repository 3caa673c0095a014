#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A radix-2 complex FFT of one power-of-two size, on split real and
/// imaginary arrays, in place. Twiddles and the bit-reversal order are
/// computed once, so a transform allocates nothing: the voice chain runs
/// one per block on the real-time path.
public struct FFT: Sendable {
    public let size: Int
    private let cosines: [Float]
    private let sines: [Float]
    private let reversed: [Int]

    public init(size: Int) {
        precondition(size >= 2 && size & (size - 1) == 0, "the FFT size is a power of two")
        self.size = size
        cosines = (0..<(size / 2)).map { Float(cos(2 * Double.pi * Double($0) / Double(size))) }
        sines = (0..<(size / 2)).map { Float(-sin(2 * Double.pi * Double($0) / Double(size))) }
        let bits = size.trailingZeroBitCount
        reversed = (0..<size).map { index in
            var value = 0
            for bit in 0..<bits where index & (1 << bit) != 0 { value |= 1 << (bits - 1 - bit) }
            return value
        }
    }

    /// `X[k] = sum over n of x[n] * exp(-2 pi i k n / N)`.
    public func forward(real: UnsafeMutableBufferPointer<Float>, imaginary: UnsafeMutableBufferPointer<Float>) {
        transform(real, imaginary, sign: 1)
    }

    /// The inverse, scaled by `1 / N` so that it undoes `forward`.
    public func inverse(real: UnsafeMutableBufferPointer<Float>, imaginary: UnsafeMutableBufferPointer<Float>) {
        transform(real, imaginary, sign: -1)
        let scale = 1 / Float(size)
        for index in 0..<size {
            real[index] *= scale
            imaginary[index] *= scale
        }
    }

    private func transform(_ real: UnsafeMutableBufferPointer<Float>, _ imaginary: UnsafeMutableBufferPointer<Float>, sign: Float) {
        precondition(real.count >= size && imaginary.count >= size, "buffers hold the FFT size")
        for index in 0..<size where reversed[index] > index {
            real.swapAt(index, reversed[index])
            imaginary.swapAt(index, reversed[index])
        }
        var span = 1
        while span < size {
            let stride = size / (span * 2)
            var start = 0
            while start < size {
                for offset in 0..<span {
                    let c = cosines[offset * stride], s = sines[offset * stride] * sign
                    let a = start + offset, b = a + span
                    let tr = real[b] * c - imaginary[b] * s
                    let ti = real[b] * s + imaginary[b] * c
                    real[b] = real[a] - tr
                    imaginary[b] = imaginary[a] - ti
                    real[a] += tr
                    imaginary[a] += ti
                }
                start += span * 2
            }
            span *= 2
        }
    }
}
