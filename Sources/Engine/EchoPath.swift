import AudioCore

/// The way from the output back into the microphone: what the engine
/// played, convolved with a room's impulse response, block by block
/// (uniformly partitioned overlap-save). Offline, it closes the loop of
/// render, echo and cancellation that a real room closes live.
final class EchoPath {
    static let blockFrames = RoomRenderer.blockFrames
    private static let fftSize = 2 * blockFrames
    private static let bins = blockFrames + 1

    private let fft = RealFFT(size: fftSize)
    private let partitions: Int
    private let storage = RealTimeStorage()
    private let responseReal: UnsafeMutableBufferPointer<Float>, responseImaginary: UnsafeMutableBufferPointer<Float>
    /// Spectra of the played signal, newest at `newest`, a ring of `partitions` rows.
    private let playedReal: UnsafeMutableBufferPointer<Float>, playedImaginary: UnsafeMutableBufferPointer<Float>
    private var newest = 0
    private let frame: UnsafeMutableBufferPointer<Float>
    private let echo: UnsafeMutableBufferPointer<Float>
    private let sumReal: UnsafeMutableBufferPointer<Float>, sumImaginary: UnsafeMutableBufferPointer<Float>

    init(impulseResponse: [Float]) {
        let block = Self.blockFrames, bins = Self.bins
        partitions = max(1, (impulseResponse.count + block - 1) / block)
        responseReal = storage.zeroed(partitions * bins)
        responseImaginary = storage.zeroed(partitions * bins)
        playedReal = storage.zeroed(partitions * bins)
        playedImaginary = storage.zeroed(partitions * bins)
        frame = storage.zeroed(Self.fftSize)
        echo = storage.zeroed(Self.fftSize)
        sumReal = storage.zeroed(bins)
        sumImaginary = storage.zeroed(bins)
        for partition in 0..<partitions {
            for index in 0..<Self.fftSize {
                let tap = partition * block + index
                frame[index] = index < block && tap < impulseResponse.count ? impulseResponse[tap] : 0
            }
            let row = (partition * bins)..<((partition + 1) * bins)
            fft.forward(UnsafeBufferPointer(frame), binsReal: UnsafeMutableBufferPointer(rebasing: responseReal[row]),
                        binsImaginary: UnsafeMutableBufferPointer(rebasing: responseImaginary[row]))
        }
        frame.update(repeating: 0)
    }

    /// Adds the echo of everything played so far, this block included, to `mic`.
    func process(played: UnsafeBufferPointer<Float>, addingTo mic: UnsafeMutableBufferPointer<Float>) {
        let block = Self.blockFrames, bins = Self.bins
        // The last two blocks played, transformed into the newest row.
        for index in 0..<block {
            frame[index] = frame[block + index]
            frame[block + index] = played[index]
        }
        newest = (newest + partitions - 1) % partitions
        let row = (newest * bins)..<((newest + 1) * bins)
        fft.forward(UnsafeBufferPointer(frame), binsReal: UnsafeMutableBufferPointer(rebasing: playedReal[row]),
                    binsImaginary: UnsafeMutableBufferPointer(rebasing: playedImaginary[row]))
        sumReal.update(repeating: 0)
        sumImaginary.update(repeating: 0)
        for partition in 0..<partitions {
            let x = ((newest + partition) % partitions) * bins, h = partition * bins
            for bin in 0..<bins {
                let xr = playedReal[x + bin], xi = playedImaginary[x + bin], hr = responseReal[h + bin], hi = responseImaginary[h + bin]
                sumReal[bin] += xr * hr - xi * hi
                sumImaginary[bin] += xr * hi + xi * hr
            }
        }
        fft.inverse(binsReal: UnsafeBufferPointer(sumReal), binsImaginary: UnsafeBufferPointer(sumImaginary), signal: echo)
        // Overlap-save: the second half is this block's echo.
        for index in 0..<block { mic[index] += echo[block + index] }
    }
}
