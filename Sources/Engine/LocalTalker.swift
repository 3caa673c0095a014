import Voice

/// What the uplink tells the room of the local talker, frame by frame:
/// their speech as the room hears it, which is only while unmuted, and the
/// muted-talker events.
struct LocalTalker {
    private(set) var speaking = false

    /// Takes one uplink frame that starts at `frame` on the room's
    /// timeline, and reports the events it makes.
    mutating func hear(_ result: UplinkChain.Frame, muted: Bool, at frame: Int, report: (EngineEvent) -> Void) {
        let heard = result.speech && !muted
        if heard != speaking {
            speaking = heard
            report(EngineEvent(frame: frame, kind: heard ? .speechStarted(talker: "local") : .speechEnded(talker: "local")))
        }
        switch result.mutedTalker {
        case .started?: report(EngineEvent(frame: frame, kind: .mutedSpeechStarted))
        case .ended?: report(EngineEvent(frame: frame, kind: .mutedSpeechEnded))
        case nil: break
        }
    }
}
