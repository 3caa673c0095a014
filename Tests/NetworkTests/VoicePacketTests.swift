import Network
import Testing

@Suite struct MumbleVarintTests {
    /// Values and the bytes Mumble writes for them.
    static let known: [(Int64, [UInt8])] = [
        (0, [0x00]),
        (0x7F, [0x7F]),
        (0x80, [0x80, 0x80]),
        (0x3FFF, [0xBF, 0xFF]),
        (0x4000, [0xC0, 0x40, 0x00]),
        (0x1F_FFFF, [0xDF, 0xFF, 0xFF]),
        (0x20_0000, [0xE0, 0x20, 0x00, 0x00]),
        (0x0FFF_FFFF, [0xEF, 0xFF, 0xFF, 0xFF]),
        (0x1000_0000, [0xF0, 0x10, 0x00, 0x00, 0x00]),
        (0xFFFF_FFFF, [0xF0, 0xFF, 0xFF, 0xFF, 0xFF]),
        (0x1_0000_0000, [0xF4, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00]),
        (Int64.max, [0xF4, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]),
        (-1, [0xFC]),
        (-4, [0xFF]),
        (-5, [0xF8, 0x04]),
        (-0x1_0000_0000, [0xF8, 0xF0, 0xFF, 0xFF, 0xFF, 0xFF]),
        (-0x1_0000_0001, [0xF4, 0xFF, 0xFF, 0xFF, 0xFE, 0xFF, 0xFF, 0xFF, 0xFF]),
        (Int64.min, [0xF4, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00]),
    ]

    @Test func writesAndReadsMumblesForms() {
        for (value, encoding) in Self.known {
            var bytes: [UInt8] = []
            MumbleVarint.append(value, to: &bytes)
            #expect(bytes == encoding, "\(value)")
            var position = 0
            #expect(MumbleVarint.read(from: encoding, at: &position) == value)
            #expect(position == encoding.count)
        }
    }

    @Test func aTruncatedValueReadsAsNothingAndMovesNothing() {
        for (value, encoding) in Self.known {
            for length in 0..<encoding.count {
                var position = 0
                #expect(MumbleVarint.read(from: encoding[..<length], at: &position) == nil, "\(value) cut to \(length)")
                #expect(position == 0)
            }
        }
    }

    @Test func nestedComplementsAreReadWithoutRecursion() {
        // Two complements cancel; a hundred thousand prefixes with nothing after them are truncated.
        var position = 0
        #expect(MumbleVarint.read(from: [0xF8, 0xF8, 0x05], at: &position) == 5)
        position = 0
        #expect(MumbleVarint.read(from: [UInt8](repeating: 0xF8, count: 100_000), at: &position) == nil)
    }

    @Test func readsFromTheMiddleOfASlice() {
        let bytes: [UInt8] = [0xAA, 0x80, 0x80, 0x7F]
        let slice = bytes[1...]
        var position = slice.startIndex
        #expect(MumbleVarint.read(from: slice, at: &position) == 0x80)
        #expect(MumbleVarint.read(from: slice, at: &position) == 0x7F)
        #expect(position == slice.endIndex)
    }
}

@Suite struct VoicePacketTests {
    static let opus: [UInt8] = [0x78, 0x01, 0x02, 0x03, 0x04]

    static func parse(_ bytes: [UInt8], fromServer: Bool) throws(VoicePacketError) -> VoicePacket {
        try VoicePacket.parse(bytes, fromServer: fromServer).get()
    }

    @Test(arguments: [Int64(0), 1, 0x7F, 0x80, 0x3FFF, 0x4000, 0x1F_FFFF, 0x20_0000, 0x0FFF_FFFF,
                      0x1000_0000, 0xFFFF_FFFF, 0x1_0000_0000, VoicePacket.maxSequence])
    func roundTripsEitherWay(sequence: Int64) throws {
        let positions: [SIMD3<Float>?] = [nil, SIMD3(1.5, -2, 1e6)]
        for session in [nil, UInt32(7), UInt32.max] {
            for position in positions {
                for last in [false, true] {
                    let packet = VoicePacket(target: 31, session: session, sequence: sequence, opus: Self.opus,
                                             isLastInSpurt: last, position: position)
                    let bytes = packet.encoded()
                    #expect(try Self.parse(bytes, fromServer: session != nil) == packet)
                }
            }
        }
    }

    @Test func theWireFormatIsMumbles() throws {
        let packet = VoicePacket(target: 2, session: 300, sequence: 0x4000, opus: [0xAB], isLastInSpurt: true,
                                 position: SIMD3(1, 0, -2))
        #expect(packet.encoded() == [0x82,                        // Opus, target 2
                                     0x81, 0x2C,                  // session 300
                                     0xC0, 0x40, 0x00,            // sequence 0x4000
                                     0xA0, 0x01,                  // one byte, last in its spurt
                                     0xAB,
                                     0x00, 0x00, 0x80, 0x3F,      // 1
                                     0x00, 0x00, 0x00, 0x00,      // 0
                                     0x00, 0x00, 0x00, 0xC0])     // -2
        var client = packet
        client.session = nil
        client.position = nil
        client.isLastInSpurt = false
        #expect(client.encoded() == [0x82, 0xC0, 0x40, 0x00, 0x01, 0xAB])
    }

    @Test func aBareEndOfSpurtHasNoFrame() throws {
        let packet = try Self.parse([0x80, 0x01, 0xA0, 0x00], fromServer: false)
        #expect(packet.opus.isEmpty && packet.isLastInSpurt && packet.sequence == 1)
        #expect(packet.encoded() == [0x80, 0x01, 0xA0, 0x00])
    }

    /// Hostile packets and why each is dropped.
    static let hostile: [(String, [UInt8], Bool, VoicePacketError)] = [
        ("empty", [], true, .empty),
        ("header only, from the server", [0x80], true, .truncated(.session)),
        ("header only, to the server", [0x80], false, .truncated(.sequence)),
        ("a truncated session", [0x80, 0xC0, 0x01], true, .truncated(.session)),
        ("a truncated sequence", [0x80, 0x05, 0xE0, 0x01], true, .truncated(.sequence)),
        ("no frame header", [0x80, 0x05, 0x01], true, .truncated(.frameHeader)),
        ("a truncated frame header", [0x80, 0x05, 0x01, 0x85], true, .truncated(.frameHeader)),
        ("a length beyond the end", [0x80, 0x01, 0x05, 0xAA, 0xBB], false, .frameBeyondEnd(length: 5, remaining: 2)),
        ("the longest length, no frame", [0x80, 0x01, 0xBF, 0xFF], false, .frameBeyondEnd(length: 0x1FFF, remaining: 0)),
        ("an empty frame mid-spurt", [0x80, 0x01, 0x00], false, .emptyFrame),
        ("a length beyond 13 bits and the end bit", [0x80, 0x01, 0xC0, 0x40, 0x00], false, .invalidFrameHeader(0x4000)),
        ("a negative length", [0x80, 0x01, 0xFC], false, .invalidFrameHeader(-1)),
        ("CELT Alpha", [0x00, 0x01, 0x01, 0xAA], false, .unsupportedType(0)),
        ("a ping", [0x20, 0x05], false, .unsupportedType(1)),
        ("Speex", [0x40, 0x01, 0x01, 0xAA], false, .unsupportedType(2)),
        ("CELT Beta", [0x60, 0x01, 0x01, 0xAA], false, .unsupportedType(3)),
        ("an unused type", [0xE0, 0x01, 0x01, 0xAA], false, .unsupportedType(7)),
        ("11 trailing bytes", [0x80, 0x01, 0x01, 0xAA] + [UInt8](repeating: 0, count: 11), false, .trailingBytes(11)),
        ("13 trailing bytes", [0x80, 0x01, 0x01, 0xAA] + [UInt8](repeating: 0, count: 13), false, .trailingBytes(13)),
        ("one trailing byte", [0x80, 0x01, 0x01, 0xAA, 0x00], false, .trailingBytes(1)),
        ("a NaN position", [0x80, 0x01, 0x01, 0xAA] + [0, 0, 0xC0, 0x7F] + [UInt8](repeating: 0, count: 8), false, .nonFinitePosition),
        ("an infinite position", [0x80, 0x01, 0x01, 0xAA] + [UInt8](repeating: 0, count: 8) + [0, 0, 0x80, 0xFF], false, .nonFinitePosition),
        ("sequence -1", [0x80, 0x07, 0xFC, 0x01, 0xAA], true, .sequenceOutOfRange(-1)),
        ("sequence -5", [0x80, 0xF8, 0x04, 0x01, 0xAA], false, .sequenceOutOfRange(-5)),
        ("the most negative sequence", [0x80, 0xF4, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x01, 0xAA], false, .sequenceOutOfRange(.min)),
        ("a sequence past the limit", [0x80, 0xF4, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0xAA], false,
         .sequenceOutOfRange(.max)),
        ("a negative session", [0x80, 0xFD, 0x01, 0x01, 0xAA], true, .sessionOutOfRange(-2)),
        ("a session beyond 32 bits", [0x80, 0xF4, 0, 0, 0, 0x01, 0, 0, 0, 0, 0x01, 0x01, 0xAA], true,
         .sessionOutOfRange(0x1_0000_0000)),
    ]

    @Test func hostilePacketsAreDroppedWithTheirReason() {
        for (name, bytes, fromServer, reason) in Self.hostile {
            #expect(throws: reason, "\(name)") { try Self.parse(bytes, fromServer: fromServer) }
        }
    }

    @Test func reasonsCountAsTheSameWords() {
        #expect(VoicePacketError.frameBeyondEnd(length: 5, remaining: 2).description
                == VoicePacketError.frameBeyondEnd(length: 900, remaining: 3).description)
        #expect(VoicePacketError.unsupportedType(2).description == "unsupported type 2 (Speex)")
        #expect(VoicePacketError.truncated(.frameHeader).description == "truncated in the frame header")
    }

    @Test func randomBytesAreParsedOrReported() throws {
        var random = SeededBytes(seed: 7)
        var parsed = 0, reasons: [String: Int] = [:]
        let valid = VoicePacket(session: 12, sequence: 0x12_3456, opus: [UInt8](repeating: 0x55, count: 40),
                                position: SIMD3(1, 2, 3)).encoded()
        for round in 0..<10_000 {
            var bytes: [UInt8]
            switch round % 3 {
            case 0:
                // Anything at all.
                bytes = random.bytes(count: random.next(below: 48))
            case 1:
                // An Opus header, then anything.
                bytes = [0x80 | UInt8(random.next(below: 32))] + random.bytes(count: random.next(below: 48))
            default:
                // A valid packet cut short, with some bytes changed.
                bytes = Array(valid[..<random.next(below: valid.count + 1)])
                for _ in 0..<random.next(below: 3) where !bytes.isEmpty {
                    bytes[random.next(below: bytes.count)] = UInt8(truncatingIfNeeded: random.next())
                }
            }
            let fromServer = round % 2 == 0
            switch VoicePacket.parse(bytes, fromServer: fromServer) {
            case .success(let packet):
                parsed += 1
                #expect(packet.opus.count <= VoicePacket.maxFrameBytes && packet.target < 32)
                #expect((0...VoicePacket.maxSequence).contains(packet.sequence))
                #expect(packet.opus.count > 0 || packet.isLastInSpurt)
                // What parses writes back to a packet that parses the same.
                #expect(try Self.parse(packet.encoded(), fromServer: fromServer) == packet)
            case .failure(let reason):
                reasons[reason.description, default: 0] += 1
            }
        }
        #expect(parsed + reasons.values.reduce(0, +) == 10_000)
        #expect(parsed > 0 && reasons.count > 5, "\(parsed) parsed; dropped: \(reasons)")
    }
}
