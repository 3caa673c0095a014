import AudioCore

/// Channel conventions of first-order ambisonics.
public enum AmbisonicFormat {
    /// Converts AmbiX (ACN order W Y Z X, SN3D) to the FuMa layout that
    /// AL_EXT_BFORMAT expects (W X Y Z, with W at -3 dB).
    public static func fuMa(fromAmbiX ambiX: AudioBuffer) -> AudioBuffer {
        precondition(ambiX.channelCount == 4, "first-order ambisonics has 4 channels")
        let wScale = Float(1 / 2.0.squareRoot())
        var fuMa = AudioBuffer(channelCount: 4, frameCount: ambiX.frameCount)
        for frame in 0..<ambiX.frameCount {
            fuMa[frame, 0] = ambiX[frame, 0] * wScale
            fuMa[frame, 1] = ambiX[frame, 3]
            fuMa[frame, 2] = ambiX[frame, 1]
            fuMa[frame, 3] = ambiX[frame, 2]
        }
        return fuMa
    }
}
