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
    /// Points per transform: complex samples in, frequency bins out.
    public let size: Int
    /// The odd factor, 1 for a power of two.
    private let factor: Int
    private let storage = RealTimeStorage()
    private let cosines: UnsafeMutableBufferPointer<Float>
    private let sines: UnsafeMutableBufferPointer<Float>
    /// The odd factor's twiddles, W^(r k) for residue r and bin k, at `r * size + k`.
    private let factorCosines: UnsafeMutableBufferPointer<Float>
    private let factorSines: UnsafeMutableBufferPointer<Float>
    private let reversed: [Int]
    private let scratchReal: UnsafeMutableBufferPointer<Float>
    private let scratchImaginary: UnsafeMutableBufferPointer<Float>

    /// Makes the tables for `size` points, a power of two times an odd factor up to 15, at least 2.
    public init(size: Int) {
        let factor = size >> size.trailingZeroBitCount
        precondition(size >= 2 && factor <= 15, "the FFT size is a power of two times an odd factor up to 15")
        self.size = size
        self.factor = factor
        // e^(-2 pi i j / size) for every j: the radix-2 stages and the odd factor's combination share it.
        let angle = { (j: Int) in 2 * Double.pi * Double(j % size) / Double(size) }
        cosines = storage.copy(of: (0..<size).map { Float(cos(angle($0))) })
        sines = storage.copy(of: (0..<size).map { Float(-sin(angle($0))) })
        let products = (0..<(factor * size)).map { ($0 / size) * ($0 % size) }
        factorCosines = storage.copy(of: products.map { Float(cos(angle($0))) })
        factorSines = storage.copy(of: products.map { Float(-sin(angle($0))) })
        let part = size / factor, bits = part.trailingZeroBitCount
        reversed = (0..<part).map { index in
            var value = 0
            for bit in 0..<bits where index & (1 << bit) != 0 { value |= 1 << (bits - 1 - bit) }
            return value
        }
        scratchReal = storage.zeroed(size)
        scratchImaginary = storage.zeroed(size)
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
        let sr = scratchReal, si = scratchImaginary
        for residue in 0..<factor {
            for index in 0..<part {
                sr[residue * part + index] = real[index * factor + residue]
                si[residue * part + index] = imaginary[index * factor + residue]
            }
            radix2(sr.baseAddress! + residue * part, si.baseAddress! + residue * part, sign: sign)
        }
        for copy in 0..<factor {
            for inner in 0..<part {
                real[copy * part + inner] = sr[inner]
                imaginary[copy * part + inner] = si[inner]
            }
        }
        for residue in 1..<factor {
            let twiddles = residue * size, row = residue * part
            for copy in 0..<factor {
                for inner in 0..<part {
                    let bin = copy * part + inner
                    let c = factorCosines[twiddles + bin], s = factorSines[twiddles + bin] * sign
                    let a = sr[row + inner], b = si[row + inner]
                    real[bin] += a * c - b * s
                    imaginary[bin] += a * s + b * c
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

/// The FFT of real signals: `size` samples in, `size / 2 + 1` bins out, and
/// back. The even and odd samples travel as one complex signal of half the
/// size, whose transform is then split into the real signal's spectrum.
public final class RealFFT {
    /// Real samples per transform; a multiple of four.
    public let size: Int
    /// Bins of the spectrum, 0 Hz to Nyquist: `size / 2 + 1`.
    public var bins: Int { size / 2 + 1 }
    private let half: FFT
    private let storage = RealTimeStorage()
    private let real: UnsafeMutableBufferPointer<Float>
    private let imaginary: UnsafeMutableBufferPointer<Float>
    /// e^(-2 pi i k / size) for the split.
    private let cosines: UnsafeMutableBufferPointer<Float>
    private let sines: UnsafeMutableBufferPointer<Float>

    /// Makes the tables for `size` samples, a multiple of four whose half suits `FFT`.
    public init(size: Int) {
        precondition(size % 4 == 0, "a size that is a multiple of four")
        self.size = size
        half = FFT(size: size / 2)
        real = storage.zeroed(size / 2)
        imaginary = storage.zeroed(size / 2)
        cosines = storage.copy(of: (0...(size / 2)).map { Float(cos(2 * Double.pi * Double($0) / Double(size))) })
        sines = storage.copy(of: (0...(size / 2)).map { Float(-sin(2 * Double.pi * Double($0) / Double(size))) })
    }

    /// The spectrum of `signal` (`size` samples) into `binsReal` and `binsImaginary` (`bins` each).
    public func forward(_ signal: UnsafeBufferPointer<Float>, binsReal: UnsafeMutableBufferPointer<Float>,
                        binsImaginary: UnsafeMutableBufferPointer<Float>) {
        let m = size / 2
        for index in 0..<m {
            real[index] = signal[2 * index]
            imaginary[index] = signal[2 * index + 1]
        }
        half.forward(real: real, imaginary: imaginary)
        for bin in 0...m {
            // Even part E = (Z[k] + conj Z[m-k]) / 2, odd part O = (Z[k] - conj Z[m-k]) / 2i.
            let k = bin % m, mirror = (m - bin) % m
            let zr = real[k], zi = imaginary[k], wr = real[mirror], wi = -imaginary[mirror]
            let er = 0.5 * (zr + wr), ei = 0.5 * (zi + wi)
            let or = 0.5 * (zi - wi), oi = -0.5 * (zr - wr)
            let c = cosines[bin], s = sines[bin]
            binsReal[bin] = er + or * c - oi * s
            binsImaginary[bin] = ei + or * s + oi * c
        }
    }

    /// The real signal whose spectrum's first `bins` bins are given.
    public func inverse(binsReal: UnsafeBufferPointer<Float>, binsImaginary: UnsafeBufferPointer<Float>,
                        signal: UnsafeMutableBufferPointer<Float>) {
        let m = size / 2
        for k in 0..<m {
            // E = (X[k] + conj X[m-k]) / 2, O = (X[k] - conj X[m-k]) e^(2 pi i k / size) / 2, Z = E + i O.
            let xr = binsReal[k], xi = binsImaginary[k], yr = binsReal[m - k], yi = -binsImaginary[m - k]
            let er = 0.5 * (xr + yr), ei = 0.5 * (xi + yi)
            let dr = 0.5 * (xr - yr), di = 0.5 * (xi - yi)
            let c = cosines[k], s = -sines[k]
            let or = dr * c - di * s, oi = dr * s + di * c
            real[k] = er - oi
            imaginary[k] = ei + or
        }
        half.inverse(real: real, imaginary: imaginary)
        for index in 0..<m {
            signal[2 * index] = real[index]
            signal[2 * index + 1] = imaginary[index]
        }
    }
}
