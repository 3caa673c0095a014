/// One Opus voice packet in Mumble's legacy format (before 1.5's protobuf
/// voice), as the UDP tunnel carries it. After a header byte (the codec type
/// in the top 3 bits, the target in the low 5) come, as Mumble varints, the
/// sender's session (only from the server), the sequence number, and the
/// Opus frame's length with the end-of-spurt bit 0x2000; then the frame;
/// then, if the sender is positional, three little-endian Float32s.
public struct VoicePacket: Sendable, Equatable {
    /// The header's codec type for Opus.
    public static let opusType: UInt8 = 4
    /// The longest Opus frame the length field can state: its low 13 bits.
    public static let maxFrameBytes = 0x1FFF
    /// The length field's bit that marks the last frame of a talk spurt.
    private static let lastInSpurtBit: Int64 = 0x2000
    /// The highest sequence number accepted: the last whose time in samples (480 a step) fits in
    /// an Int64, so turning a sequence from the network into time cannot overflow.
    public static let maxSequence = Int64.max / JitterBuffer.samplesPerSequenceStep
    /// Bytes of a position: three Float32s.
    private static let positionBytes = 12

    /// Who the voice is for: 0 for the channel, 1 to 30 a whisper target, 31 the server's loopback.
    public var target: UInt8
    /// The sender's session, when the packet comes from the server; nil when going to it.
    public var session: UInt32?
    /// The packet's place in the sender's stream, counting 10 ms of audio a step.
    public var sequence: Int64
    /// One Opus packet; empty only in a packet that just ends a spurt.
    public var opus: [UInt8]
    /// The sender stopped talking after this frame.
    public var isLastInSpurt: Bool
    /// Where the sender is, in the units of its game, when it sends a position.
    public var position: SIMD3<Float>?

    /// A packet of `opus` at `sequence` for `target` (0, the channel, by default); with a `session` it
    /// is one the server sends, without one it is the client's.
    public init(target: UInt8 = 0, session: UInt32? = nil, sequence: Int64, opus: [UInt8],
                isLastInSpurt: Bool = false, position: SIMD3<Float>? = nil) {
        self.target = target
        self.session = session
        self.sequence = sequence
        self.opus = opus
        self.isLastInSpurt = isLastInSpurt
        self.position = position
    }

    /// The packet in `bytes`, with a session when it comes `fromServer`, or why the room cannot
    /// take it. Every field is checked before it is used.
    ///
    /// Strict: a length field with bits above the end-of-spurt bit, bytes after the frame that
    /// are not exactly a position, and a position that is not finite all drop the packet, since
    /// each means the framing or the sender is wrong. A frame of no bytes is taken only with the end-of-spurt bit, as a bare end marker.
    public static func parse<Bytes: RandomAccessCollection>(_ bytes: Bytes, fromServer: Bool) -> Result<VoicePacket, VoicePacketError>
        where Bytes.Element == UInt8 {
        Result { () throws(VoicePacketError) in try read(bytes, fromServer: fromServer) }
    }

    private static func read<Bytes: RandomAccessCollection>(_ bytes: Bytes, fromServer: Bool) throws(VoicePacketError) -> VoicePacket
        where Bytes.Element == UInt8 {
        guard let header = bytes.first else { throw .empty }
        let type = header >> 5
        guard type == opusType else { throw .unsupportedType(type) }
        var index = bytes.index(after: bytes.startIndex)

        var session: UInt32?
        if fromServer {
            guard let value = MumbleVarint.read(from: bytes, at: &index) else { throw .truncated(.session) }
            guard let value = UInt32(exactly: value) else { throw .sessionOutOfRange(value) }
            session = value
        }
        guard let sequence = MumbleVarint.read(from: bytes, at: &index) else { throw .truncated(.sequence) }
        guard (0...maxSequence).contains(sequence) else { throw .sequenceOutOfRange(sequence) }
        guard let frameHeader = MumbleVarint.read(from: bytes, at: &index) else { throw .truncated(.frameHeader) }
        guard (0...(lastInSpurtBit | Int64(maxFrameBytes))).contains(frameHeader) else { throw .invalidFrameHeader(frameHeader) }
        let length = Int(frameHeader) & maxFrameBytes
        let isLast = frameHeader & lastInSpurtBit != 0
        guard length > 0 || isLast else { throw .emptyFrame }
        let remaining = bytes.distance(from: index, to: bytes.endIndex)
        guard length <= remaining else { throw .frameBeyondEnd(length: length, remaining: remaining) }
        let frameEnd = bytes.index(index, offsetBy: length)
        let opus = [UInt8](bytes[index..<frameEnd])
        index = frameEnd

        var position: SIMD3<Float>?
        switch remaining - length {
        case 0: break
        case positionBytes:
            var coordinates = SIMD3<Float>()
            for axis in 0..<3 {
                var pattern: UInt32 = 0
                for byte in 0..<4 {
                    pattern |= UInt32(bytes[index]) << (8 * byte)
                    bytes.formIndex(after: &index)
                }
                coordinates[axis] = Float(bitPattern: pattern)
            }
            guard coordinates.x.isFinite && coordinates.y.isFinite && coordinates.z.isFinite else { throw .nonFinitePosition }
            position = coordinates
        case let count: throw .trailingBytes(count)
        }
        return VoicePacket(target: header & 0x1F, session: session, sequence: sequence, opus: opus,
                           isLastInSpurt: isLast, position: position)
    }

    /// The packet's bytes: the server's form when it has a `session`, the client's otherwise.
    /// The target must fit in 5 bits, the sequence in `0...maxSequence` and the frame in
    /// `maxFrameBytes`, and an empty frame must end the spurt: the engine makes these values.
    public func encoded() -> [UInt8] {
        precondition(target < 32, "a target fits in the header's 5 bits")
        precondition((0...Self.maxSequence).contains(sequence), "a sequence number is between 0 and maxSequence")
        precondition(opus.count <= Self.maxFrameBytes, "an Opus frame fits in the length field's 13 bits")
        precondition(!opus.isEmpty || isLastInSpurt, "only the end of a spurt has an empty frame")
        var bytes: [UInt8] = []
        bytes.reserveCapacity(1 + 3 * MumbleVarint.maxSize + opus.count + Self.positionBytes)
        bytes.append(Self.opusType << 5 | target)
        if let session { MumbleVarint.append(Int64(session), to: &bytes) }
        MumbleVarint.append(sequence, to: &bytes)
        MumbleVarint.append(Int64(opus.count) | (isLastInSpurt ? Self.lastInSpurtBit : 0), to: &bytes)
        bytes.append(contentsOf: opus)
        if let position {
            for axis in 0..<3 {
                let pattern = position[axis].bitPattern
                for byte in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: pattern >> (8 * byte))) }
            }
        }
        return bytes
    }
}

/// Why a voice packet from the network was dropped. The descriptions leave
/// out the numbers that vary, so they can be counted as they are.
public enum VoicePacketError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A field of the packet that it can end inside.
    public enum Field: String, Sendable {
        /// The sender's session.
        case session
        /// The sequence number.
        case sequence
        /// The Opus frame's length and end-of-spurt bit.
        case frameHeader = "frame header"
    }

    /// Not even a header byte.
    case empty
    /// A codec type other than Opus: CELT Alpha (0), a ping (1), Speex (2), CELT Beta (3) or unused (5 to 7).
    case unsupportedType(UInt8)
    /// The packet ends inside this field.
    case truncated(Field)
    /// A session outside 0...UInt32.max.
    case sessionOutOfRange(Int64)
    /// A sequence number below 0 or above `VoicePacket.maxSequence`.
    case sequenceOutOfRange(Int64)
    /// A frame header that is negative or has bits beyond the length and the end-of-spurt bit.
    case invalidFrameHeader(Int64)
    /// An Opus frame of `length` bytes where only `remaining` are left.
    case frameBeyondEnd(length: Int, remaining: Int)
    /// A frame of no bytes that does not end a spurt.
    case emptyFrame
    /// This many bytes after the frame, where only none or a 12-byte position may be.
    case trailingBytes(Int)
    /// A position with an infinite or NaN coordinate.
    case nonFinitePosition

    /// Why the packet was dropped, the same words for the same reason.
    public var description: String {
        switch self {
        case .empty: "empty packet"
        case .unsupportedType(let type): "unsupported type \(type) (\(Self.typeName(type)))"
        case .truncated(let field): "truncated in the \(field.rawValue)"
        case .sessionOutOfRange: "session out of range"
        case .sequenceOutOfRange: "sequence number out of range"
        case .invalidFrameHeader: "invalid frame header"
        case .frameBeyondEnd: "frame longer than the packet"
        case .emptyFrame: "empty frame in mid-spurt"
        case .trailingBytes: "trailing bytes that are not a position"
        case .nonFinitePosition: "non-finite position"
        }
    }

    private static func typeName(_ type: UInt8) -> String {
        switch type {
        case 0: "CELT Alpha"
        case 1: "ping"
        case 2: "Speex"
        case 3: "CELT Beta"
        default: "unused"
        }
    }
}
