import AudioCore
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite struct FFTTests {
    @Test func aToneLandsInItsBinWithItsAmplitude() {
        let fft = FFT(size: 512)
        var real = (0..<512).map { Float(0.5 * cos(2 * Double.pi * 24 * Double($0) / 512)) }
        var imaginary = [Float](repeating: 0, count: 512)
        real.withUnsafeMutableBufferPointer { re in imaginary.withUnsafeMutableBufferPointer { fft.forward(real: re, imaginary: $0) } }
        let magnitudes = (0..<512).map { (real[$0] * real[$0] + imaginary[$0] * imaginary[$0]).squareRoot() }
        // A real cosine splits between bin k and N - k, each at N * A / 2.
        #expect(abs(magnitudes[24] - 128) < 1e-3 && abs(magnitudes[488] - 128) < 1e-3)
        #expect(magnitudes.enumerated().allSatisfy { $0.offset == 24 || $0.offset == 488 || $0.element < 1e-3 })
    }

    @Test(arguments: [256, 320])
    func inverseUndoesForward(size: Int) {
        let fft = FFT(size: size)
        var state: UInt64 = 5
        let signal = (0..<size).map { _ -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state) >> 40) / Float(1 << 23)
        }
        var real = signal, imaginary = [Float](repeating: 0, count: size)
        real.withUnsafeMutableBufferPointer { re in
            imaginary.withUnsafeMutableBufferPointer { im in
                fft.forward(real: re, imaginary: im)
                fft.inverse(real: re, imaginary: im)
            }
        }
        #expect(zip(real, signal).allSatisfy { abs($0 - $1) < 1e-5 } && imaginary.allSatisfy { abs($0) < 1e-5 })
    }

    @Test func aToneInAMixedRadixSizeLandsInItsBin() {
        let fft = RealFFT(size: 320)
        let signal = (0..<320).map { Float(0.5 * sin(2 * Double.pi * 7 * Double($0) / 320)) }
        var re = [Float](repeating: 0, count: 161), im = re
        signal.withUnsafeBufferPointer { x in re.withUnsafeMutableBufferPointer { r in im.withUnsafeMutableBufferPointer { fft.forward(x, binsReal: r, binsImaginary: $0) } } }
        // A sine is -i N A / 2 in its bin.
        #expect(abs(re[7]) < 1e-3 && abs(im[7] + 80) < 1e-3)
        let magnitudes: [Float] = (0..<161).map { (re[$0] * re[$0] + im[$0] * im[$0]).squareRoot() }
        #expect(magnitudes.indices.allSatisfy { $0 == 7 || magnitudes[$0] < 1e-3 })
        var back = [Float](repeating: 0, count: 320)
        re.withUnsafeBufferPointer { r in im.withUnsafeBufferPointer { i in back.withUnsafeMutableBufferPointer { fft.inverse(binsReal: r, binsImaginary: i, signal: $0) } } }
        #expect(zip(back, signal).allSatisfy { abs($0 - $1) < 1e-5 })
    }
}

@Suite struct RealFFTTests {
    /// The real transform against the DFT's definition, and back.
    @Test(arguments: [320, 512])
    func matchesTheDefinitionAndInverts(size: Int) {
        var state: UInt64 = 5
        let signal = (0..<size).map { _ -> Float in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: state) >> 40) / Float(1 << 23)
        }
        let fft = RealFFT(size: size)
        var re = [Float](repeating: 0, count: fft.bins), im = re, back = [Float](repeating: 0, count: size)
        signal.withUnsafeBufferPointer { x in
            re.withUnsafeMutableBufferPointer { re in im.withUnsafeMutableBufferPointer { fft.forward(x, binsReal: re, binsImaginary: $0) } }
        }
        var worst = 0.0
        for bin in 0..<fft.bins {
            var sumRe = 0.0, sumIm = 0.0
            for (n, x) in signal.enumerated() {
                let angle = -2 * Double.pi * Double(bin * n % size) / Double(size)
                sumRe += Double(x) * cos(angle)
                sumIm += Double(x) * sin(angle)
            }
            worst = max(worst, abs(sumRe - Double(re[bin])), abs(sumIm - Double(im[bin])))
        }
        #expect(worst < 1e-4 * Double(size), "largest error \(worst)")
        re.withUnsafeBufferPointer { re in
            im.withUnsafeBufferPointer { im in back.withUnsafeMutableBufferPointer { fft.inverse(binsReal: re, binsImaginary: im, signal: $0) } }
        }
        let roundTrip = zip(signal, back).map { abs($0 - $1) }.max()!
        #expect(roundTrip < 1e-5, "round trip error \(roundTrip)")
    }
}
