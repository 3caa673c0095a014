import NIOCore

/// The kinds of message on a Mumble control connection, by their number on the wire.
enum MumbleMessageType: UInt16, Sendable {
    case version = 0
    case udpTunnel = 1
    case authenticate = 2
    case ping = 3
    case reject = 4
    case serverSync = 5
    case channelRemove = 6
    case channelState = 7
    case userRemove = 8
    case userState = 9
    case permissionDenied = 12
    case cryptSetup = 15
    case codecVersion = 21
    case serverConfig = 24
}

/// What the frame decoder hands on: a whole frame, or the news that one
/// was too long to hold and was skipped.
enum MumbleInbound: Sendable {
    /// A frame's type number (kinds the room does not speak included) and its payload.
    case frame(type: UInt16, payload: ByteBuffer)
    /// A frame longer than `MumbleFrameDecoder.maximumPayload`, read past without keeping it.
    case skipped
}

/// Cuts the connection's bytes into frames: a 2-byte big-endian type, a
/// 4-byte big-endian length, then that many bytes of protobuf. The length
/// comes from the server, so a frame longer than the room will hold is
/// counted and read past, byte by byte as it arrives, never buffered.
struct MumbleFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = MumbleInbound

    /// The longest payload kept: Mumble's largest messages (a user's avatar
    /// texture, a long comment) stay well below it.
    static let maximumPayload = 1 << 20
    private var skipping = 0

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        if skipping > 0 {
            let dropped = min(skipping, buffer.readableBytes)
            buffer.moveReaderIndex(forwardBy: dropped)
            skipping -= dropped
            return skipping == 0 ? .continue : .needMoreData
        }
        guard let type = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
              let length = buffer.getInteger(at: buffer.readerIndex + 2, as: UInt32.self) else { return .needMoreData }
        if length > Self.maximumPayload {
            buffer.moveReaderIndex(forwardBy: 6)
            skipping = Int(length)
            context.fireChannelRead(wrapInboundOut(.skipped))
            return .continue
        }
        guard buffer.readableBytes >= 6 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 6)
        let payload = buffer.readSlice(length: Int(length))!
        context.fireChannelRead(wrapInboundOut(.frame(type: type, payload: payload)))
        return .continue
    }

    mutating func decodeLast(context: ChannelHandlerContext, buffer: inout ByteBuffer, seenEOF: Bool) throws -> DecodingState {
        // A frame cut off by the end of the connection is dropped with it.
        buffer.moveReaderIndex(to: buffer.writerIndex)
        return .needMoreData
    }
}

/// Writes a message as a frame: its type, its length, its bytes.
struct MumbleFrameEncoder: MessageToByteEncoder {
    typealias OutboundIn = (type: MumbleMessageType, payload: [UInt8])

    func encode(data: OutboundIn, out: inout ByteBuffer) throws {
        out.writeInteger(data.type.rawValue)
        out.writeInteger(UInt32(data.payload.count))
        out.writeBytes(data.payload)
    }
}
