import Testing
import Voice

@Suite struct MutedTalkerTests {
    /// Events and the frames they came on, for per-frame speech and mute.
    static func events(_ speech: [Bool], muted: [Bool]) -> [(frame: Int, change: MutedTalkerDetector.Change)] {
        var detector = MutedTalkerDetector(frameSeconds: 0.01)
        return speech.indices.compactMap { frame in
            detector.update(speech: speech[frame], muted: muted[frame]).map { (frame, $0) }
        }
    }

    static func frames(_ runs: [(Bool, Int)]) -> [Bool] { runs.flatMap { [Bool](repeating: $0.0, count: $0.1) } }

    @Test func oneStartedPerBurstAndEndedHalfASecondAfter() {
        // 1 s of speech, 0.3 s pause (merged), 0.5 s speech, then 2 s of quiet.
        let speech = Self.frames([(false, 50), (true, 100), (false, 30), (true, 50), (false, 200)])
        let events = Self.events(speech, muted: [Bool](repeating: true, count: speech.count))
        #expect(events.map(\.change) == [.started, .ended])
        #expect(events[0].frame == 50)
        // Speech stopped at frame 230: ended no earlier than 50 frames later.
        #expect(events[1].frame == 280, "ended at frame \(events[1].frame)")
    }

    @Test func burstsFurtherApartAreSeparate() {
        let speech = Self.frames([(true, 40), (false, 80), (true, 40), (false, 80)])
        #expect(Self.events(speech, muted: [Bool](repeating: true, count: speech.count)).map(\.change) == [.started, .ended, .started, .ended])
    }

    @Test func nothingWhileUnmutedAndUnmutingClosesABurst() {
        let speech = Self.frames([(true, 100), (false, 100)])
        #expect(Self.events(speech, muted: [Bool](repeating: false, count: speech.count)).isEmpty)
        let muted = Self.frames([(true, 60), (false, 140)])
        let events = Self.events(speech, muted: muted)
        #expect(events.map(\.change) == [.started, .ended] && events[1].frame == 60)
    }
}
