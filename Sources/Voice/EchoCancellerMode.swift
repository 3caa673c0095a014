/// Whether the uplink cancels echo: `auto` turns it on only when there is
/// an acoustic path to cancel, a capture device hearing a playback device.
public enum EchoCancellerMode: String, Sendable, CaseIterable {
    case off, on, auto

    /// The decision and why, for the log.
    public func resolve(micIsCaptureDevice: Bool, outputIsPlaybackDevice: Bool) -> (enabled: Bool, reason: String) {
        switch self {
        case .on: return (true, "aec on: requested")
        case .off: return (false, "aec off: requested")
        case .auto:
            if !micIsCaptureDevice { return (false, "aec auto -> off: the microphone is not a capture device") }
            if !outputIsPlaybackDevice { return (false, "aec auto -> off: the output is not a playback device") }
            return (true, "aec auto -> on: a capture device hears a playback device")
        }
    }
}
