
/// How late the microphone hears the output, settled from the devices'
/// reported latencies.
///
/// Each reading is the playback latency, the capture latency and what waits
/// in the microphone's ring, taken at whatever point of the streams'
/// callbacks the reading falls: it swings by a fragment or two while the
/// true delay holds still. Every change of the reference's delay makes the
/// echo canceller's filter slip, so the delay follows a low percentile of
/// the last two seconds of readings, less a margin, and moves only when
/// that moves by more than 10 ms: a new stream, another device. A reference
/// a little early costs the canceller a few taps of its 0.42 s; a late one
/// would leave the echo's start uncancelled. The margin is as wide as the
/// hysteresis, so the delay held is never later than the percentile.
struct ReferenceDelayEstimate {
    /// Readings every 100 ms: two seconds of them.
    static let window = 20
    static let hysteresis = Room.sampleRate * 10 / 1000
    static let margin = hysteresis

    private var readings: [Int] = []
    private var next = 0
    /// The delay in use; nil until the first reading after a reset.
    private(set) var delay: Int?

    /// Takes a reading; the delay to use from now on when it should change.
    mutating func update(reading: Int) -> Int? {
        if readings.count < Self.window {
            readings.append(reading)
        } else {
            readings[next] = reading
            next = (next + 1) % Self.window
        }
        let sorted = readings.sorted()
        let settled = max(0, sorted[sorted.count / 10] - Self.margin)
        if let delay, abs(settled - delay) <= Self.hysteresis { return nil }
        delay = settled
        return settled
    }

    /// Forgets the readings: the streams or the engine are new.
    mutating func reset() { self = ReferenceDelayEstimate() }
}
