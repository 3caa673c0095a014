#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A complex FFT of a size that is a power of two, or a power of two times
/// a small odd factor (320 = 5 × 64 transforms two 10 ms blocks at 16 kHz),
/// on split real and imaginary arrays, in place. Twiddles, the bit-reversal
/// order and scratch space are made once, so a transform allocates nothing:
/// the voice chain runs several per block on the real-time path.
public final class FFT {
    public let size: Int
    /// The odd factor, 1 for a power of two.
    private let factor: Int
    private let cosines: [Float]
    private let sines: [Float]
    private let reversed: [Int]
    private var scratchReal: [Float]
    private var scratchImaginary: [Float]

    public init(size: Int) {
        let factor = size >> size.trailingZeroBitCount
        precondition(size >= 2 && factor <= 15, "the FFT size is a power of two times an odd factor up to 15")
        self.size = size
        self.factor = factor
        // e^(-2 pi i j / size) for every j: the radix-2 stages and the odd factor's combination share it.
        cosines = (0..<size).map { Float(cos(2 * Double.pi * Double($0) / Double(size))) }
        sines = (0..<size).map { Float(-sin(2 * Double.pi * Double($0) / Double(size))) }
        let part = size / factor, bits = part.trailingZeroBitCount
        reversed = (0..<part).map { index in
            var value = 0
            for bit in 0..<bits where index & (1 << bit) != 0 { value |= 1 << (bits - 1 - bit) }
            return value
        }
        scratchReal = [Float](repeating: 0, count: size)
        scratchImaginary = [Float](repeating: 0, count: size)
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
        if factor == 1 {
            radix2(real.baseAddress!, imaginary.baseAddress!, sign: sign)
            return
        }
        // Decimation in time by the odd factor: one power-of-two transform
        // per residue, then X[k] = sum over r of W^(r k) * F_r[k mod M].
        let part = size / factor
        scratchReal.withUnsafeMutableBufferPointer { sr in
            scratchImaginary.withUnsafeMutableBufferPointer { si in
                for residue in 0..<factor {
                    for index in 0..<part {
                        sr[residue * part + index] = real[index * factor + residue]
                        si[residue * part + index] = imaginary[index * factor + residue]
                    }
                    radix2(sr.baseAddress! + residue * part, si.baseAddress! + residue * part, sign: sign)
                }
                for bin in 0..<size {
                    var sumReal: Float = 0, sumImaginary: Float = 0
                    let inner = bin % part
                    for residue in 0..<factor {
                        let twiddle = (residue * bin) % size
                        let c = cosines[twiddle], s = sines[twiddle] * sign
                        let a = sr[residue * part + inner], b = si[residue * part + inner]
                        sumReal += a * c - b * s
                        sumImaginary += a * s + b * c
                    }
                    real[bin] = sumReal
                    imaginary[bin] = sumImaginary
                }
            }
        }
    }

    /// An in-place radix-2 transform of the power-of-two part of the size.
    private func radix2(_ real: UnsafeMutablePointer<Float>, _ imaginary: UnsafeMutablePointer<Float>, sign: Float) {
        let part = size / factor
        for index in 0..<part where reversed[index] > index {
            swap(&real[index], &real[reversed[index]])
            swap(&imaginary[index], &imaginary[reversed[index]])
        }
        var span = 1
        while span < part {
            // Twiddles of the sub-size, taken from the full-size table.
            let stride = size / (span * 2)
            var start = 0
            while start < part {
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

/// The FFT of real signals: `size` samples in, `size / 2 + 1` bins out, and back.
public final class RealFFT {
    public let size: Int
    public var bins: Int { size / 2 + 1 }
    private let fft: FFT
    private var real: [Float]
    private var imaginary: [Float]

    public init(size: Int) {
        precondition(size % 2 == 0, "an even size")
        self.size = size
        fft = FFT(size: size)
        real = [Float](repeating: 0, count: size)
        imaginary = [Float](repeating: 0, count: size)
    }

    /// The spectrum of `signal` (`size` samples) into `binsReal` and `binsImaginary` (`bins` each).
    public func forward(_ signal: UnsafeBufferPointer<Float>, binsReal: UnsafeMutableBufferPointer<Float>,
                        binsImaginary: UnsafeMutableBufferPointer<Float>) {
        real.withUnsafeMutableBufferPointer { re in
            imaginary.withUnsafeMutableBufferPointer { im in
                for index in 0..<size {
                    re[index] = signal[index]
                    im[index] = 0
                }
                fft.forward(real: re, imaginary: im)
                for bin in 0..<bins {
                    binsReal[bin] = re[bin]
                    binsImaginary[bin] = im[bin]
                }
            }
        }
    }

    /// The real signal whose spectrum's first `bins` bins are given.
    public func inverse(binsReal: UnsafeBufferPointer<Float>, binsImaginary: UnsafeBufferPointer<Float>,
                        signal: UnsafeMutableBufferPointer<Float>) {
        real.withUnsafeMutableBufferPointer { re in
            imaginary.withUnsafeMutableBufferPointer { im in
                for bin in 0..<bins {
                    re[bin] = binsReal[bin]
                    im[bin] = binsImaginary[bin]
                }
                for bin in bins..<size {
                    re[bin] = binsReal[size - bin]
                    im[bin] = -binsImaginary[size - bin]
                }
                fft.inverse(real: re, imaginary: im)
                for index in 0..<size { signal[index] = re[index] }
            }
        }
    }
}
