import Network
import Testing

@Suite struct JitterBufferTests {
    static let frame = JitterBuffer.frameSamples

    /// A talker's 20 ms packets, numbered from 0 (Mumble sequence 0, 2, 4...), through one buffer.
    final class Talker {
        let buffer: JitterBuffer
        private var output: [UInt8]

        init(_ buffer: JitterBuffer = JitterBuffer()) {
            self.buffer = buffer
            output = [UInt8](repeating: 0, count: buffer.maxPacketBytes)
        }

        /// Packet `number`, whose bytes say its number.
        @discardableResult
        func put(_ number: Int, last: Bool = false) -> JitterBuffer.Admission {
            let bytes: [UInt8] = [UInt8(truncatingIfNeeded: number), UInt8(truncatingIfNeeded: number >> 8), 0xEE]
            return bytes.withUnsafeBytes {
                buffer.put($0, timestamp: JitterBuffer.timestamp(sequence: Int64(number) * 2), span: frame, isLastInSpurt: last)
            }
        }

        /// One 20 ms period: what the buffer gives, and the number of the packet if it gave one.
        func play() -> (outcome: JitterBuffer.Outcome, number: Int?) {
            let outcome = output.withUnsafeMutableBytes { buffer.get(into: $0) }
            buffer.tick()
            guard case .packet(let length, _, _, _) = outcome else { return (outcome, nil) }
            #expect(length == 3 && output[2] == 0xEE)
            return (outcome, Int(output[0]) | Int(output[1]) << 8)
        }
    }

    @Test func nothingComesBeforeTheFirstPacket() {
        let talker = Talker()
        #expect(talker.play().outcome == .empty)
        #expect(talker.buffer.delay == 0)
    }

    @Test func packetsPutOutOfOrderComeOutInOrder() {
        let talker = Talker()
        for number in [1, 0, 3, 2, 5, 4, 7, 6, 9, 8] {
            #expect(talker.put(number, last: number == 9) == .accepted)
        }
        #expect(talker.buffer.delay == 10 * Self.frame)
        for number in 0..<10 {
            let (outcome, played) = talker.play()
            #expect(outcome == .packet(length: 3, timestamp: UInt32(number * Self.frame), span: Self.frame,
                                       isLastInSpurt: number == 9))
            #expect(played == number)
        }
        #expect(talker.buffer.delay == 0)
    }

    @Test func aLostPacketIsMissing() {
        let talker = Talker()
        for number in 0..<10 {
            if number != 4 { talker.put(number) }
            let (outcome, played) = talker.play()
            if number == 4 {
                #expect(outcome == .missing(span: Self.frame))
            } else {
                #expect(played == number, "\(outcome)")
            }
        }
    }

    @Test func aShortPacketLeavesTheRestToAskFor() {
        let talker = Talker()
        let bytes: [UInt8] = [1, 2, 3]
        var output = [UInt8](repeating: 0, count: talker.buffer.maxPacketBytes)
        // Two 10 ms packets, the second lost.
        bytes.withUnsafeBytes { _ = talker.buffer.put($0, timestamp: 0, span: 480) }
        #expect(output.withUnsafeMutableBytes { talker.buffer.get(into: $0) } == .packet(length: 3, timestamp: 0, span: 480, isLastInSpurt: false))
        #expect(output.withUnsafeMutableBytes { talker.buffer.get(into: $0, span: 480) } == .missing(span: 480))
        talker.buffer.tick()
    }

    @Test func theDelayStaysBoundedOverAJitteryNetwork() {
        let talker = Talker()
        var random = SeededBytes(seed: 5)
        // Packet n leaves at 20 n ms and takes 0 to 60 ms to arrive.
        let arrivals = (0..<1_000).map { ($0, 20 * $0 + random.next(below: 61)) }.sorted { $0.1 < $1.1 }
        var next = 0, played = 0, concealed = 0, largestDelay = 0
        for period in 0..<1_010 {
            while next < arrivals.count && arrivals[next].1 <= 20 * period {
                #expect(talker.put(arrivals[next].0) != .full)
                next += 1
            }
            let delay = talker.buffer.delay
            if period >= 50 { largestDelay = max(largestDelay, delay) }
            switch talker.play().outcome {
            case .packet: played += 1
            case .missing, .insertion: concealed += 1
            case .empty: break
            }
        }
        // 60 ms of jitter needs about 60 ms of buffering: it holds no more than two frames beyond that,
        // and plays nearly every packet (SpeexDSP aims at no more than 4 % late).
        #expect(largestDelay <= 100 * 48, "delay reached \(largestDelay / 48) ms")
        #expect(played >= 960, "\(played) of 1000 packets played, \(concealed) periods concealed")
    }

    @Test func latePacketsDoNotUseUpTheSlots() {
        let talker = Talker(JitterBuffer(capacity: 4))
        for number in 0..<20 {
            talker.put(number)
            #expect(talker.play().number == number)
        }
        for number in 0..<50 {
            #expect(talker.put(number % 10) == .late)
        }
        // So many late packets make the buffer wait longer; what comes next still all plays, in order.
        var played: [Int] = []
        for number in 20..<30 {
            #expect(talker.put(number) == .accepted)
            if let number = talker.play().number { played.append(number) }
        }
        for _ in 0..<5 {
            if let number = talker.play().number { played.append(number) }
        }
        #expect(played == Array(20..<30))
    }

    @Test func packetsOverASecondLateDoNotThrowPlaybackAhead() {
        let talker = Talker()
        for number in 0..<100 {
            talker.put(number)
            #expect(talker.play().number == number)
        }
        // A burst from a second ago, as after a stalled connection.
        for number in 50..<60 {
            #expect(talker.put(number) == .late)
        }
        var played: [Int] = []
        for number in 100..<150 {
            talker.put(number)
            if let number = talker.play().number { played.append(number) }
        }
        #expect(played == Array(100..<150))
    }

    @Test func aFullBufferRefusesPacketsUntilOnePlays() {
        let talker = Talker(JitterBuffer(capacity: 4))
        let admissions = (0..<6).map { talker.put($0) }
        #expect(admissions == [.accepted, .accepted, .accepted, .accepted, .full, .full])
        #expect(talker.play().number == 0)
        #expect(talker.put(4) == .accepted)
        let bytes = [UInt8](repeating: 0, count: talker.buffer.maxPacketBytes + 1)
        #expect(bytes.withUnsafeBytes { talker.buffer.put($0, timestamp: 5 * 960, span: 960) } == .tooLarge)
    }

    @Test func aTalkerBackAfterALongSilencePlaysFromItsNewPackets() {
        let talker = Talker()
        for number in 500..<510 {
            talker.put(number)
            #expect(talker.play().number == number)
        }
        for _ in 0..<30 {
            #expect(talker.play().outcome == .missing(span: Self.frame))
        }
        // Restarted: its sequence numbers begin again far behind.
        for number in 0..<10 {
            #expect(talker.put(number) == .accepted)
            #expect(talker.play().number == number)
        }
    }

    @Test func aPacketComesOutAsItWentInWhateverTheNetworkDoes() {
        // Small, so slots are reused all the time: a slot given out while SpeexDSP still
        // held it would hand back another packet's bytes.
        let buffer = JitterBuffer(capacity: 6, maxPacketBytes: 8)
        var random = SeededBytes(seed: 9)
        var output = [UInt8](repeating: 0, count: 8)
        var sent = 0, played = 0
        for period in 0..<20_000 {
            // Duplicates, losses, reordering, stale and far-future packets, and restarts.
            for _ in 0..<random.next(below: 3) {
                let number: Int
                switch random.next(below: 10) {
                case 0: number = max(0, sent - 30 + random.next(below: 30))
                case 1: number = sent + 50 + random.next(below: 500)
                case 2: number = random.next(below: 100)
                default: number = sent + random.next(below: 4)
                }
                let timestamp = UInt32(number * Self.frame)
                let bytes = withUnsafeBytes(of: timestamp.littleEndian) { [UInt8]($0) } + [0xEE, 0xEE, 0xEE, 0xEE]
                bytes.withUnsafeBytes { _ = buffer.put($0, timestamp: timestamp, span: Self.frame) }
            }
            if random.next(below: 5) > 0 { sent += 1 }
            if case .packet(let length, let timestamp, _, _) = output.withUnsafeMutableBytes({ buffer.get(into: $0) }) {
                played += 1
                #expect(length == 8 && output[4..<8].allSatisfy { $0 == 0xEE })
                #expect(output[0..<4].reversed().reduce(0) { $0 << 8 | UInt32($1) } == timestamp, "period \(period)")
            }
            buffer.tick()
            if random.next(below: 2_000) == 0 { buffer.reset() }
        }
        #expect(played > 1_000, "\(played) played")
        // Every slot comes back: none is lost to a packet SpeexDSP dropped.
        buffer.reset()
        let bytes = [UInt8](repeating: 0, count: 8)
        for number in 0..<6 {
            #expect(bytes.withUnsafeBytes { buffer.put($0, timestamp: UInt32(number * Self.frame), span: Self.frame) } == .accepted)
        }
    }

    @Test func resetForgetsEverything() {
        let talker = Talker()
        for number in 0..<5 { talker.put(number) }
        talker.buffer.reset()
        #expect(talker.buffer.delay == 0)
        #expect(talker.play().outcome == .empty)
        talker.put(40)
        #expect(talker.play().number == 40)
    }
}
