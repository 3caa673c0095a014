import AudioCore

#if canImport(Glibc)
import Glibc
#endif

/// Acoustic echo cancellation at 16 kHz in 10 ms blocks, with no delay.
///
/// Two stages:
/// 1. A partitioned-block frequency-domain adaptive filter (overlap-save,
///    42 partitions of 10 ms: a 0.42 s echo tail) models the echo path and
///    subtracts its estimate. A background filter adapts by proportionate,
///    power-normalised NLMS, its step lowered where the echo would lie under
///    the room's background; a foreground copy produces the output and only
///    takes the background's coefficients when they cancel better, and not
///    while a near talker is heard over the far end, so double talk cannot
///    make the output diverge. Both filters are turned
///    each block by the clock drift measured between playback and capture,
///    which moves the echo path faster than adaptation follows.
/// 2. A residual echo suppressor, per frequency bin, lowers what the
///    filter leaves. It tracks the filter's echo return loss enhancement
///    while only the far end talks, keeps a decaying hold of the residual
///    echo for the room's reverberation (over a talker in an output that
///    does not follow the echo estimate, only half of it), and treats bins
///    where the filter plainly fails (right after the echo path changes) as
///    echo alone, and all of it as echo while a detector says nobody near
///    talks, or hears someone it cannot yet tell from the echo in an output
///    that holds no more than echo, from a filter first learning the path,
///    or from one adding echo. Its gains are applied as a short
///    zero-phase filter inside the current block, which adds no delay. What
///    it takes away of the room's own background comes back as comfort
///    noise of the same level and spectrum, so the line never goes dead
///    between words.
public final class EchoCanceller {
    /// Samples in one block: 10 ms at 16 kHz.
    public static let blockSize = 160
    static let fftSize = 320
    static let bins = 161
    static let partitions = 42

    // Adaptive filter.
    static let stepSize: Float = 0.7
    static let regularisation: Float = 1e-8 * Float(partitions * fftSize)
    /// Where the echo of the far end lies under the room's background (its
    /// quiet passages, or bands a small loudspeaker hardly plays), a
    /// normalised step fits the background as echo, and when the far end
    /// grows loud the filter predicts echo that never comes: with a speech
    /// far end over a room's noise it then found itself adding echo and
    /// started anew 14 and 19 times in 24 s (the corpus's `dt_speech_enr5`,
    /// seeds 2 and 3). Two things keep it from that.
    /// The room's background enters the normaliser, so the step is scaled,
    /// much as a Kalman gain is, by about echo / (echo + 2 × background),
    /// the echo taken as the far end through the path learnt so far and
    /// what is still uncertain of it.
    static let noiseWeight: Float = 2
    /// And as the far end falls quiet, the normaliser keeps 40% of its
    /// average over about the last 200 ms, so in the first moments the
    /// step shrinks with the echo rather than taking the same stride on a
    /// tenth of it; after them the background's term holds it.
    static let recentFloor: Float = 0.4, recentSmoothing: Float = 0.95
    /// How uncertain the path is per bin, as a power gain, before it is
    /// learnt or after the filter starts anew: a path as loud as the far
    /// end. It falls as the far end excites the bin, to no less than
    /// `faintestPath`.
    static let initialUncertainty: Float = 1
    /// 40 dB under the far end: what is left uncertain of any bin's path.
    static let faintestPath: Float = 1e-4
    /// Times the background floor: the background per sample, times the
    /// samples the normaliser sums (the floor sits `floorBias` under steady
    /// noise in a Hann-windowed frame holding 3/8 of its power).
    static let noiseToExcitation: Float = floorBias * 8 / 3 * Float(partitions)
    static let errorSmoothing: Float = 0.8
    static let copyBelow: Float = 0.7
    /// Two seconds of a near talker through which the foreground keeps its
    /// coefficients: a talker's words run on for 3 s and more, and a
    /// foreground that took up the background after one second took up
    /// their voice too.
    static let talkHoldBlocks = 200
    /// A background that leaves under a quarter of a settled foreground's
    /// error for `farAheadBlocks` blocks in a row has learnt echo the
    /// held foreground misses, not a talker's voice: adapting to a voice it
    /// never did better than that for more than 2 blocks in the corpus's
    /// double talk and game echo. That echo is a moved path's, or a game's
    /// sound the foreground had not yet learnt, which is why a burst is
    /// only taken for the echo once the output then holds no more than echo.
    static let farAheadBelow: Float = 0.25, farAheadBlocks = 5
    /// Blocks in a row after taking up such a background in which an
    /// output of no more than echo tells that the burst was the moved path's echo.
    static let pathCheckBlocks = 10
    static let resetAbove: Float = 4
    // Residual echo suppressor.
    static let spectrumSmoothing: Float = 0.5
    static let echoDominated: Float = 3
    static let failingFilter: Float = 0.7
    static let overSubtraction: Float = 4
    /// Over a talker the output holds apart from the echo: a quarter of the
    /// residual estimated. In reverberant rooms the filter removes 12-17 dB
    /// of the echo, so what it leaves lies near a talker 10 dB under the
    /// echo; four times the estimate cut the talker's weaker bins.
    static let talkerOverSubtraction: Float = 0.25
    /// Between a talker's words: the residual estimated, once.
    static let pauseOverSubtraction: Float = 1
    /// Over a talker whose burst the detector told apart from the echo, in
    /// an output that does not follow the echo estimate but takes its
    /// shape: the residual estimated, once, not four times it. A talker's
    /// log spectrum and a voice's or a game's echo correlate as any two
    /// such sounds do, so the shape alone took much of their words in
    /// double talk; a burst only taken as theirs for coming soon after
    /// their last keeps four times it, since the echo's own bursts do too.
    static let toldApartOverSubtraction: Float = 1
    /// The mean magnitude-squared coherence of the output with the echo
    /// estimate over the decision band, past which the output carries the
    /// echo the filter misjudges, as after the echo path moved (there, half
    /// the blocks a fooled detector calls talk are over 0.7, nine in ten over
    /// 0.5), rather than a talker (median 0.1 to 0.2, nine in ten under 0.4).
    static let echoCoherentAbove: Float = 0.4
    /// How much of the last block's cross- and auto-spectra the coherence keeps: about 50 ms.
    static let coherenceSmoothing: Float = 0.8
    /// The correlation of the output's log spectrum with the echo
    /// estimate's, over the decision band, above which the filter's
    /// misadjustment rather than a talker fills the output.
    static let echoShapedAbove: Float = 0.8
    static let gainFloor: Float = 0.01
    /// The floor where the output is echo alone: 30 dB, not 20. A filter still
    /// learning a voice's path in a reverberant room leaves much of its echo,
    /// and 20 dB under that stood 13 to 23 dB over the room's background (the
    /// corpus's `st_speech`, its seconds 2 to 5), which the comfort noise
    /// restores; lower floors leave it under that noise, as 30 dB does.
    static let echoAloneFloor: Float = 0.001
    static let reverberationHold: Float = 0.92
    static let nearTalkRatio: Float = 3
    /// A quarter: a converged filter leaves 20-45 dB less than that of echo alone.
    static let audibleNearRatio: Float = 0.25
    /// A tenth, for an output apart from the echo: the echo the filter
    /// misjudges after the echo path moves follows its estimate (coherence
    /// 0.5 to 0.9), a talker does not (0.1 to 0.2).
    static let apartNearRatio: Float = 0.1
    /// Where the filter has lately left little of the echo, an output
    /// holding five times that least share is apart from the echo too, if
    /// it holds 3% or more: under a game's echo the filter leaves 1 to 4%
    /// between a talker's words, and their first syllables rise to 5 to
    /// 10% for 100 ms before they reach a tenth. At three times, 10 blocks
    /// of 400 of the voice tests' game alone stood apart.
    static let apartOverLeastLeakage: Float = 5
    static let leastApartRatio: Float = 0.03
    /// Blocks of far end over which the least leakage is taken, twice over.
    static let leakageWindow = 50
    static let incoherentBelow: Float = 0.2
    /// The coherence under which an output holding a quarter of the echo
    /// can be a talker: theirs stays under 0.4 nine blocks in ten, while
    /// the echo the filter misjudges after the path moved rises over 0.5
    /// as often. Taken for a talker, that echo kept the foreground's old
    /// coefficients through the first quarter second after a move, while
    /// the background had learnt the new path 8 to 10 dB better.
    static let audibleIncoherentBelow: Float = 0.45
    /// About -7.4 dB: 0.12 (-9.2 dB) still let a small loudspeaker's distorted echo through.
    static let echoOnlyRatio: Float = 0.18
    static let erleRising: Float = 0.1, erleFalling: Float = 0.02, erleFailing: Float = 0.5
    /// 300 Hz to 4 kHz, where the global decisions look.
    static let decisionBand = 6...80
    static let gainTaps = 32
    /// The background's floor per bin follows the linear output down a
    /// tenth of the way each block and rises 0.9 dB a second, slow enough
    /// to stay under speech and echo; on steady noise that sits 3 dB under
    /// it, which `floorBias` gives back.
    static let floorFalling: Float = 0.1, floorRising: Float = 1.002
    static let floorBias: Float = 2
    /// The comfort noise's floor starts, as the background's does, from the
    /// first block, as much as 30 dB under the room, while the smoothed spectra are
    /// still filling. Until the output first falls under it, it climbs
    /// 0.6 dB a block (never above the output) in bins that hold no echo:
    /// where the residual echo estimated, or the echo itself once the
    /// filter has converged, lies under it. Climbing only where the
    /// residual lay under it, a voice's octaves under 1 kHz were still 6 dB
    /// low 2 to 6 s in; climbing anywhere, the floor climbed onto the echo
    /// of a filter still learning the path. In a far end's first 0.2 s the
    /// residual estimated is still nothing, and the floor climbs with the
    /// echo that passes (a game's peak there 0.058, 0.033 on the
    /// background's floor). Kept off the echo a path not yet learnt could
    /// hold, it stayed 3.2 dB under a game's room below 500 Hz; drawn on the
    /// lower floor until the filter converged, it stepped up after, and the
    /// noise suppressor let the step through for a second.
    static let floorClimbing: Float = 1.15

    /// Blocks of far-end activity a filter learning from nothing needs
    /// before its output is trusted to hold no echo worth detecting as
    /// speech: 1 s, over which it converges on a game's echo, so a player
    /// who talks a second into the game is heard from their first words.
    static let convergenceBlocks = 100
    /// The same for a filter that must unlearn a path it had learnt, as
    /// after the microphone moves: it starts further from the new path.
    static let reconvergenceBlocks = 150
    /// After these, the residual echo estimated for this block alone is
    /// trusted: just past convergence a filter may still leave more than a
    /// quarter of the echo it predicts.
    static let settledBlocks = 300

    /// The far end played something within the echo tail: its echo may still be arriving.
    public var farEndActive: Bool { blocksSinceFarEnd < Self.partitions }
    @exclusivity(unchecked) private var blocksSinceFarEnd = Int.max / 2
    /// The microphone holds clearly more than the echo the filter predicts:
    /// someone near is talking over the far end.
    @exclusivity(unchecked) public private(set) var nearEndDominates = false
    /// The filter's output holds more than a quarter of the echo it
    /// predicts: far more than a converged filter leaves of echo alone, so
    /// someone near is talking, even under an echo louder than they are;
    /// unless the filter adds power, the microphone holds less than the
    /// echo predicted, or the output follows the echo estimate (coherence
    /// 0.45 or more), as when the echo path has changed.
    @exclusivity(unchecked) public private(set) var nearEndAudible = false
    /// The filter's output holds more than a tenth of the echo it predicts,
    /// or more than five times the least share it has lately left and 3% or
    /// more, and hardly follows the echo estimate (coherence under 0.2), as
    /// a talker's first syllables under a game's echo do before they reach
    /// a quarter of it; never while the filter adds power. The residual of a
    /// speech far end can do so too (taken alone for a talker, the corpus's
    /// `st_speech` fell from 57.9 to 32.5 dB), so this alone tells no talker.
    @exclusivity(unchecked) public private(set) var nearEndApartFromEcho = false
    /// The least share of the echo it predicts that the output held, over
    /// the current window of a converged filter's far end and the one
    /// before: what the filter leaves between a talker's words.
    @exclusivity(unchecked) private var leastLeakage: Float = .infinity
    @exclusivity(unchecked) private var previousLeastLeakage: Float = .infinity
    @exclusivity(unchecked) private var leakageBlocks = 0
    /// The output holds no more than echo: under `echoOnlyRatio` of the echo
    /// the filter predicts, which what a small loudspeaker's distortion
    /// leaves of speech stays under and a talker's voice soon rises above;
    /// or the filter is still learning and the microphone holds little
    /// beyond the echo; or the microphone holds less than the echo the
    /// filter predicts, which no talker makes.
    @exclusivity(unchecked) private var outputHoldsOnlyEcho = false
    /// The output's coherence with the echo estimate, over the decision band.
    @exclusivity(unchecked) private var echoCoherence: Float = 0
    /// What the caller knows of the near end, for the block being suppressed.
    public enum NearEnd: Sendable {
        /// Nobody has judged: suppress only the echo the filter is estimated to leave.
        case unknown
        /// A detector hears nobody near: what the filter left while the far end plays is echo.
        case silent
        /// A detector hears someone near talking, in a burst taken as
        /// theirs because it came soon after their last.
        case talking
        /// A detector hears someone near talking, in a burst it has told
        /// apart from the echo.
        case toldApart
        /// A detector hears someone, but nothing yet tells them from the
        /// echo: while the output holds no more than echo, the filter first
        /// learns the path, or it adds echo, it is echo.
        case unconfirmed
        /// A detector hears nobody, but a talker spoke moments ago: between
        /// their words it misses their quiet syllables, so only the echo
        /// the filter is estimated to leave is taken away, unless the
        /// output follows the echo or takes its shape.
        case pausing

        /// A detector hears someone near talking, whether it told their
        /// burst apart from the echo or took it as theirs for coming soon after their last.
        var hearsTalker: Bool { self == .talking || self == .toldApart }
        /// A detector hears someone near talking, or a pause moments after they spoke.
        var talkerNear: Bool { hearsTalker || self == .pausing }
    }
    /// The near end as the last `suppress` was told it.
    @exclusivity(unchecked) private var nearEnd = NearEnd.unknown
    /// The canceller has adapted over `convergenceBlocks` blocks of far-end
    /// activity, or `reconvergenceBlocks` since it last found its filter
    /// adding echo rather than removing it.
    public var hasConverged: Bool { activeBlocks >= blocksToConverge }
    /// The canceller has adapted over `settledBlocks` blocks of far-end activity since it last
    /// found its filter adding echo: what it estimates it leaves of the echo holds block by block.
    public var hasSettled: Bool { activeBlocks >= Self.settledBlocks }
    /// The filter has not yet converged on any path: it has never found itself adding echo.
    private var learningFromNothing: Bool { !hasConverged && blocksToConverge == Self.convergenceBlocks }
    @exclusivity(unchecked) private var activeBlocks = 0
    @exclusivity(unchecked) private var blocksToConverge = EchoCanceller.convergenceBlocks
    /// Blocks in a row in which the filter added echo; `failedAfter` of them
    /// mean the echo path has changed, while double talk leaves no such run.
    @exclusivity(unchecked) private var failingBlocks = 0
    /// Blocks in a row the foreground has kept its coefficients through a near talker.
    @exclusivity(unchecked) private var blocksHeldForTalker = 0
    /// With this block the output, which held what was taken for a talker
    /// until the foreground took up a background far ahead of it, has held
    /// no more than echo for `pathCheckBlocks`: the burst was the echo of a moved path.
    public var echoPathMoved: Bool { blocksToCheckPath == 1 }
    /// One more than the blocks of echo alone still needed to say so; 0 while nothing is watched.
    @exclusivity(unchecked) private var blocksToCheckPath = 0
    /// Blocks in a row in which the background's error stayed under `farAheadBelow` of the foreground's.
    @exclusivity(unchecked) private var blocksBackgroundFarAhead = 0
    static let failedAfter = 10

    // Clock drift between playback and capture moves the echo path by a
    // fraction of a sample each block, faster than the filter's adaptation
    // follows (80 ppm costs the filter about 10 dB of ERLE). Every `driftInterval` blocks
    // the foreground filter is compared with itself `driftInterval` blocks
    // before: the slope of their phase difference across 300 Hz - 4 kHz is
    // how far the path moved, and both filters are then turned each block
    // by the drift found so far, so adaptation only corrects what is left.
    static let driftInterval = 50
    /// The most drift followed, in samples per block: 200 ppm.
    static let largestDrift: Float = 200e-6 * Float(blockSize)
    /// The part of each measured shift taken into the drift.
    static let driftLoopGain: Float = 0.5
    /// How alike the filter must stay over an interval, as a normalised
    /// correlation, for its shift to be a drift and not a new path.
    static let driftCoherence: Float = 0.8
    /// The drift followed, in samples per block; positive when the echo comes earlier each block.
    @exclusivity(unchecked) public private(set) var driftPerBlock: Float = 0
    @exclusivity(unchecked) private var blocksSinceSnapshot = 0
    /// Whether no block since the snapshot was judged to hold a near talker.
    @exclusivity(unchecked) private var intervalUsable = true
    private let snapshot: (real: UnsafeMutableBufferPointer<Float>, imaginary: UnsafeMutableBufferPointer<Float>)
    private let rotation: (real: UnsafeMutableBufferPointer<Float>, imaginary: UnsafeMutableBufferPointer<Float>)

    private let fft = RealFFT(size: fftSize)
    /// Far-end spectra, newest first from `newest`, as a ring of `partitions` rows.
    /// Owns every buffer below.
    private let storage = RealTimeStorage()
    private let farReal: UnsafeMutableBufferPointer<Float>, farImaginary: UnsafeMutableBufferPointer<Float>
    @exclusivity(unchecked) private var newest = 0
    private let background: (real: UnsafeMutableBufferPointer<Float>, imaginary: UnsafeMutableBufferPointer<Float>)
    private let foreground: (real: UnsafeMutableBufferPointer<Float>, imaginary: UnsafeMutableBufferPointer<Float>)
    private let previousFar: UnsafeMutableBufferPointer<Float>
    @exclusivity(unchecked) private var constrainedPartition = 0
    @exclusivity(unchecked) private var backgroundError: Float = 0, foregroundError: Float = 0

    private let window: UnsafeMutableBufferPointer<Float>
    private let gainWindow: UnsafeMutableBufferPointer<Float>
    private let previousMic: UnsafeMutableBufferPointer<Float>
    private let previousError: UnsafeMutableBufferPointer<Float>
    private let previousEcho: UnsafeMutableBufferPointer<Float>
    private let micPower: UnsafeMutableBufferPointer<Float>
    private let errorPower: UnsafeMutableBufferPointer<Float>
    private let echoPower: UnsafeMutableBufferPointer<Float>
    private let logERLE: UnsafeMutableBufferPointer<Float>
    /// The echo estimated to be left in this block's output, and that
    /// held through the reverberant tail of what the filter missed.
    private let residual: UnsafeMutableBufferPointer<Float>
    private let residualHold: UnsafeMutableBufferPointer<Float>
    private let history: UnsafeMutableBufferPointer<Float>

    // Scratch, so a block allocates nothing.
    private let frame: UnsafeMutableBufferPointer<Float>
    private let spectrumReal: UnsafeMutableBufferPointer<Float>
    private let spectrumImaginary: UnsafeMutableBufferPointer<Float>
    private let gradientReal: UnsafeMutableBufferPointer<Float>
    private let gradientImaginary: UnsafeMutableBufferPointer<Float>
    private let normaliser: UnsafeMutableBufferPointer<Float>
    private let pathGain: UnsafeMutableBufferPointer<Float>
    private let recentExcitation: UnsafeMutableBufferPointer<Float>
    private let uncertainty: UnsafeMutableBufferPointer<Float>
    private let weights: UnsafeMutableBufferPointer<Float>
    private let backgroundEcho: UnsafeMutableBufferPointer<Float>
    private let foregroundEcho: UnsafeMutableBufferPointer<Float>
    private let backgroundResidual: UnsafeMutableBufferPointer<Float>
    private let foregroundResidual: UnsafeMutableBufferPointer<Float>
    private let power: UnsafeMutableBufferPointer<Float>
    /// The output's spectrum for this block, and the smoothed cross-spectrum
    /// of output and echo estimate and their power spectra, for their coherence.
    private let outputReal: UnsafeMutableBufferPointer<Float>
    private let outputImaginary: UnsafeMutableBufferPointer<Float>
    private let crossReal: UnsafeMutableBufferPointer<Float>
    private let crossImaginary: UnsafeMutableBufferPointer<Float>
    private let outputAuto: UnsafeMutableBufferPointer<Float>
    private let echoAuto: UnsafeMutableBufferPointer<Float>
    private let gains: UnsafeMutableBufferPointer<Float>
    private let smoothed: UnsafeMutableBufferPointer<Float>
    private let filterReal: UnsafeMutableBufferPointer<Float>
    private let filterImaginary: UnsafeMutableBufferPointer<Float>
    /// The room's background per bin, in the power spectra's scale, as the
    /// filter's step weighs it. It climbs from under the background at
    /// `floorRising` alone: a floor at the background from the first
    /// seconds shrank the step while the path was being learnt, and a
    /// talker over a speech far end lost 5 dB of near SNR (the corpus's
    /// seed 2 `dt_speech_enr5`).
    private let noiseFloor: UnsafeMutableBufferPointer<Float>
    /// The room's background per bin as the comfort noise gives it back,
    /// and whether the output has yet fallen under it (1) or not (0).
    private let comfortFloor: UnsafeMutableBufferPointer<Float>
    private let comfortFloorFound: UnsafeMutableBufferPointer<Float>
    /// Comfort noise: one frame synthesised, its window, and the half of
    /// the last frame that overlaps this block.
    private let comfort: UnsafeMutableBufferPointer<Float>
    private let synthesisWindow: UnsafeMutableBufferPointer<Float>
    private let comfortTail: UnsafeMutableBufferPointer<Float>
    @exclusivity(unchecked) private var noise = UniformNoise()

    /// A canceller that has learnt no echo path yet. Every buffer it needs is made here, so a block
    /// allocates nothing.
    public init() {
        let size = Self.partitions * Self.bins
        previousFar = storage.zeroed(Self.blockSize)
        previousMic = storage.zeroed(Self.blockSize)
        previousError = storage.zeroed(Self.blockSize)
        previousEcho = storage.zeroed(Self.blockSize)
        micPower = storage.zeroed(Self.bins)
        errorPower = storage.zeroed(Self.bins)
        echoPower = storage.zeroed(Self.bins)
        logERLE = storage.zeroed(Self.bins)
        residual = storage.zeroed(Self.bins)
        residualHold = storage.zeroed(Self.bins)
        history = storage.zeroed(Self.fftSize - Self.blockSize - Self.gainTaps)
        frame = storage.zeroed(Self.fftSize)
        spectrumReal = storage.zeroed(Self.bins)
        spectrumImaginary = storage.zeroed(Self.bins)
        gradientReal = storage.zeroed(Self.bins)
        gradientImaginary = storage.zeroed(Self.bins)
        normaliser = storage.zeroed(Self.bins)
        pathGain = storage.zeroed(Self.bins)
        recentExcitation = storage.zeroed(Self.bins)
        uncertainty = storage.copy(of: [Float](repeating: Self.initialUncertainty, count: Self.bins))
        weights = storage.zeroed(Self.partitions)
        backgroundEcho = storage.zeroed(Self.blockSize)
        foregroundEcho = storage.zeroed(Self.blockSize)
        backgroundResidual = storage.zeroed(Self.blockSize)
        foregroundResidual = storage.zeroed(Self.blockSize)
        power = storage.zeroed(Self.bins)
        outputReal = storage.zeroed(Self.bins)
        outputImaginary = storage.zeroed(Self.bins)
        crossReal = storage.zeroed(Self.bins)
        crossImaginary = storage.zeroed(Self.bins)
        outputAuto = storage.zeroed(Self.bins)
        echoAuto = storage.zeroed(Self.bins)
        gains = storage.zeroed(Self.bins)
        smoothed = storage.zeroed(Self.bins)
        filterReal = storage.zeroed(Self.bins)
        filterImaginary = storage.zeroed(Self.bins)
        farReal = storage.zeroed(size)
        farImaginary = storage.zeroed(size)
        background = (storage.zeroed(size), storage.zeroed(size))
        foreground = (storage.zeroed(size), storage.zeroed(size))
        snapshot = (storage.zeroed(size), storage.zeroed(size))
        rotation = (storage.zeroed(Self.bins), storage.zeroed(Self.bins))
        window = storage.copy(of: (0..<Self.fftSize).map { Float(0.5 - 0.5 * cos(2 * Double.pi * Double($0) / Double(Self.fftSize))) })
        noiseFloor = storage.zeroed(Self.bins)
        comfortFloor = storage.zeroed(Self.bins)
        comfortFloorFound = storage.zeroed(Self.bins)
        comfort = storage.zeroed(Self.fftSize)
        comfortTail = storage.zeroed(Self.blockSize)
        // Square-root Hann: overlapped by half, the squares sum to one, so independent frames keep their power.
        synthesisWindow = storage.copy(of: (0..<Self.fftSize).map { Float(sin(Double.pi * Double($0) / Double(Self.fftSize))) })
        var taper = [Float](repeating: 0, count: Self.fftSize)
        for tap in -Self.gainTaps...Self.gainTaps {
            taper[(tap + Self.fftSize) % Self.fftSize] = Float(0.5 + 0.5 * cos(Double.pi * Double(tap) / Double(Self.gainTaps + 1)))
        }
        gainWindow = storage.copy(of: taper)
    }

    /// Cancels the echo of `reference` (what was played over these 10 ms)
    /// in `mic`, in place, taking a near talker to be possibly present
    /// throughout. Samples that are not finite count as silence.
    public func process(_ mic: UnsafeMutableBufferPointer<Float>, reference: UnsafeBufferPointer<Float>) {
        filter(mic, reference: reference)
        suppress(mic, nearEnd: .unknown)
    }

    /// The first half of a block: the adaptive filter predicts the echo of
    /// `reference` in `mic`, and the residual echo is estimated; `mic` is
    /// left as it is, with non-finite samples made silence, and
    /// `withLinearOutput` gives what the filter left.
    public func filter(_ mic: UnsafeMutableBufferPointer<Float>, reference: UnsafeBufferPointer<Float>) {
        precondition(mic.count == Self.blockSize && reference.count == Self.blockSize, "one 10 ms block at 16 kHz")
        let n = Self.blockSize
        for index in 0..<n where !mic[index].isFinite { mic[index] = 0 }
        // The far end's newest spectrum, from the last two blocks.
        newest = (newest + Self.partitions - 1) % Self.partitions
        var referenceEnergy: Float = 0
        for index in 0..<n {
            frame[index] = previousFar[index]
            let sample = reference[index].isFinite ? reference[index] : 0
            frame[n + index] = sample
            previousFar[index] = sample
            referenceEnergy += sample * sample
        }
        // About -50 dBFS over the block.
        if referenceEnergy > 1e-5 * Float(n) {
            blocksSinceFarEnd = 0
            activeBlocks += 1
        } else {
            blocksSinceFarEnd += 1
        }
        transform(frame, into: newest)

        echoEstimate(background, into: backgroundEcho)
        echoEstimate(foreground, into: foregroundEcho)
        var backgroundEnergy: Float = 0, foregroundEnergy: Float = 0
        for index in 0..<n {
            backgroundResidual[index] = mic[index] - backgroundEcho[index]
            foregroundResidual[index] = mic[index] - foregroundEcho[index]
            backgroundEnergy += backgroundResidual[index] * backgroundResidual[index]
            foregroundEnergy += foregroundResidual[index] * foregroundResidual[index]
        }
        adaptBackground()
        followClockDrift()

        let a = Self.errorSmoothing
        backgroundError = a * backgroundError + (1 - a) * backgroundEnergy
        foregroundError = a * foregroundError + (1 - a) * foregroundEnergy
        // A near talker over the far end looks to the background like echo
        // it has not learnt: adapting to their voice, it may for a while
        // cancel "better" by cancelling them, and a foreground that took
        // that up would add echo until it converged anew. So once the
        // filter has converged, the foreground keeps its coefficients from
        // a block where the detector hears someone near and the output
        // holds them, for as long as the detector does, up to
        // `talkHoldBlocks`: an echo path that changed meanwhile is still taken up.
        let talkOver = hasConverged && (nearEnd.hearsTalker || nearEnd == .unconfirmed) && (nearEndAudible || blocksHeldForTalker > 0)
        blocksHeldForTalker = talkOver ? blocksHeldForTalker + 1 : 0
        blocksBackgroundFarAhead = backgroundError < Self.farAheadBelow * foregroundError ? blocksBackgroundFarAhead + 1 : 0
        // Past a settled filter, a background far ahead has learnt a new
        // echo path, not the talker's voice: the hold ends for the rest of
        // the burst, or the foreground would keep a path it took up half
        // learnt. (A younger one may still be converging.)
        if talkOver && hasSettled && blocksBackgroundFarAhead >= Self.farAheadBlocks && blocksHeldForTalker <= Self.talkHoldBlocks {
            blocksHeldForTalker = Self.talkHoldBlocks + 1
            blocksToCheckPath = Self.pathCheckBlocks + 1
        }
        let holdForTalker = talkOver && blocksHeldForTalker <= Self.talkHoldBlocks
        // Copied element by element: assigning arrays would share their
        // storage and allocate on the next write.
        if backgroundError < Self.copyBelow * foregroundError && !holdForTalker {
            _ = foreground.real.update(fromContentsOf: background.real)
            _ = foreground.imaginary.update(fromContentsOf: background.imaginary)
            _ = foregroundResidual.update(fromContentsOf: backgroundResidual)
            _ = foregroundEcho.update(fromContentsOf: backgroundEcho)
            foregroundError = backgroundError
        } else if backgroundError > Self.resetAbove * foregroundError {
            _ = background.real.update(fromContentsOf: foreground.real)
            _ = background.imaginary.update(fromContentsOf: foreground.imaginary)
            backgroundError = foregroundError
        }
        estimateResidual(mic: mic)
    }

    /// The second half of a block: `mic`, as `filter` left it, becomes the
    /// output. With `nearEnd` `.silent` (a detector hears nobody near)
    /// while the far end plays, `.pausing` while the output follows the
    /// echo, or `.unconfirmed` while it holds no more than echo, the filter
    /// first learns the path or it adds echo, all that the filter left is
    /// taken as echo, and only comfort noise remains.
    public func suppress(_ mic: UnsafeMutableBufferPointer<Float>, nearEnd: NearEnd) {
        precondition(mic.count == Self.blockSize, "one 10 ms block at 16 kHz")
        self.nearEnd = nearEnd
        // A talker, or a pause between their words, in an output that
        // neither follows the echo estimate (coherence) nor takes its shape
        // keeps more of their voice: a quarter of the estimated residual is
        // taken away while they talk, and the residual itself between
        // words, not four times it. Right after the echo path moves, its
        // echo follows the estimate, or fills the output in its shape where
        // the room's noise blurs the coherence: then a pause is echo alone.
        // A burst told apart from the echo loses the residual once where
        // the output only takes the echo's shape. A burst the caller has not
        // counted, heard while the filter first learns the path from nothing,
        // is echo: the filter's estimate is still too small to tell the
        // output from it. (A filter relearning a path it lost starts from an
        // estimate, and a talker in double talk may be why it lost it.) So
        // is one in a block where the filter adds echo rather than removing
        // it, as right after the path moves: its estimate tells nothing of
        // what in the output is echo.
        let incoherent = echoCoherence < Self.echoCoherentAbove
        let apartFromEcho = nearEnd.talkerNear && incoherent && !outputShapedLikeEcho()
        let echoAlone = farEndActive
            && (nearEnd == .silent || (nearEnd == .pausing && !apartFromEcho)
                || (nearEnd == .unconfirmed && (outputHoldsOnlyEcho || learningFromNothing || failingBlocks > 0)))
        let nearOverSubtraction = apartFromEcho ? (nearEnd == .pausing ? Self.pauseOverSubtraction : Self.talkerOverSubtraction)
            : nearEnd == .toldApart && incoherent ? Self.toldApartOverSubtraction : Self.overSubtraction
        let leastGain = echoAlone ? Self.echoAloneFloor : Self.gainFloor
        for bin in 0..<Self.bins {
            let echoOnly = echoAlone
                || (micPower[bin] < Self.echoDominated * echoPower[bin] && errorPower[bin] > Self.failingFilter * micPower[bin])
            let residual = echoOnly ? errorPower[bin] : residualHold[bin]
            let overSubtraction = echoOnly ? Self.overSubtraction : nearOverSubtraction
            power[bin] = max(leastGain, 1 - overSubtraction * residual / (errorPower[bin] + 1e-12))
        }
        Self.smoothAcrossBins(power, into: gains)
        applyGains(to: mic)
        trackNoiseFloor()
        trackComfortFloor()
        addComfortNoise(to: mic)
    }

    /// Calls `body` with the last block's output before residual
    /// suppression (the microphone less the echo the filter predicts, with
    /// the room's noise untouched) and the power spectrum of the echo the
    /// suppressor expects to be left in it: 161 bins of 50 Hz, of the last
    /// two blocks under a Hann window. With `heldThroughReverberation`
    /// false, the echo estimated for this block alone, without the hold
    /// through the tail of what the filter missed that the suppressor uses.
    public func withLinearOutput<Result>(heldThroughReverberation: Bool = true,
                                         _ body: (_ output: UnsafeBufferPointer<Float>, _ residualEcho: UnsafeBufferPointer<Float>) -> Result)
        -> Result {
        body(UnsafeBufferPointer(foregroundResidual), UnsafeBufferPointer(heldThroughReverberation ? residualHold : residual))
    }

    /// The spectrum of `signal` (two blocks) into far-end row `row`.
    private func transform(_ signal: UnsafeMutableBufferPointer<Float>, into row: Int) {
        let rows = (row * Self.bins)..<((row + 1) * Self.bins)
        fft.forward(UnsafeBufferPointer(signal), binsReal: UnsafeMutableBufferPointer(rebasing: farReal[rows]),
                    binsImaginary: UnsafeMutableBufferPointer(rebasing: farImaginary[rows]))
    }

    /// The echo a filter predicts for this block: overlap-save, the last block of the inverse.
    private func echoEstimate(_ filter: (real: UnsafeMutableBufferPointer<Float>, imaginary: UnsafeMutableBufferPointer<Float>),
                              into echo: UnsafeMutableBufferPointer<Float>) {
        let bins = Self.bins
        for bin in 0..<bins {
            spectrumReal[bin] = 0
            spectrumImaginary[bin] = 0
        }
        for partition in 0..<Self.partitions {
            let x = ((newest + partition) % Self.partitions) * bins, w = partition * bins
            for bin in 0..<bins {
                let xr = farReal[x + bin], xi = farImaginary[x + bin], wr = filter.real[w + bin], wi = filter.imaginary[w + bin]
                spectrumReal[bin] += wr * xr - wi * xi
                spectrumImaginary[bin] += wr * xi + wi * xr
            }
        }
        inverse(into: frame)
        for index in 0..<Self.blockSize { echo[index] = frame[Self.blockSize + index] }
    }

    /// One proportionate NLMS step of the background filter, then the
    /// overlap-save constraint on two of its partitions (the first and one
    /// more in turn): the others are held to it over successive blocks.
    private func adaptBackground() {
        let n = Self.blockSize, bins = Self.bins, partitions = Self.partitions
        for index in 0..<n {
            frame[index] = 0
            frame[n + index] = backgroundResidual[index]
        }
        transformFrame(into: gradientReal, gradientImaginary)
        var total: Float = 0
        for bin in 0..<bins { pathGain[bin] = 0 }
        for partition in 0..<partitions {
            var sum: Float = 0
            for bin in 0..<bins {
                let w = partition * bins + bin
                let g = background.real[w] * background.real[w] + background.imaginary[w] * background.imaginary[w]
                sum += g
                pathGain[bin] += g
            }
            weights[partition] = sum.squareRoot()
            total += weights[partition]
        }
        let count = Float(partitions)
        for partition in 0..<partitions {
            weights[partition] = count * (1 / (2 * count) + weights[partition] / (2 * total + 1e-12))
        }
        for bin in 0..<bins { normaliser[bin] = Self.regularisation }
        for partition in 0..<partitions {
            let x = ((newest + partition) % partitions) * bins, weight = weights[partition]
            for bin in 0..<bins {
                normaliser[bin] += weight * (farReal[x + bin] * farReal[x + bin] + farImaginary[x + bin] * farImaginary[x + bin])
            }
        }
        for bin in 0..<bins {
            let excitation = normaliser[bin]
            recentExcitation[bin] = Self.recentSmoothing * recentExcitation[bin] + (1 - Self.recentSmoothing) * excitation
            normaliser[bin] = max(excitation, Self.recentFloor * recentExcitation[bin])
            normaliser[bin] += Self.noiseWeight * Self.noiseToExcitation * noiseFloor[bin] / (pathGain[bin] + uncertainty[bin])
            // A block learns of the path what the far end excited and the background did not mask.
            uncertainty[bin] = max(uncertainty[bin] * (1 - Self.stepSize * excitation / (normaliser[bin] * count)), Self.faintestPath)
            gradientReal[bin] /= normaliser[bin]
            gradientImaginary[bin] /= normaliser[bin]
        }
        for partition in 0..<partitions {
            let x = ((newest + partition) % partitions) * bins, w = partition * bins
            let step = Self.stepSize * weights[partition]
            for bin in 0..<bins {
                // conj(X) * E
                let xr = farReal[x + bin], xi = farImaginary[x + bin], er = gradientReal[bin], ei = gradientImaginary[bin]
                background.real[w + bin] += step * (xr * er + xi * ei)
                background.imaginary[w + bin] += step * (xr * ei - xi * er)
            }
        }
        constrain(partition: 0)
        constrain(partition: 1 + constrainedPartition % (partitions - 1))
        constrainedPartition += 1
    }

    /// Turns both filters by the drift followed so far and, every
    /// `driftInterval` blocks, measures how far the foreground has shifted
    /// since the last snapshot.
    private func followClockDrift() {
        if driftPerBlock != 0 {
            turn(background)
            turn(foreground)
        }
        // Not `hasConverged`: a filter that lags the drift far enough adds
        // echo at high frequencies, which reads as a new path. A new path
        // fails the coherence test instead.
        intervalUsable = intervalUsable && !nearEnd.hearsTalker && !(nearEnd == .unknown && nearEndDominates)
        blocksSinceSnapshot += 1
        guard blocksSinceSnapshot >= Self.driftInterval else { return }
        if intervalUsable { measureDrift() }
        _ = snapshot.real.update(fromContentsOf: foreground.real)
        _ = snapshot.imaginary.update(fromContentsOf: foreground.imaginary)
        blocksSinceSnapshot = 0
        intervalUsable = true
    }

    /// Multiplies every partition of `filter` by the drift's rotation.
    private func turn(_ filter: (real: UnsafeMutableBufferPointer<Float>, imaginary: UnsafeMutableBufferPointer<Float>)) {
        let bins = Self.bins
        for partition in 0..<Self.partitions {
            let offset = partition * bins
            for bin in 0..<bins {
                let r = filter.real[offset + bin], i = filter.imaginary[offset + bin]
                filter.real[offset + bin] = r * rotation.real[bin] - i * rotation.imaginary[bin]
                filter.imaginary[offset + bin] = r * rotation.imaginary[bin] + i * rotation.real[bin]
            }
        }
    }

    /// The foreground's shift against the snapshot, from the weighted slope
    /// of their phase difference over the decision band, into the drift.
    private func measureDrift() {
        let bins = Self.bins
        var slope: Float = 0, curvature: Float = 0, correlation: Float = 0, energy: Float = 0
        for bin in Self.decisionBand {
            var real: Float = 0, imaginary: Float = 0, now: Float = 0, then: Float = 0
            for partition in 0..<Self.partitions {
                let w = partition * bins + bin
                let ar = foreground.real[w], ai = foreground.imaginary[w], br = snapshot.real[w], bi = snapshot.imaginary[w]
                // The foreground times the conjugate of the snapshot.
                real += ar * br + ai * bi
                imaginary += ai * br - ar * bi
                now += ar * ar + ai * ai
                then += br * br + bi * bi
            }
            let magnitude = (real * real + imaginary * imaginary).squareRoot()
            let frequency = Float.pi * Float(bin) / Float(bins - 1)
            slope += magnitude * frequency * atan2(imaginary, real)
            curvature += magnitude * frequency * frequency
            correlation += magnitude
            energy += (now * then).squareRoot()
        }
        guard curvature > 0, correlation > Self.driftCoherence * energy else { return }
        // What adaptation moved beyond the turning already applied.
        let interval = Float(Self.driftInterval), shift = slope / curvature - driftPerBlock * interval
        driftPerBlock = min(max(driftPerBlock + Self.driftLoopGain * shift / interval, -Self.largestDrift),
                            Self.largestDrift)
        for bin in 0..<bins {
            let angle = Float.pi * Float(bin) / Float(bins - 1) * driftPerBlock
            rotation.real[bin] = cos(angle)
            rotation.imaginary[bin] = sin(angle)
        }
    }

    /// Zeroes the second half of a partition's impulse response, which
    /// circular convolution would otherwise wrap into the block.
    private func constrain(partition: Int) {
        let bins = Self.bins, offset = partition * bins
        for bin in 0..<bins {
            spectrumReal[bin] = background.real[offset + bin]
            spectrumImaginary[bin] = background.imaginary[offset + bin]
        }
        inverse(into: frame)
        for index in Self.blockSize..<Self.fftSize { frame[index] = 0 }
        transformFrame(into: spectrumReal, spectrumImaginary)
        for bin in 0..<bins {
            background.real[offset + bin] = spectrumReal[bin]
            background.imaginary[offset + bin] = spectrumImaginary[bin]
        }
    }

    /// The spectrum of the `frame` scratch into `real` and `imaginary`.
    private func transformFrame(into real: UnsafeMutableBufferPointer<Float>, _ imaginary: UnsafeMutableBufferPointer<Float>) {
        fft.forward(UnsafeBufferPointer(frame), binsReal: real, binsImaginary: imaginary)
    }

    private func inverse(into signal: UnsafeMutableBufferPointer<Float>) {
        fft.inverse(binsReal: UnsafeBufferPointer(spectrumReal), binsImaginary: UnsafeBufferPointer(spectrumImaginary), signal: signal)
    }

    /// The smoothed power spectrum of the last two blocks of a signal, Hann-windowed.
    private func updatePower(_ smoothedPower: UnsafeMutableBufferPointer<Float>, previous: UnsafeMutableBufferPointer<Float>,
                             current: UnsafeBufferPointer<Float>) {
        let n = Self.blockSize
        for index in 0..<n {
            frame[index] = previous[index] * window[index]
            frame[n + index] = current[index] * window[n + index]
            previous[index] = current[index]
        }
        transformFrame(into: spectrumReal, spectrumImaginary)
        for bin in 0..<Self.bins { power[bin] = spectrumReal[bin] * spectrumReal[bin] + spectrumImaginary[bin] * spectrumImaginary[bin] }
        Self.smoothAcrossBins(power, into: smoothed)
        let a = Self.spectrumSmoothing
        for bin in 0..<Self.bins { smoothedPower[bin] = a * smoothedPower[bin] + (1 - a) * smoothed[bin] }
    }

    /// `[1/4, 1/2, 1/4]` across bins, with nothing beyond the ends.
    private static func smoothAcrossBins(_ values: UnsafeMutableBufferPointer<Float>, into result: UnsafeMutableBufferPointer<Float>) {
        let last = values.count - 1
        for bin in 0...last {
            let below = bin > 0 ? values[bin - 1] : 0, above = bin < last ? values[bin + 1] : 0
            result[bin] = 0.25 * below + 0.5 * values[bin] + 0.25 * above
        }
    }

    /// The spectra of the microphone, the filter's output and its echo
    /// estimate, the filter's ERLE per bin, and the residual echo it leaves.
    private func estimateResidual(mic: UnsafeMutableBufferPointer<Float>) {
        let bins = Self.bins
        updatePower(micPower, previous: previousMic, current: UnsafeBufferPointer(mic))
        updatePower(errorPower, previous: previousError, current: UnsafeBufferPointer(foregroundResidual))
        _ = outputReal.update(fromContentsOf: spectrumReal)
        _ = outputImaginary.update(fromContentsOf: spectrumImaginary)
        updatePower(echoPower, previous: previousEcho, current: UnsafeBufferPointer(foregroundEcho))
        measureEchoCoherence()

        var micSum: Float = 0, errorSum: Float = 0, echoSum: Float = 0
        for bin in Self.decisionBand {
            micSum += micPower[bin]
            errorSum += errorPower[bin]
            echoSum += echoPower[bin]
        }
        let farActive = echoSum > 1e-6
        let nearTalk = micSum / (echoSum + 1e-10) > Self.nearTalkRatio
        nearEndDominates = nearTalk
        // The filter adds power where it should remove it: it is misadjusted.
        let failing = errorSum > micSum && echoSum > 0.3 * micSum
        // A talker adds to the echo: a microphone holding less than the
        // echo predicted tells a filter that misjudges it, as in the first
        // blocks after the echo path moves, before the coherence follows.
        let overestimating = micSum < echoSum
        let quarterOfEcho = errorSum > Self.audibleNearRatio * echoSum
        nearEndAudible = !failing && !overestimating && quarterOfEcho && echoCoherence < Self.audibleIncoherentBelow
        if farActive && hasConverged {
            leastLeakage = min(leastLeakage, errorSum / echoSum)
            leakageBlocks += 1
            if leakageBlocks % Self.leakageWindow == 0 {
                previousLeastLeakage = leastLeakage
                leastLeakage = .infinity
            }
        }
        let lately = Self.apartOverLeastLeakage * min(leastLeakage, previousLeastLeakage)
        let apartRatio = min(Self.apartNearRatio, max(lately, Self.leastApartRatio))
        nearEndApartFromEcho = !failing && errorSum > apartRatio * echoSum && echoCoherence < Self.incoherentBelow
        outputHoldsOnlyEcho = overestimating || !failing && (errorSum < Self.echoOnlyRatio * echoSum || (!hasConverged && !nearTalk))
        // Once the foreground has taken up the background, a burst that was
        // the echo of a moved path leaves no more than echo, block after
        // block; a talker's voice soon rises above it again.
        blocksToCheckPath = blocksToCheckPath > 0 && outputHoldsOnlyEcho ? blocksToCheckPath - 1 : 0
        // An output that holds a quarter of the echo and follows its
        // estimate, with no talker heard, is echo the filter misjudges:
        // what the filter removes is taken to fall as fast as where it
        // fails, or the suppressor's estimate stays the old path's for seconds.
        let misjudging = failing || (echoCoherence > Self.echoCoherentAbove && quarterOfEcho && !nearEnd.talkerNear)
        // Whatever it had learnt no longer holds: it converges anew.
        failingBlocks = failing ? failingBlocks + 1 : 0
        if failingBlocks >= Self.failedAfter {
            for bin in 0..<bins { uncertainty[bin] = max(uncertainty[bin], Self.initialUncertainty) }
            activeBlocks = 0
            blocksToConverge = Self.reconvergenceBlocks
            leastLeakage = .infinity
            previousLeastLeakage = .infinity
        }
        if farActive && (failing || !nearTalk) {
            for bin in 0..<bins where failing || micPower[bin] < Self.echoDominated * echoPower[bin] {
                let target = log(min(max(echoPower[bin] / (errorPower[bin] + 1e-12), 1), 1_000))
                let rate = target > logERLE[bin] ? Self.erleRising : misjudging ? Self.erleFailing : Self.erleFalling
                logERLE[bin] += rate * (target - logERLE[bin])
            }
        }
        for bin in 0..<bins {
            residual[bin] = echoPower[bin] / exp(logERLE[bin])
            residualHold[bin] = max(residual[bin], Self.reverberationHold * residualHold[bin])
        }
    }

    /// The mean over the decision band of the output's magnitude-squared
    /// coherence with the echo estimate, from this block's spectra (the
    /// output's kept from `updatePower`, the echo's still in the scratch).
    private func measureEchoCoherence() {
        let a = Self.coherenceSmoothing
        var sum: Float = 0
        for bin in Self.decisionBand {
            let outR = outputReal[bin], outI = outputImaginary[bin], echoR = spectrumReal[bin], echoI = spectrumImaginary[bin]
            crossReal[bin] = a * crossReal[bin] + (1 - a) * (outR * echoR + outI * echoI)
            crossImaginary[bin] = a * crossImaginary[bin] + (1 - a) * (outI * echoR - outR * echoI)
            outputAuto[bin] = a * outputAuto[bin] + (1 - a) * (outR * outR + outI * outI)
            echoAuto[bin] = a * echoAuto[bin] + (1 - a) * (echoR * echoR + echoI * echoI)
            let cross = crossReal[bin] * crossReal[bin] + crossImaginary[bin] * crossImaginary[bin]
            sum += cross / (outputAuto[bin] * echoAuto[bin] + 1e-20)
        }
        echoCoherence = sum / Float(Self.decisionBand.count)
    }

    /// The output's log spectrum follows the echo estimate's over the
    /// decision band (correlation over `echoShapedAbove`): what fills it is
    /// the echo the filter misjudges, as after the echo path changed, more
    /// than a voice of its own.
    private func outputShapedLikeEcho() -> Bool {
        var e: Float = 0, x: Float = 0, ee: Float = 0, xx: Float = 0, ex: Float = 0
        for bin in Self.decisionBand {
            let output = log(errorPower[bin] + 1e-12), echo = log(echoPower[bin] + 1e-12)
            e += output
            x += echo
            ee += output * output
            xx += echo * echo
            ex += output * echo
        }
        let count = Float(Self.decisionBand.count)
        let covariance = ex / count - e * x / (count * count)
        let spread = ((ee / count - e * e / (count * count)) * (xx / count - x * x / (count * count))).squareRoot()
        return covariance > Self.echoShapedAbove * spread
    }

    /// Follows the background of the linear output: the minimum it keeps
    /// returning to, under the echo the filter leaves and under speech.
    private func trackNoiseFloor() {
        for bin in 0..<Self.bins {
            let current = errorPower[bin], floor = noiseFloor[bin]
            if floor == 0 {
                noiseFloor[bin] = current
            } else if current < floor {
                noiseFloor[bin] = floor + Self.floorFalling * (current - floor)
            } else {
                noiseFloor[bin] = min(floor * Self.floorRising, current)
            }
        }
    }

    /// Follows the background as the comfort noise gives it back: as
    /// `trackNoiseFloor` does, but climbing fast from its start until the
    /// output first falls under it (`floorClimbing`), and after that rising
    /// only where the output holds more than the residual echo estimated,
    /// or it would climb onto the echo a drifting clock leaves.
    private func trackComfortFloor() {
        for bin in 0..<Self.bins {
            let current = errorPower[bin], floor = comfortFloor[bin]
            let holdsNoEcho = residualHold[bin] < floor || hasConverged && echoPower[bin] < floor
            if floor == 0 {
                comfortFloor[bin] = current
            } else if current < floor {
                comfortFloor[bin] = floor + Self.floorFalling * (current - floor)
                comfortFloorFound[bin] = 1
            } else if comfortFloorFound[bin] == 0 && holdsNoEcho {
                comfortFloor[bin] = min(floor * Self.floorClimbing, current)
            } else if residualHold[bin] < current {
                comfortFloor[bin] = min(floor * Self.floorRising, current)
            }
        }
    }

    /// Adds what the gains took of the background back as noise of random
    /// phase, overlapped by half under a square-root Hann window.
    private func addComfortNoise(to output: UnsafeMutableBufferPointer<Float>) {
        let n = Self.blockSize
        // The power spectra are of Hann-windowed frames, 3/8 of the frame's
        // energy; a frame synthesised from them needs the rest back.
        let scale = Self.floorBias * 8 / 3
        spectrumReal[0] = 0
        spectrumImaginary[0] = 0
        for bin in 1..<Self.bins {
            let removed = max(0, 1 - gains[bin] * gains[bin])
            let magnitude = (scale * comfortFloor[bin] * removed).squareRoot()
            let phase = 2 * Float.pi * noise.next()
            spectrumReal[bin] = magnitude * cos(phase)
            spectrumImaginary[bin] = bin == Self.bins - 1 ? 0 : magnitude * sin(phase)
        }
        inverse(into: comfort)
        for index in 0..<n {
            output[index] += comfortTail[index] + comfort[index] * synthesisWindow[index]
            comfortTail[index] = comfort[n + index] * synthesisWindow[n + index]
        }
    }

    /// Filters the foreground's residual by the gains, as a zero-phase FIR
    /// of ±32 taps convolved within the block, into `output`.
    private func applyGains(to output: UnsafeMutableBufferPointer<Float>) {
        let n = Self.blockSize, bins = Self.bins, held = history.count
        for bin in 0..<bins {
            spectrumReal[bin] = gains[bin]
            spectrumImaginary[bin] = 0
        }
        inverse(into: frame)
        for index in 0..<Self.fftSize { frame[index] *= gainWindow[index] }
        transformFrame(into: filterReal, filterImaginary)
        for index in 0..<held { frame[index] = history[index] }
        for index in 0..<n { frame[held + index] = foregroundResidual[index] }
        for index in (held + n)..<Self.fftSize { frame[index] = 0 }
        transformFrame(into: spectrumReal, spectrumImaginary)
        for bin in 0..<bins {
            let r = spectrumReal[bin] * filterReal[bin] - spectrumImaginary[bin] * filterImaginary[bin]
            let i = spectrumReal[bin] * filterImaginary[bin] + spectrumImaginary[bin] * filterReal[bin]
            spectrumReal[bin] = r
            spectrumImaginary[bin] = i
        }
        inverse(into: frame)
        for index in 0..<n { output[index] = frame[held + index] }
        // The history keeps the last `held` samples of the residual.
        for index in 0..<held {
            let source = index + n
            history[index] = source < held ? history[source] : foregroundResidual[source - held]
        }
    }
}
