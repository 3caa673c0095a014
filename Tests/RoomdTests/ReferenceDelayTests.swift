@testable import Engine
import Testing

/// The echo reference's delay, settled from latency readings that swing by a
/// fragment or two with where they fall in the streams' callbacks.
struct ReferenceDelayTests {
    /// Readings that swing 7.5 ms either side of `frames` in a scrambled order, as roomd's do.
    static func swinging(around frames: Int, count: Int) -> [Int] {
        (0..<count).map { frames - 360 + ($0 * 379) % 720 }
    }

    /// Where the delay may settle: early by up to the swing and the margin, never late.
    static func settled(around frames: Int) -> ClosedRange<Int> {
        (frames - 360 - ReferenceDelayEstimate.margin)...(frames - ReferenceDelayEstimate.margin)
    }

    @Test func holdsStillWhileTheReadingsSwing() {
        var estimate = ReferenceDelayEstimate()
        let changes = Self.swinging(around: 1_440, count: 200).compactMap { estimate.update(reading: $0) }
        print("reference delay changes over 20 s of swinging readings: \(changes)")
        #expect(changes.count <= 2, "the first reading, and at most one move as the window fills")
        #expect(estimate.delay.map(Self.settled(around: 1_440).contains) == true)
    }

    /// However the readings come, the delay held is never later than the low percentile of those in the window.
    @Test func isNeverLaterThanTheReadings() {
        var estimate = ReferenceDelayEstimate()
        // A 10 ms swing that starts at its top, then a path 8 ms shorter.
        let readings = (0..<40).map { 1_440 + 240 - ($0 * 379) % 480 } + (0..<40).map { 1_056 + 240 - ($0 * 379) % 480 }
        for (index, reading) in readings.enumerated() {
            _ = estimate.update(reading: reading)
            let window = readings[max(0, index - ReferenceDelayEstimate.window + 1)...index].sorted()
            let percentile = window[window.count / 10]
            #expect(estimate.delay.map { $0 <= percentile } == true, "reading \(index): delay \(estimate.delay ?? -1) after a low of \(percentile)")
        }
    }

    @Test func followsALongerPathWithinTwoSeconds() {
        var estimate = ReferenceDelayEstimate()
        for reading in Self.swinging(around: 1_440, count: 50) { _ = estimate.update(reading: reading) }
        let moves = Self.swinging(around: 4_320, count: 20).compactMap { estimate.update(reading: $0) }
        print("a path 60 ms longer, over the next 2 s of readings: \(moves)")
        #expect(estimate.delay.map(Self.settled(around: 4_320).contains) == true)
    }
}
