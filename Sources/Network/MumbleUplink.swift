import AudioCore
import Engine
import Foundation
import Scene
import Synchronization

/// The room's uplink as it goes to the server: the render thread hands
/// each block over with the talker's state, and a thread of the uplink's
/// own encodes 20 ms Opus packets and sends them in the tunnel while the
/// local talker talks (or holds the talk key), ending each spurt with a
/// terminator frame. Muted, it sends nothing; detection runs on in the room.
public final class MumbleUplink: VoiceUplink, @unchecked Sendable {
    /// Mumble counts voice in 10 ms units; a packet carries two.
    static let frameSamples = 960
    /// Bits a packet costs beyond its Opus frame, the way Mumble's client
    /// counts them (IP and UDP headers, crypt, header, sequence, position),
    /// which the server's bandwidth limit includes.
    static let overheadBitsPerSecond = 50 * 8 * (20 + 8 + 4 + 1 + 2 + 2 + 12)

    private let samples = SampleRing(capacity: Room.sampleRate)
    /// One entry per block of `samples`: bit 0 talking, bit 1 muted.
    private let blocks = MessageRing<UInt8>(capacity: 100)
    private let transmission: MumbleSettings.Transmission
    private let wantedBitrate: Int
    private let limit = Atomic<Int>(Int.max)
    private let talkKey = Atomic<Bool>(false)
    private let running = Atomic<Bool>(true)
    private let finished = DispatchSemaphore(value: 0)
    /// Given with each block the room hands over: the encoder waits for it.
    private let blockQueued = WakeSignal()
    /// Given with each block the room has played, for the talkers' decoder:
    /// the room's streams have just moved on by a block.
    let blockPlayed = WakeSignal()
    private let target = Mutex<(client: MumbleClient?, listener: (@Sendable () -> Position)?)>((nil, nil))
    private let sent = Atomic<Int>(0)

    /// An uplink that sends as `settings` say, once a client is attached.
    public init(settings: MumbleSettings) {
        transmission = settings.transmission
        wantedBitrate = settings.bitrateKbps * 1000
        let thread = Thread { [self] in encodeLoop() }
        thread.name = "mumble-uplink"
        thread.start()
    }

    /// Render thread: keeps the block for the encoder; drops it whole when the encoder has fallen a second behind.
    public func send(_ block: UnsafeBufferPointer<Float>, talking: Bool, muted: Bool) {
        blockPlayed.signal()
        guard blocks.count < blocks.capacity, samples.capacity - samples.count >= block.count else { return }
        samples.write(block)
        _ = blocks.send((talking ? 1 : 0) | (muted ? 2 : 0))
        blockQueued.signal()
    }

    /// Holds or releases push-to-talk.
    func setTalkKey(_ held: Bool) { talkKey.store(held, ordering: .relaxed) }

    /// Whether push-to-talk is held.
    var talkKeyHeld: Bool { talkKey.load(ordering: .relaxed) }

    /// Voice packets handed to the connection.
    var packetsSent: Int { sent.load(ordering: .relaxed) }

    /// The Opus bit rate used: the scene's, lowered to fit the server's limit.
    var bitrate: Int {
        let room = limit.load(ordering: .relaxed) - Self.overheadBitsPerSecond
        return max(8_000, min(wantedBitrate, room))
    }

    /// The server's limit on a user's voice, in bits per second.
    func setBandwidthLimit(_ bitsPerSecond: Int) { limit.store(bitsPerSecond, ordering: .relaxed) }

    /// Where the packets go, and where the listener stands for their position.
    func attach(_ client: MumbleClient?, listener: (@Sendable () -> Position)?) { target.withLock { $0 = (client, listener) } }

    /// Stops the encoder's thread.
    public func close() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        blockQueued.signal()
        finished.wait()
    }

    deinit { assert(!running.load(ordering: .relaxed), "an uplink is closed before it goes") }

    private func encodeLoop() {
        defer { finished.signal() }
        guard let encoder = try? OpusVoiceEncoder(bitrate: bitrate) else { return }
        var frame = [Float](repeating: 0, count: Self.frameSamples)
        var opus = [UInt8](repeating: 0, count: 1275)
        var sequence: Int64 = 0
        var transmitting = false
        var encodedBitrate = bitrate
        while running.load(ordering: .relaxed) {
            guard blocks.count >= 2, samples.count >= Self.frameSamples else {
                // A room that plays no block (stopped, or between scenes) leaves it waiting here.
                blockQueued.wait(seconds: 0.1)
                continue
            }
            let flags = blocks.receive()! | blocks.receive()!
            _ = frame.withUnsafeMutableBufferPointer { samples.read(into: $0) }
            let muted = flags & 2 != 0
            let wanted = !muted && (transmission == .voiceActivity ? flags & 1 != 0 : talkKeyHeld)
            // Mumble's sequence runs on with time, in 10 ms units, whether or not a packet goes.
            defer { sequence += 2 }
            // The first frame after a spurt still goes, marked as its end.
            guard wanted || transmitting else { continue }
            transmitting = wanted
            let (client, listener) = target.withLock { $0 }
            guard let client else { continue }
            if bitrate != encodedBitrate {
                encodedBitrate = bitrate
                try? encoder.setBitrate(encodedBitrate)
            }
            guard let length = try? frame.withUnsafeBufferPointer({ pcm in
                try opus.withUnsafeMutableBufferPointer { try encoder.encode(pcm, into: $0) }
            }) else { continue }
            // The listener, in Mumble's left-handed frame: its z points the other way.
            let position = listener.map { listener -> SIMD3<Float> in
                let here = listener()
                return SIMD3(Float(here.x), Float(here.y), Float(-here.z))
            }
            let packet = VoicePacket(target: 0, session: nil, sequence: sequence, opus: Array(opus[..<length]),
                                     isLastInSpurt: !wanted, position: position)
            if client.send(voice: packet.encoded()) { sent.add(1, ordering: .relaxed) }
        }
    }
}
