import Scene

extension EchoCancellationMode {
    /// What the mode comes to for a microphone and an output, and why.
    ///
    /// - Parameters:
    ///   - microphoneIsCapture: the microphone is a capture device in the
    ///     room the output plays into, rather than a file or a generator.
    ///   - outputIsPlayback: the output reaches a loudspeaker or headset,
    ///     rather than a file.
    public func resolve(microphoneIsCapture: Bool, outputIsPlayback: Bool) -> (on: Bool, reason: String) {
        switch self {
        case .on: return (true, "aec: on")
        case .off: return (false, "aec: off")
        case .auto:
            if !microphoneIsCapture { return (false, "auto: the microphone is not a capture device, so it cannot hear the output") }
            if !outputIsPlayback { return (false, "auto: the output is not a playback device, so nothing plays to echo") }
            return (true, "auto: a capture device hears a playback device")
        }
    }
}
