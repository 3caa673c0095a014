import AudioCore

#if canImport(Glibc)
import Glibc
#endif

/// Voice-activity detection at 16 kHz in 10 ms frames.
///
/// Three measures, each for what the others miss:
/// - a likelihood ratio of speech against noise over 21 bands from 100 Hz to
///   8 kHz (Sohn's, with a decision-directed a-priori SNR), against a noise
///   floor tracked per band only while the frame looks like noise, plus the
///   echo a canceller says it left: what a canceller leaves of a game's
///   sound comes and goes with the game, and against the floor alone it
///   would hold the detector in speech from one word to the next;
/// - periodicity, the normalised cross-correlation peak between 60 and
///   400 Hz of the signal band-passed to 200 Hz - 1 kHz (which keeps mains
///   hum out), for voiced speech under noise;
/// - a time-domain crest factor that marks keyboard clicks, which are
///   loud and, behind a high-pass, ring as if periodic. A frame with a
///   click does not keep speech going, and one that may hold a click does
///   not start it unless it is clearly voiced: on recorded speech in noise,
///   nine voiced frames in ten stay under a crest of 3.6 while half of all
///   clicks exceed 4.8. A word's first frame, quiet and then loud, can
///   reach 4 or more; it is claimed back when the next frame starts the burst.
///
/// - the background's own rise and fall: where the frames that are not
///   speech spread as a room of other talkers does (their 25th percentile
///   level over 5 s more than 2.5 dB above their 5th, until it falls back
///   to 2 dB), the floor follows the other talkers' lulls and their
///   words stand out of it, so a frame must also stand 12 dB above the
///   25th percentile to start speech, or 2.5 spreads where they are
///   wider, and half as far to hold it: the room's own words seldom rise
///   further. Three frames in a row within 6 dB of the level the talker's
///   own words reach start speech at a bar 4 dB lower, and frames within
///   8 dB of it hold speech, while that level clears the full bar: the near
///   talker is louder than any one voice of the room. The mean level of
///   the last 100 ms, more than 10.5 dB above the 25th percentile (1.5
///   spreads where wider), starts speech too, unless the frame is 3 dB or
///   more under it, as in a word's decay: over 100 ms a room of many
///   voices averages out more than one voice does. Once speech has
///   started, that mean more than 4 dB above the percentile (1.25 spreads
///   where wider) holds it, on the same condition, and within 12 dB of
///   the talker's level once that is learnt (before, the room's own
///   100 ms may hold speech that its words started).
///   Steady noise and a far end's echo leave this out; so does a
///   detector given no residual echo, which cannot tell the far end's
///   echo from the room. A detector that has
///   called every echo-free frame speech for 3 s is hearing the room, not
///   one talker, who pauses sooner: those frames count toward the
///   background too, or a room already talking as it starts would hold it
///   in speech for good. Until the background holds 200 frames it is
///   judged by how far its loud frames rise instead (90th percentile more
///   than 3 dB over the 25th, from its 20th frame), which tells a room
///   from steady noise sooner than its lulls do; once that says voices, it
///   says so until the background holds 200 frames, and meanwhile every
///   echo-free frame counts toward it. While it is young, a frame that
///   holds a click does not count: typing's clicks rise far, and counted,
///   they made typing a room of voices, whose bar held back a talker's
///   first words.
///
/// Speech starts on two voiced frames of three, four strong frames in a
/// row (two that hold no transient once the background is 2 s old, three
/// where a canceller's residual echo keeps the frame out of it and the
/// talker has not spoken in the last 2 s, or where some are active frames
/// 3 dB over a steady noise's typical level), or one
/// strong frame soon after the last word, if it holds no
/// transient or the sound around it lasts longer than a keystroke; it
/// holds for a hangover that grows as the SNR falls. An onset also claims
/// the two frames before it, so a decision is final two frames (20 ms) later.
public final class VoiceActivityDetector {
    /// Samples in one frame: 10 ms at 16 kHz.
    public static let frameSize = 160
    /// Frames at the start taken as noise, to learn its floor.
    static let learningFrames = 20
    static let analysisSize = 320
    static let fftSize = 512
    static let bandEdges = [3, 6, 10, 13, 16, 20, 25, 29, 35, 41, 47, 55, 64, 74, 86, 101, 118, 141, 170, 205, 246, 256]
    static let noiseFloor = 1e-11
    /// The floor rises slowly, so that a talker's words do not lift it; but a steady noise that sets in
    /// (a fan switched on, a stream's noise after digital silence) would then be speech for as long as it
    /// took to rise: 14 s for white noise 30 dB over the room's, for good over digital silence. A band
    /// whose background stood more than `floorStep` (6 dB) above its floor through every frame of the last
    /// 3 s (six windows of half a second, and the current one) takes twice that least level as its floor:
    /// a talker's words leave gaps sooner, and a noise's least frame lies under its mean (lifted to the
    /// least alone, the floor let the noise reopen speech until 4.1 s after it set in). Over the
    /// corpus's voice-activity cases, seeds 1 to 7, no F1 moved by more than 0.005; over 1.5 s, talkers'
    /// bursts under a game's echo were lost (`echo_game_enr6dB` F1 0.853 -> 0.837, bursts 79 -> 77).
    static let floorWindowFrames = 50, floorWindows = 6
    static let floorStep = 4.0, liftOverLeast = 2.0
    // Periodicity: 30 ms at 8 kHz, lags of 60 to 400 Hz.
    static let correlationWindow = 240
    static let shortestLag = 20, longestLag = 133
    /// A 4th-order Butterworth high-pass at 200 Hz and a 2nd-order low-pass at 1 kHz, at 16 kHz: b0 b1 b2 a1 a2.
    static let bandPass: [(Double, Double, Double, Double, Double)] = [
        (0.9024444568629442, -1.8048889137258883, 0.9024444568629442, -1.8590762659582096, 0.8648248987672625),
        (1.0, -2.0, 1.0, -1.9357148371211979, 0.9417004516037268),
        (0.029954582208092474, 0.05990916441618495, 0.029954582208092474, -1.454243586251585, 0.5740619150839549),
    ]
    // Decisions.
    static let activeRatio = 0.25, strongRatio = 0.6, voicedPeriodicity: Float = 0.5, activePeriodicity: Float = 0.65
    static let clickCrest = 4.5, onsetCrest = 3.5
    /// Periodic enough that a transient in the frame is the start of a voiced sound, not a key's thump.
    static let clearlyVoiced: Float = 0.8
    static let reopenFrames = 30
    // Residual echo: shares of a band's power, and of the frame's.
    static let floorEchoShare = 0.25, periodicEchoShare = 0.3
    /// Longer than a key's two clicks and their ring, in frames: sound this sustained is not typing.
    static let keyFrames = 4
    /// Strong frames in a row, none with a transient, that start speech once the background is no
    /// longer young, or in a frame whose residual echo keeps it out of the background; before, and with
    /// transients, it takes four. Under a game's echo the background seldom counts a frame and stays
    /// young for good: the corpus's game-echo cases, seeds 1 to 7, waited for a fourth frame
    /// throughout. A word's first syllable often has three before the fourth: over the corpus's white
    /// noise at 0 dB SNR, seeds 1 to 7, the median onsets were 10 to 25 ms with four, 10 to 15 with
    /// three (babble at 10 dB: two seeds 25 and 30 -> 20 ms), and two where no echo hides the room: over
    /// the corpus's voice-activity cases, seeds 1 to 7, 63 median onsets came 5 to 10 ms earlier (white
    /// noise at 20 dB 5-10 -> -5-5 ms, keyboard at 5 dB 10 -> 0-10), one spurious onset fewer in all, no
    /// F1 down by more than 0.001; only babble at 5 dB, whose bursts are mostly found on their second
    /// syllable, found a different set in two seeds, with later medians (50 -> 95, 40 -> 95 ms). Over a
    /// young background a room that began to talk at 0.2 s started speech on three frames before it
    /// could be judged, and held it 3.6 s (`babble_10dB`, seed 5).
    static let steadyFramesToStart = 2
    /// The same where the canceller's residual echo keeps the frame out of the background, unless the
    /// talker spoke in the last 2 s. With two throughout, a player's words under a game's echo started
    /// 10 ms sooner, but so did bursts of a speech far end's own echo, which the gate then took for a
    /// talker's and the suppressor spared: the corpus's `abl_linear`, seed 6, went from 69.6 to 25.2 dB
    /// after 2 s, `st_speech`, seed 5, from 70.0 to 54.7. With two only after the talker's words, no
    /// ERLE moved by more than 0.07 dB, and under game echo, seeds 1 to 7, median onsets went from
    /// 10-40 to 10-30 ms at 0 dB and 20-100 to 20-90 at 6 dB, with one burst more and as many spurious
    /// onsets (8).
    static let steadyFramesToStartOverEcho = 3
    /// Frames in a row that start speech where some of them are only active and risen over steady noise
    /// (`overSteadyNoise`), not strong: a mains hum's swells rise that far for two frames, and two would
    /// start speech on them (three spurious onsets over the synthetic corpus's hum).
    static let risenFramesToStart = 3
    /// How far above the 25th percentile level of a background of steady noise, in dB, an active frame
    /// stands to count toward `risenFramesToStart` as a strong one does: twice the noise's typical power,
    /// so that the frame holds a sound at least as loud as the noise. A word's first syllable at 0 dB SNR
    /// may stand there for 100 ms without being strong: over the corpus's pink noise at 0 dB, seeds 1 to
    /// 7, median onsets were 25 to 45 ms in four seeds, now 10 to 20 in all seven, with no spurious onset
    /// and no other voice-activity case moved by more than 0.001 F1 (1.5 and 2 dB gave the same).
    static let overSteadyNoise = 3.0
    static let lookBack = 2
    // A background that rises and falls as voices do.
    /// How far its 25th percentile frame stands above its 5th, in dB, past which it counts as voices:
    /// steady noise (white, pink, a fan, typing between keys) keeps within 1.5 dB, a room of talkers 3.5 to 5.
    static let voicesSpread = 2.5
    /// How far the spread of a background heard as voices must fall, in dB, before it counts as steady
    /// noise again. The spread moves in half-decibel steps, so a room of voices stays one while it sits
    /// at 2.5 dB. One corpus room of seven talkers sat there for 6 s: judged against 2.5 alone, it went
    /// in and out of being voices, and each time out its words started speech, which kept them out of
    /// the background and its spread where it was.
    static let steadyAgainSpread = 2.0
    /// How far above the background's 25th percentile level, in dB, a frame must stand to start speech
    /// there, at least; half as far holds speech that has started. The frames of a room of seven talkers
    /// (spreads of 3.5 to 5 dB) rise 6 to 7 dB above that level one time in 20 and 8 to 9 dB one in 100,
    /// whether it is 20 or 0 dB under the talker; four spreads above the 5th percentile set the bar at 14
    /// to 20 dB, above half the words of a talker 10 dB over the room.
    static let aboveVoicesToStart = 12.0
    /// The bar in spreads, where that is higher: two or three talkers rise and fall further (spreads of
    /// 7.5 to 13 dB), and 12 dB alone let their own words start speech 10 to 30 times a minute.
    static let spreadsAboveVoicesToStart = 2.5
    /// A frame with more residual echo than this share of its power says nothing of the room's own
    /// background; it does not count, and the background is not judged until 5 s have passed without one.
    /// Without a canceller's word on the echo, a far end the microphone hears could be that background,
    /// and it is never judged.
    static let echoShareOfBackground = 0.05
    /// Echo-free frames in a row called speech past which they count toward the background: 3 s.
    static let longestTalk = 300
    /// Frames the background holds, 2 s, before its lulls say whether it is a room of voices. Over its first
    /// 55 frames a corpus room of seven talkers (seed 1, 20 dB) spread only 2 dB, as steady noise may, so it
    /// was judged steady, its words started speech from 0.5 s on, and they stayed out of the background
    /// for 3 s; in every babble case of the corpus that start was a spurious onset.
    static let youngBackground = 200
    /// How far above a young background's 25th percentile its 90th must stand (more than this), in dB, once
    /// it holds 20 frames, for it to count as voices until it holds `youngBackground`: that room's words
    /// rise from the start (3.5 to 5.5 dB in its first half-second, and the reverberant rooms of the echo
    /// cases 3.5 to 4.5 at some point of it), while the corpus's white and pink noise stay within 2. Judged
    /// afresh on each frame, two of those rooms fell back to 3 and 2.5 dB, were taken for steady noise and
    /// started speech.
    static let voicesRise = 3.0
    /// Frames at the start that do not count toward the background. The first's analysis window is half
    /// empty: it stood 10 dB under a corpus room and alone set the spread of the first 20 frames. With the
    /// first alone left out, three babble cases of seeds 1 to 7 scored 0.005 to 0.07 lower in F1 (not traced).
    static let unsettledFrames = 2
    /// How much lower the bar to start speech over a room of voices is, in dB, for frames that come
    /// within `nearTalkerReach` of the level the talker's own words reach, three in a row. The near
    /// talker is louder than any one voice of the room, and the first syllables of their words are
    /// heard before they clear the full bar: over corpus babble 10 dB under them, the bar alone
    /// started their bursts up to 120 ms late.
    static let nearTalkerRelief = 4.0
    static let nearTalkerReach = 6.0
    static let nearTalkerFrames = 3
    /// How far under the talker's level, in dB, a frame still holds speech over a room of voices, where
    /// that is under half the bar: a talker barely over the room (5 dB, in the corpus) has quieter
    /// syllables that half the bar let go, and the room's own words hold nothing that has not started.
    static let nearTalkerHold = 8.0
    /// How fast the talker's level follows their frames that clear the full bar, per frame.
    static let talkerLevelSmoothing = 0.02
    /// From a burst's fifth frame that clears the full bar on, its frames count toward the talker's
    /// level: a room's own word that starts speech seldom clears it that often. Learnt from a burst's
    /// first such frame, the voice tests' room of seven set it with a word of its own, and the lower
    /// bar then started speech on its words three times where the full bar had once.
    static let clearFramesBeforeTalkerLevel = 5
    /// A syllable's span, in frames: over 100 ms a room of many voices averages out further than the
    /// talker's sustained voice does. In four corpus rooms of seven talkers, the loudest 10 ms frame in a
    /// thousand stood 10.1 to 10.5 dB above the room's 25th percentile, the loudest 100 ms 7.2 to 8.3 dB.
    static let syllableFrames = 10
    /// How far above the background's 25th percentile, in dB, a syllable's mean level must stand to start
    /// speech over a room of voices, at least: 1.5 dB under a frame's bar.
    static let syllableAboveVoicesToStart = 10.5
    /// The syllable's bar in spreads, where that is higher. Two or three talkers average out little over
    /// 100 ms; at 10.5 dB alone, the voice tests' room of three started speech 21 times.
    static let spreadsAboveVoicesForSyllable = 1.5
    /// How far under the syllable's mean, in dB, the frame itself may be: a word's decay keeps the mean up
    /// for 100 ms after it ends, and without this the syllable reopened speech on the room that followed
    /// (`babble_20dB`, seeds 1 to 7: mean F1 0.891 -> 0.881).
    static let syllableDecay = 3.0
    /// How far above the background's 25th percentile, in dB, a syllable's mean level holds speech over a
    /// room of voices, at least, as long as it comes within `syllableHoldReach` of the talker's level. A
    /// talker 5 dB over the room has quieter syllables than a frame's bar to hold lets through; the room's
    /// own 100 ms rise this far often enough, but only speech that has started is held.
    static let syllableAboveVoicesToHold = 4.0
    /// The hold's bar in spreads, where that is higher: at 4 dB alone the voice tests' reverberant room of
    /// seven, wider in spread than the corpus's, held speech through 36% of itself.
    static let spreadsAboveVoicesToHold = 1.25
    /// Over a room far under the talker, the syllable must come this near their level, in dB, to hold.
    static let syllableHoldReach = 12.0

    /// One frame's decision: whether it is speech, and how many frames
    /// before it an onset turned to speech as well.
    public struct Decision: Sendable, Equatable {
        /// The frame counts as speech, whether heard in it or held by the hangover.
        public var speech: Bool
        /// How many frames just before this one, 0 to 2, an onset also turned to speech.
        public var backfilled: Int
        /// The frame itself sounds like speech, rather than being held by the hangover.
        public var evident = false

        /// A decision as given; `evident` is false unless said.
        public init(speech: Bool, backfilled: Int, evident: Bool = false) {
            self.speech = speech
            self.backfilled = backfilled
            self.evident = evident
        }
    }

    private let fft = RealFFT(size: fftSize)
    private let window: [Float]
    @exclusivity(unchecked) private var recent = [Float](repeating: 0, count: analysisSize)
    @exclusivity(unchecked) private var padded = [Float](repeating: 0, count: fftSize)
    @exclusivity(unchecked) private var binsReal = [Float](repeating: 0, count: fftSize / 2 + 1)
    @exclusivity(unchecked) private var binsImaginary = [Float](repeating: 0, count: fftSize / 2 + 1)
    @exclusivity(unchecked) private var bandPower = [Double](repeating: 0, count: 21)
    @exclusivity(unchecked) private var noise = [Double](repeating: 0, count: 21)
    /// The residual echo over each band, for this frame.
    @exclusivity(unchecked) private var bandEcho = [Double](repeating: 0, count: 21)
    @exclusivity(unchecked) private var smoothedPower = [Double](repeating: 0, count: 21)
    /// Per band, the least background beyond the echo over the current half-second.
    @exclusivity(unchecked) private var windowMinimum = [Double](repeating: .infinity, count: 21)
    /// The same over each of the `floorWindows` half-seconds before it, band by band, oldest overwritten
    /// first; 0 until each has passed, so that nothing lifts the floor in its first 3 s.
    @exclusivity(unchecked) private var pastMinima = [Double](repeating: 0, count: 21 * floorWindows)
    @exclusivity(unchecked) private var speechEstimate = [Double](repeating: 0, count: 21)
    @exclusivity(unchecked) private var filterState = [(Double, Double)](repeating: (0, 0), count: 3)
    @exclusivity(unchecked) private var periodicBuffer = [Float](repeating: 0, count: correlationWindow + longestLag)
    @exclusivity(unchecked) private var frames = 0
    /// The levels of the last echo-free frames that were not speech, or that came 3 s into frames that all were,
    /// or any while it is young and heard as voices; never the first two, nor one with a click while it is young.
    @exclusivity(unchecked) private var background = BackgroundLevels()
    @exclusivity(unchecked) private var framesWithoutEcho = BackgroundLevels.frames
    /// Echo-free frames called speech in a row (those of a young background heard as voices count toward it
    /// meanwhile).
    @exclusivity(unchecked) private var talkWithoutBackground = 0
    /// The background holds fewer than `youngBackground` frames: too few for its lulls to say what it is.
    private var backgroundIsYoung: Bool { background.count < Self.youngBackground }
    /// The background has spread as voices do, and not yet fallen back to steady noise's spread; or, while it
    /// is young, its loud frames have risen as voices do.
    @exclusivity(unchecked) private var backgroundIsVoices = false
    /// The level in dB of the talker's frames that cleared the full bar over a room of voices, well
    /// into a burst; nil until one has. Only those count: before the room is judged, its own words may
    /// be speech.
    @exclusivity(unchecked) private var talkerLevel: Double?
    /// Frames in a row that came near the talker's level over a room of voices, not far under the full
    /// bar; only outside speech do they start it.
    @exclusivity(unchecked) private var nearTalkerRun = 0
    /// Frames of the current burst that cleared the full bar over a room of voices.
    @exclusivity(unchecked) private var clearFramesInBurst = 0
    /// The powers of the last `syllableFrames` frames beyond the echo, oldest overwritten first.
    @exclusivity(unchecked) private var syllablePowers = [Double](repeating: 0, count: syllableFrames)

    // Decision state.
    @exclusivity(unchecked) private var speaking = false
    @exclusivity(unchecked) private var hangover = 0
    @exclusivity(unchecked) private var hangoverLength = 20
    @exclusivity(unchecked) private var peakSNR = 0.0
    @exclusivity(unchecked) private var framesSinceOffset = Int.max / 2
    @exclusivity(unchecked) private var strongRun = 0
    /// Frames in a row as strong as speech that hold no transient (or are clearly voiced).
    @exclusivity(unchecked) private var steadyRun = 0
    /// Frames in a row that are steady, or active and risen out of steady noise.
    @exclusivity(unchecked) private var risenRun = 0
    /// Frames in a row as strong as speech, transients or not.
    @exclusivity(unchecked) private var loudRun = 0
    // Made at run time: an array literal lives in read-only storage, and
    // the first write would copy it on the real-time path.
    @exclusivity(unchecked) private var voicedHistory = [Bool](repeating: false, count: 2)
    @exclusivity(unchecked) private var previousDecisions = [Bool](repeating: false, count: 2)

    /// A detector that learns the noise floor from its first 20 frames (200 ms),
    /// deciding no speech meanwhile.
    public init() {
        window = (0..<Self.analysisSize).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0 + 1) / Double(Self.analysisSize + 1))) }
    }

    /// Decides one frame of `frameSize` samples (10 ms at 16 kHz); samples that are
    /// not finite count as silence. `residualEcho` is what an echo canceller
    /// expects to have left of the far end's echo in the frame, as
    /// `EchoCanceller.withLinearOutput` gives it: a power spectrum of 161
    /// bins over 0-8 kHz of the frame's last 20 ms under a Hann window.
    /// `talkerSpokeLately` says the caller counted a burst of the local talker
    /// within the last 2 s: under the residual echo, their next words then
    /// start on as few steady frames as where no echo hides the room.
    public func process(_ frame: UnsafeBufferPointer<Float>, residualEcho: UnsafeBufferPointer<Float>? = nil,
                        talkerSpokeLately: Bool = false) -> Decision {
        precondition(frame.count == Self.frameSize, "one 10 ms frame at 16 kHz")
        let hop = Self.frameSize
        for index in 0..<(Self.analysisSize - hop) { recent[index] = recent[index + hop] }
        for index in 0..<hop { recent[Self.analysisSize - hop + index] = frame[index].isFinite ? frame[index] : 0 }

        let (likelihood, snr, echoShare, level) = bandLikelihood(residualEcho: residualEcho)
        // Measured on every frame, so its filter and history stay whole; but
        // where the echo the canceller left makes up much of the frame, its
        // periodicity may be the far end's: music and voices are periodic too.
        let measured = self.periodicity(frame)
        let periodicity = echoShare > Self.periodicEchoShare ? 0 : measured
        // In a room of other talkers the floor follows their lulls and every
        // word of theirs stands out of it; only what stands above their own
        // rise and fall is the talker's.
        let (lull, typical) = background.percentiles()
        let spread = typical - lull
        // The canceller's residual echo makes up too much of the frame for it to count toward the background.
        let echoHidesRoom = residualEcho != nil && echoShare > Self.echoShareOfBackground
        framesWithoutEcho = residualEcho == nil || echoHidesRoom ? 0 : framesWithoutEcho + 1
        let young = backgroundIsYoung
        if young {
            // Its lulls say too little yet; how far its loud frames rise says voices, for good while it is young.
            // From as many frames as the floor is learnt over.
            if background.count >= Self.learningFrames && background.level(atPercent: 90) - typical > Self.voicesRise {
                backgroundIsVoices = true
            }
        } else if spread > Self.voicesSpread {
            backgroundIsVoices = true
        } else if spread <= Self.steadyAgainSpread {
            backgroundIsVoices = false
        }
        let gateOff = !backgroundIsVoices || framesWithoutEcho < BackgroundLevels.frames
        let startBar = max(Self.aboveVoicesToStart, Self.spreadsAboveVoicesToStart * spread)
        // The talker's level counts only while it still clears the full bar: a room grown louder since may reach it.
        let talker = talkerLevel.flatMap { $0 > typical + startBar ? $0 : nil }
        let nearTalker = talker.map { level > $0 - Self.nearTalkerReach } ?? false
        nearTalkerRun = nearTalker && level > typical + startBar - Self.nearTalkerRelief ? nearTalkerRun + 1 : 0
        let holdBar = min(typical + startBar / 2, (talker ?? .infinity) - Self.nearTalkerHold)
        syllablePowers[frames % Self.syllableFrames] = pow(10, level / 10)
        var syllablePower = 0.0
        for power in syllablePowers { syllablePower += power }
        let syllable = 10 * log10(syllablePower / Double(Self.syllableFrames))
        let syllableBar = max(Self.syllableAboveVoicesToStart, Self.spreadsAboveVoicesForSyllable * spread)
        let sustained = level > syllable - Self.syllableDecay
        let syllableStarts = sustained && syllable > typical + syllableBar
        let syllableHoldBar = max(Self.syllableAboveVoicesToHold, Self.spreadsAboveVoicesToHold * spread)
        let syllableHolds = sustained && syllable > max(typical + syllableHoldBar, (talker ?? -.infinity) - Self.syllableHoldReach)
        let aboveVoices = gateOff || level > (speaking ? holdBar : typical + startBar)
            || (speaking ? syllableHolds : nearTalkerRun >= Self.nearTalkerFrames || syllableStarts)
        if !speaking { clearFramesInBurst = 0 }
        if !gateOff && speaking && level > typical + startBar {
            clearFramesInBurst += 1
            if clearFramesInBurst >= Self.clearFramesBeforeTalkerLevel {
                talkerLevel = talkerLevel.map { $0 + Self.talkerLevelSmoothing * (level - $0) } ?? level
            }
        }
        let frameCrest = crest()
        let overSteadyNoise = !backgroundIsVoices && !young && level > typical + Self.overSteadyNoise
        let decision = decide(likelihood: likelihood, periodicity: periodicity, crest: frameCrest, snr: snr, aboveVoices: aboveVoices,
                              echoHidesRoom: echoHidesRoom, talkerSpokeLately: talkerSpokeLately, overSteadyNoise: overSteadyNoise)
        if !echoHidesRoom {
            talkWithoutBackground = decision.speech ? talkWithoutBackground + 1 : 0
            // A young background heard as voices takes every frame: against its first lulls the room's
            // words would start speech, stay out of it and keep its level where those lulls put it.
            let counts = talkWithoutBackground == 0 || talkWithoutBackground >= Self.longestTalk || (young && backgroundIsVoices)
            // A click rises as far as a word; while the room is judged by its rises, it does not count.
            if counts && frames >= Self.unsettledFrames && !(young && frameCrest > Self.clickCrest) { background.add(level) }
        }
        frames += 1
        return decision
    }

    /// Mean log-likelihood ratio over the bands, the frame's SNR in dB,
    /// both against the noise floor and the residual echo, the part of
    /// the frame's power the residual echo makes up, and the level in dB
    /// of what it holds beyond the echo; then the noise floor learns from that.
    private func bandLikelihood(residualEcho: UnsafeBufferPointer<Float>?) -> (Double, Double, Double, Double) {
        let edges = Self.bandEdges, bands = edges.count - 1
        for index in 0..<Self.analysisSize { padded[index] = recent[index] * window[index] }
        for index in Self.analysisSize..<Self.fftSize { padded[index] = 0 }
        padded.withUnsafeBufferPointer { signal in
            binsReal.withUnsafeMutableBufferPointer { re in
                binsImaginary.withUnsafeMutableBufferPointer { im in fft.forward(signal, binsReal: re, binsImaginary: im) }
            }
        }
        for band in 0..<bands {
            // The top band takes the Nyquist bin too, over the same width.
            let end = band == bands - 1 ? binsReal.count : edges[band + 1]
            var sum = 0.0
            for bin in edges[band]..<end {
                sum += Double(binsReal[bin] * binsReal[bin] + binsImaginary[bin] * binsImaginary[bin])
            }
            bandPower[band] = sum / Double(edges[band + 1] - edges[band])
            bandEcho[band] = residualEcho.map { Self.bandMean(of: $0, from: edges[band], to: end) } ?? 0
        }
        let learning = frames < Self.learningFrames
        for band in 0..<bands {
            if learning {
                smoothedPower[band] = (smoothedPower[band] * Double(frames) + bandPower[band]) / Double(frames + 1)
                noise[band] = max(smoothedPower[band], Self.noiseFloor)
            } else {
                smoothedPower[band] = 0.5 * smoothedPower[band] + 0.5 * bandPower[band]
            }
        }
        var likelihood = 0.0, signalPower = 0.0, noisePower = 0.0, echoTotal = 0.0
        for band in 0..<bands {
            let expected = noise[band] + bandEcho[band]
            let posterior = bandPower[band] / expected
            let prior = max(0.9 * speechEstimate[band] / expected + 0.1 * max(posterior - 1, 0), pow(10, -2.5))
            likelihood += posterior * prior / (1 + prior) - log1p(prior)
            let gain = prior / (1 + prior)
            speechEstimate[band] = gain * gain * bandPower[band]
            let width = Double(edges[band + 1] - edges[band])
            signalPower += bandPower[band] * width
            noisePower += expected * width
            echoTotal += min(bandEcho[band], bandPower[band]) * width
        }
        likelihood /= Double(bands)
        let snr = 10 * log10(signalPower + 1e-20) - 10 * log10(noisePower + 1e-20)
        if !learning {
            let rise = pow(10, 0.002)
            for band in 0..<bands {
                // Where the echo is more than a quarter of the band, what is
                // left beyond it says too little of the room's own floor.
                if bandEcho[band] > Self.floorEchoShare * smoothedPower[band] { continue }
                let background = max(smoothedPower[band] - bandEcho[band], 0)
                windowMinimum[band] = min(windowMinimum[band], background)
                if background < noise[band] {
                    noise[band] = 0.8 * noise[band] + 0.2 * background
                } else if background / noise[band] < 2 && likelihood < Self.strongRatio {
                    noise[band] = 0.95 * noise[band] + 0.05 * background
                } else {
                    // A floor that could only fall would lock onto a lull for good.
                    noise[band] *= rise
                }
                noise[band] = max(noise[band], Self.noiseFloor)
            }
            liftFloorToLastingMinima(bands: bands)
        }
        let level = 10 * log10(max(signalPower - echoTotal, 0) + 1e-20)
        return (likelihood, snr, echoTotal / (signalPower + 1e-20), level)
    }

    /// Lifts the floor of each band whose least background over the last 3 s (beyond the echo, and only
    /// where the echo left it audible) stands `floorStep` above it; then moves on the half-second windows.
    private func liftFloorToLastingMinima(bands: Int) {
        let windows = Self.floorWindows
        for band in 0..<bands {
            var least = windowMinimum[band]
            for window in 0..<windows { least = min(least, pastMinima[band * windows + window]) }
            // Infinite where the echo masked the band throughout: it says nothing then.
            if least.isFinite && least > Self.floorStep * noise[band] { noise[band] = Self.liftOverLeast * least }
        }
        let framesTracked = frames - Self.learningFrames + 1
        if framesTracked % Self.floorWindowFrames == 0 {
            let window = framesTracked / Self.floorWindowFrames % windows
            for band in 0..<bands {
                pastMinima[band * windows + window] = windowMinimum[band]
                windowMinimum[band] = .infinity
            }
        }
    }

    /// The mean of `spectrum` (161 bins of 50 Hz) over this detector's bins
    /// `first..<end` (of 31.25 Hz).
    private static func bandMean(of spectrum: UnsafeBufferPointer<Float>, from first: Int, to end: Int) -> Double {
        let low = first * 5 / 8, high = min(spectrum.count, max(low + 1, (end * 5 + 7) / 8))
        guard low < high else { return 0 }
        var sum = 0.0
        for bin in low..<high { sum += Double(spectrum[bin]) }
        return sum / Double(high - low)
    }

    /// The strongest normalised correlation of the band-passed signal at
    /// 8 kHz with itself 60 to 400 Hz earlier, 0 to 1. Advances the measure's
    /// history by `frame`: `process` calls it once per frame (tests may too).
    func periodicity(_ frame: UnsafeBufferPointer<Float>) -> Float {
        let decimated = Self.frameSize / 2, length = periodicBuffer.count
        for index in 0..<(length - decimated) { periodicBuffer[index] = periodicBuffer[index + decimated] }
        for index in 0..<Self.frameSize {
            var value = Double(frame[index].isFinite ? frame[index] : 0)
            for (section, c) in Self.bandPass.enumerated() {
                let (z1, z2) = filterState[section]
                let output = c.0 * value + z1
                filterState[section] = (c.1 * value - c.3 * output + z2, c.2 * value - c.4 * output)
                value = output
            }
            if index % 2 == 0 { periodicBuffer[length - decimated + index / 2] = Float(value) }
        }
        let window = Self.correlationWindow, start = length - window
        return periodicBuffer.withUnsafeBufferPointer { buffer in
            var energy: Float = 0
            for index in start..<length { energy += buffer[index] * buffer[index] }
            guard energy > 1e-20 else { return 0 }
            // The lagged window's energy slides with the lag rather than being summed anew.
            var lagged: Float = 0
            for index in (start - Self.shortestLag)..<(length - Self.shortestLag) { lagged += buffer[index] * buffer[index] }
            var best: Float = 0
            // Out of digital silence the lagged window holds next to nothing, and what the sliding sum leaves of
            // it is rounding, or below zero: against that, a sound's first frame measured a periodicity of up to
            // 1e9. A lagged window 30 dB under the current one says nothing of a period.
            let leastLagged = energy * 1e-3
            for lag in Self.shortestLag...Self.longestLag {
                var cross: Float = 0
                for index in start..<length { cross += buffer[index] * buffer[index - lag] }
                if cross > 0 && lagged > leastLagged { best = max(best, min(cross / (energy * lagged).squareRoot(), 1)) }
                if lag < Self.longestLag {
                    let leaving = buffer[length - 1 - lag], entering = buffer[start - lag - 1]
                    lagged += entering * entering - leaving * leaving
                }
            }
            return best
        }
    }

    /// The loudest of ten 2 ms pieces of the last 20 ms against their mean
    /// energy, around the 20 ms's mean: a microphone's DC offset would
    /// count in every piece and hide a key's click (1% of full scale: the
    /// corpus's keyboard at 10 and 20 dB, seeds 1 to 3, gave 66 and 124
    /// spurious onsets where they gave 1 and 0; 0 and 0 around the mean).
    private func crest() -> Double {
        var mean = 0.0
        for index in 0..<Self.analysisSize { mean += Double(recent[index]) }
        mean /= Double(Self.analysisSize)
        var loudest = 0.0, total = 0.0
        for piece in 0..<10 {
            var energy = 0.0
            for index in (piece * 32)..<((piece + 1) * 32) {
                let deviation = Double(recent[index]) - mean
                energy += deviation * deviation
            }
            loudest = max(loudest, energy)
            total += energy
        }
        return loudest / (total / 10 + 1e-20)
    }

    private func decide(likelihood: Double, periodicity: Float, crest: Double, snr: Double, aboveVoices: Bool,
                        echoHidesRoom: Bool, talkerSpokeLately: Bool, overSteadyNoise: Bool) -> Decision {
        let click = crest > Self.clickCrest
        let active = (likelihood > Self.activeRatio || periodicity > Self.activePeriodicity) && !click && aboveVoices
        let strong = likelihood > Self.strongRatio && !click && aboveVoices
        // What may start speech: a strong frame that holds no transient, or is clearly voiced.
        let steady = strong && (crest <= Self.onsetCrest || periodicity > Self.clearlyVoiced)
        let voiced = steady && periodicity > Self.voicedPeriodicity
        // A word's first syllable at 0 dB SNR may stay short of strong for 100 ms (`overSteadyNoise`).
        let risen = active && overSteadyNoise && crest <= Self.onsetCrest
        if speaking && !click {
            peakSNR = max(peakSNR - 0.02, snr)
            hangoverLength = min(max(Int((4 + 0.4 * (25 - peakSNR) + 0.5).rounded(.down)), 2), 20)
        }
        strongRun = strong ? strongRun + 1 : 0
        steadyRun = steady ? steadyRun + 1 : 0
        risenRun = steady || risen ? risenRun + 1 : 0
        let steadyFrames = echoHidesRoom && !talkerSpokeLately ? Self.steadyFramesToStartOverEcho : Self.steadyFramesToStart
        let steadyStart = (steadyRun >= steadyFrames
                           || risenRun >= Self.risenFramesToStart)
            && (!backgroundIsYoung || echoHidesRoom)
        loudRun = likelihood > Self.strongRatio ? loudRun + 1 : 0
        defer {
            voicedHistory[0] = voicedHistory[1]
            voicedHistory[1] = voiced
        }
        guard frames >= Self.learningFrames else {
            recordDecision(false)
            return Decision(speech: false, backfilled: 0)
        }
        var backfilled = 0
        if !speaking {
            framesSinceOffset += 1
            let voicedCount = (voicedHistory[0] ? 1 : 0) + (voicedHistory[1] ? 1 : 0) + (voiced ? 1 : 0)
            let soon = framesSinceOffset <= Self.reopenFrames
            // Soon after the last word, a strong frame reopens speech if it holds no
            // transient or comes in sound too sustained to be a key.
            if voicedCount >= 2 || strongRun >= 4 || steadyStart || (soon && strong && (steady || loudRun >= Self.keyFrames)) {
                speaking = true
                hangover = hangoverLength
                // The frames just before the onset are still unreleased: claim the quiet start of the word.
                for back in 1...Self.lookBack {
                    if previousDecisions[Self.lookBack - back] { break }
                    backfilled += 1
                }
            }
        } else if active {
            hangover = hangoverLength
        } else {
            hangover -= 1
            if hangover < 0 {
                speaking = false
                framesSinceOffset = 0
            }
        }
        recordDecision(speaking)
        return Decision(speech: speaking, backfilled: backfilled, evident: strong)
    }

    private func recordDecision(_ speech: Bool) {
        previousDecisions[0] = previousDecisions[1]
        previousDecisions[1] = speech
    }
}

/// The levels of the last `frames` frames it was given, in half-decibel
/// steps, for their percentiles: a histogram and the ring that says which
/// level leaves it next. Made once; adding and reading allocate nothing.
private struct BackgroundLevels {
    /// Five seconds of 10 ms frames.
    static let frames = 500
    static let lowest = -160.0, step = 0.5, bins = 400
    private var counts = [Int32](repeating: 0, count: bins)
    private var ring = [Int16](repeating: 0, count: frames)
    private var added = 0
    /// How many levels it holds.
    var count: Int { min(added, Self.frames) }

    mutating func add(_ level: Double) {
        let bin = Int16(min(max(((level - Self.lowest) / Self.step).rounded(.down), 0), Double(Self.bins - 1)))
        let slot = added % Self.frames
        if added >= Self.frames { counts[Int(ring[slot])] -= 1 }
        ring[slot] = bin
        counts[Int(bin)] += 1
        added += 1
    }

    /// The level in dB that `percent` of the levels held reach no higher than; the lowest while nothing was added.
    func level(atPercent percent: Int) -> Double {
        let wanted = (count * percent + 99) / 100
        guard wanted > 0 else { return Self.lowest }
        var seen = 0
        for bin in 0..<Self.bins {
            seen += Int(counts[bin])
            if seen >= wanted { return level(bin) }
        }
        return level(Self.bins - 1)
    }

    /// The 5th and 25th percentile levels in dB; both at the lowest level while nothing was added.
    func percentiles() -> (Double, Double) { (level(atPercent: 5), level(atPercent: 25)) }

    private func level(_ bin: Int) -> Double { Self.lowest + (Double(bin) + 0.5) * Self.step }
}
