import AudioCore

/// The microphone's way to the other talkers, one 10 ms frame at a time at
/// 16 kHz: echo cancellation against what was played, noise suppression,
/// a DC blocker, gain control and the mute gate, with voice-activity
/// detection alongside.
///
/// The detector listens to the echo-cancelled signal, before residual
/// suppression and denoising, whose noise is the room's own, and weighs it
/// against the echo the canceller expects to have left in it; its decision
/// does not depend on level, and the gain uses it to follow only the talker. Muting silences the
/// uplink and nothing else, so the detector keeps telling a muted user
/// that they are talking.
public final class UplinkChain {
    /// The chain's rate, in Hz: 16 kHz.
    public static let sampleRate = 16_000
    /// Samples in one frame: 10 ms at 16 kHz.
    public static let frameSize = 160
    /// One frame's length, in seconds: 0.01.
    public static var frameSeconds: Double { Double(frameSize) / Double(sampleRate) }

    /// What one frame did besides its audio.
    public struct Frame: Sendable, Equatable {
        /// The detector heard the local talker (after echo cancellation).
        public var speech: Bool
        /// Frames before this one that an onset also turned to speech.
        public var backfilled: Int
        /// Whether the frame started or ended a muted user's burst of speech, if it did either.
        public var mutedTalker: MutedTalkerDetector.Change?
    }

    /// Whether the uplink is muted: its frames become silence while detection goes on.
    @exclusivity(unchecked) public var muted = false
    /// Whether the canceller runs. It can be switched while the chain runs:
    /// switched on, it learns the echo path again.
    @exclusivity(unchecked) public var cancelsEcho: Bool
    private let canceller = EchoCanceller()
    private let noiseSuppressor: NoiseSuppressor
    private let detector: VoiceActivityDetector
    @exclusivity(unchecked) private var dcBlocker = DCBlocker(sampleRate: UplinkChain.sampleRate)
    @exclusivity(unchecked) private var gain: GainControl
    @exclusivity(unchecked) private var mutedTalker: MutedTalkerDetector
    /// The detector's own decision on the last frame, and whether its
    /// burst began where the talker could be told from the echo.
    @exclusivity(unchecked) private var detectorSpeaking = false
    @exclusivity(unchecked) private var burstIsTalker = false
    /// Frames of the detector's burst before this one, and how many it claimed before its onset.
    @exclusivity(unchecked) private var framesIntoBurst = 0
    @exclusivity(unchecked) private var onsetBackfilled = 0
    /// The detector's burst, while it lasts, began within 2 s of the talker's last counted burst.
    @exclusivity(unchecked) private var burstBeganLately = false
    /// Frames since the detector last spoke in a burst counted as the
    /// talker's; a burst within `talkerCarriesFrames` (2 s) of it is theirs
    /// to the echo suppressor.
    @exclusivity(unchecked) private var framesSinceTalker = UplinkChain.talkerCarriesFrames
    static let talkerCarriesFrames = 200
    /// A burst counted as the talker's came within the last 2 s.
    private var talkerSpokeLately: Bool { framesSinceTalker < Self.talkerCarriesFrames }

    /// A chain that starts with echo cancellation on or off. Throws when SpeexDSP cannot make the
    /// noise suppressor.
    public init(echoCancellation: Bool) throws {
        cancelsEcho = echoCancellation
        noiseSuppressor = try NoiseSuppressor(frameSize: Self.frameSize, sampleRate: Self.sampleRate)
        detector = VoiceActivityDetector()
        gain = GainControl(frameSize: Self.frameSize, sampleRate: Self.sampleRate)
        mutedTalker = MutedTalkerDetector(frameSeconds: Self.frameSeconds)
    }

    /// Processes one frame: `frame` holds the microphone and becomes the
    /// uplink; `reference` is what the output played over the same 10 ms.
    /// Samples that are not finite are taken as silence.
    public func process(_ frame: UnsafeMutableBufferPointer<Float>, reference: UnsafeBufferPointer<Float>) -> Frame {
        precondition(frame.count == Self.frameSize && reference.count == Self.frameSize, "one 10 ms frame at 16 kHz")
        for index in frame.indices where !frame[index].isFinite { frame[index] = 0 }
        let echoCanceller = cancelsEcho ? canceller : nil
        echoCanceller?.filter(frame, reference: reference)
        // The burst the detector still hears, taken for a talker, was the
        // echo of a path that has moved: neither it nor the 2 s after it
        // are theirs.
        if echoCanceller?.echoPathMoved == true && detectorSpeaking {
            burstIsTalker = false
            burstBeganLately = false
            framesSinceTalker = Self.talkerCarriesFrames
        }
        // The detector hears the canceller's output before its residual
        // suppression, which silences the room's noise too while the far
        // end plays: a floor that comes and goes would sound like speech.
        // It weighs the output against the echo the canceller expects to
        // have left, held through the reverberant tail of what the filter
        // missed, so that a far end's voice starts no speech of its own;
        // but within 2 s of the talker's last burst, over a filter that has
        // settled, against this block's echo alone: the held tail masks the
        // talker's quieter syllables under a game's echo and a room of
        // other voices. Told so, the detector starts their next words on
        // fewer frames under the echo than a far end's own bursts need.
        let talkerLately = talkerSpokeLately && canceller.hasSettled
        var decision = echoCanceller?.withLinearOutput(heldThroughReverberation: !talkerLately) { output, residualEcho in
            detector.process(output, residualEcho: residualEcho, talkerSpokeLately: talkerLately)
        } ?? detector.process(UnsafeBufferPointer(frame))
        // While the far end's echo may be arriving, a burst of speech
        // counts once the canceller has learnt the echo path and its output
        // holds clearly more than a converged filter leaves of the echo it
        // predicts, on a frame that itself sounds like speech: what the
        // detector holds on to from the echo may be the far end's voice.
        // The output, not the microphone: a game's echo is often louder
        // than the player, who must still be heard over it. Within 2 s of
        // the talker's last burst, an output that holds a tenth of the echo
        // and hardly follows its estimate counts too: their next words
        // start under a game's echo well before they reach a quarter of it.
        // A burst that began within those 2 s keeps this test for up to
        // 2 s into it: a far end's onset can start the burst before the
        // talker's words, which then come after the 2 s have run out.
        if decision.speech && !detectorSpeaking {
            burstBeganLately = talkerSpokeLately
        }
        if decision.speech, let echoCanceller {
            let withinTalkersWindow = talkerSpokeLately
                || (detectorSpeaking && burstBeganLately && framesIntoBurst < Self.talkerCarriesFrames)
            let distinguishable = !echoCanceller.farEndActive
                || (echoCanceller.hasConverged
                    && (echoCanceller.nearEndAudible || (withinTalkersWindow && echoCanceller.nearEndApartFromEcho)))
            if !detectorSpeaking {
                burstIsTalker = distinguishable
                framesIntoBurst = 0
                onsetBackfilled = decision.backfilled
            } else if !burstIsTalker && decision.evident && distinguishable {
                burstIsTalker = true
                // The burst's frames just before, still unreleased, are the talker's too.
                decision.backfilled = min(framesIntoBurst + onsetBackfilled, VoiceActivityDetector.lookBack)
            }
            framesIntoBurst += 1
        }
        detectorSpeaking = decision.speech
        if echoCanceller != nil && !burstIsTalker {
            decision = VoiceActivityDetector.Decision(speech: false, backfilled: 0)
        }
        // Residual suppression takes all the filter left for echo where the
        // detector itself hears nobody, and where it hears a burst the gate
        // has not counted while the output holds no more than echo: the
        // echo's own bursts, which would otherwise pass. A burst soon after
        // the talker's is taken as theirs: the quiet start of a word would
        // be cut before their voice rises above the echo. So is a pause
        // soon after it, over a settled filter: the detector misses the
        // quieter syllables between their words. The canceller is told which
        // bursts the gate counted: it spares those more of their voice.
        framesSinceTalker = detectorSpeaking && burstIsTalker ? 0 : min(framesSinceTalker + 1, Self.talkerCarriesFrames)
        let nearEnd: EchoCanceller.NearEnd = !detectorSpeaking ? (talkerSpokeLately && canceller.hasSettled ? .pausing : .silent)
            : burstIsTalker ? .toldApart : talkerSpokeLately ? .talking : .unconfirmed
        echoCanceller?.suppress(frame, nearEnd: nearEnd)
        noiseSuppressor.process(frame)
        // The canceller cannot predict a microphone's DC offset and the noise suppressor leaves a quarter of it.
        // Taken out here rather than at the input, where it moved the canceller's and detector's decisions.
        dcBlocker.process(frame)
        gain.process(frame, speech: decision.speech)
        let change = mutedTalker.update(speech: decision.speech, muted: muted)
        if muted { frame.update(repeating: 0) }
        return Frame(speech: decision.speech, backfilled: decision.backfilled, mutedTalker: change)
    }
}
