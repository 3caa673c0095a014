import AudioCore
import Engine
import Foundation

/// One remote user heard in the room: their packets wait in a jitter
/// buffer, are decoded 20 ms at a time (lost ones concealed by Opus), and
/// are pushed into the stream the room plays as a voice at their place.
///
/// Packets arrive on the network's thread, frames are made on the
/// decoder's, and the control side reads and sets its state: all under its lock.
final class RemoteTalker: @unchecked Sendable {
    /// Samples of one frame: Mumble's 20 ms packets at 48 kHz.
    static let frameSamples = 960
    /// How far from the origin a position from the network may place a talker, in metres, as a scene's may.
    static let farthest: Float = 10_000
    /// A spurt whose packets stop coming for this many frames has ended.
    static let silentFramesToEnd = 10

    /// The user's name on the server: the talker's id in events and commands.
    let name: String
    /// The user's session on the server.
    let session: UInt32
    /// The id of the room's source that plays the talker.
    let sourceID: String
    /// Where the room plays the talker; another once a new scene was loaded.
    private var stream: SourceStream

    private let lock = NSLock()
    private let jitter: JitterBuffer
    private let decoder: OpusVoiceDecoder
    // Made once, and used in place 50 times a second: no array's copy-on-write checks in the decoder's loop.
    private let opus: UnsafeMutableRawBufferPointer
    /// A frame, and room after it for the rest of the longest packet (60 ms).
    private let pcm: UnsafeMutableBufferPointer<Float>
    /// Samples at the start of `pcm` that the last packet left for the next frame.
    private var carried = 0
    /// The second half of the last frame, pushed when the stream wants it:
    /// the stream is topped up 10 ms at a time, which keeps it 5 ms shorter on average.
    private let laterHalf: UnsafeMutableBufferPointer<Float>
    private var laterHalfWaits = false
    // Under `lock`.
    private var arriving: SIMD3<Float>?
    private var talking = false
    private var silentFrames = 0
    private var lastEnded = false
    private(set) var packetsLost = 0
    private(set) var packetsReceived = 0
    /// Packets that were late, too long, or not Opus the decoder can read.
    private(set) var packetsUnplayable = 0
    private var gainDecibels = 0.0
    private var muted = false
    /// Where the talker is in the room's frame, and whether that comes from their packets.
    private(set) var position: Position
    private(set) var positioned = false

    init(name: String, session: UInt32, sourceID: String, stream: SourceStream, at position: Position) throws {
        self.name = name
        self.session = session
        self.sourceID = sourceID
        self.stream = stream
        self.position = position
        jitter = JitterBuffer()
        decoder = try OpusVoiceDecoder()
        opus = .allocate(byteCount: 1020, alignment: 16)
        opus.initializeMemory(as: UInt8.self, repeating: 0)
        pcm = .allocate(capacity: 960 + 5760)
        pcm.initialize(repeating: 0)
        laterHalf = .allocate(capacity: 480)
        laterHalf.initialize(repeating: 0)
    }

    deinit {
        opus.deallocate()
        pcm.deallocate()
        laterHalf.deallocate()
    }

    /// Network thread: a packet of the talker's.
    func put(_ packet: VoicePacket) {
        let span = packet.opus.withUnsafeBytes { try? OpusVoiceDecoder.sampleCount(of: $0) } ?? 0
        let timestamp = JitterBuffer.timestamp(sequence: packet.sequence)
        lock.lock()
        defer { lock.unlock() }
        packetsReceived += 1
        var admission = JitterBuffer.Admission.tooLarge
        if (1...OpusVoiceDecoder.maxSamples).contains(span) {
            admission = packet.opus.withUnsafeBytes { jitter.put($0, timestamp: timestamp, span: span, isLastInSpurt: packet.isLastInSpurt) }
        }
        guard admission == .accepted else {
            packetsUnplayable += 1
            return
        }
        if let position = packet.position { arriving = position.clamped(lowerBound: .init(repeating: -Self.farthest),
                                                                          upperBound: .init(repeating: Self.farthest)) }
    }

    /// What the decoder thread does next with this talker.
    struct Step {
        /// Talking started (true) or ended (false) with this frame.
        var talkingChanged: Bool?
        /// A position to glide to, in the room's frame.
        var moveTo: Position?
    }

    /// Decoder thread: makes the talker's next 20 ms and pushes its first
    /// half into the stream (`pushLaterHalf` the rest), and says where the
    /// talker's latest packet places them.
    ///
    /// Packets may hold 10 to 60 ms: the frame takes what the last one left
    /// over, then asks the jitter buffer for the rest, as often as it takes,
    /// and keeps what a long packet leaves for the next frame.
    func produceFrame() -> Step {
        lock.lock()
        defer { lock.unlock() }
        var step = Step()
        var filled = carried, heard = false, missed = false
        while filled < Self.frameSamples {
            let wanted = Self.frameSamples - filled
            switch jitter.get(into: opus, span: wanted) {
            case .packet(let length, _, _, let last):
                let decoded = decode(length, at: filled)
                filled += decoded > 0 ? decoded : silence(wanted, at: filled)
                heard = true
                lastEnded = last
            case .empty:
                filled += silence(wanted, at: filled)
            case .missing(let span), .insertion(let span):
                missed = true
                let stretch = min(max(span, 1), wanted)
                // Concealed while a spurt goes on; silence between spurts.
                let made = talking && !lastEnded ? conceal(stretch, at: filled) : 0
                filled += made > 0 ? made : silence(stretch, at: filled)
            }
        }
        jitter.tick()
        let half = Self.frameSamples / 2
        stream.push(UnsafeBufferPointer(rebasing: pcm[..<half]))
        _ = laterHalf.update(fromContentsOf: pcm[half..<Self.frameSamples])
        laterHalfWaits = true
        carried = filled - Self.frameSamples
        if carried > 0 {
            pcm.baseAddress!.update(from: pcm.baseAddress! + Self.frameSamples, count: carried)
        }
        if heard {
            silentFrames = 0
            if !talking {
                talking = true
                step.talkingChanged = true
            }
        } else if missed && talking {
            silentFrames += 1
            if silentFrames >= Self.silentFramesToEnd || lastEnded {
                // The next spurt starts afresh, at whatever sequence the sender is at by then.
                talking = false
                lastEnded = false
                carried = 0
                jitter.reset()
                step.talkingChanged = false
            } else {
                packetsLost += 1
            }
        }
        // The server passes positions only between users of one plugin context (Mumble's rule), so one that came counts.
        if let arriving {
            // Mumble's frame is left-handed: its z points the other way.
            let place = Position(Double(arriving.x), Double(arriving.y), Double(-arriving.z))
            if !positioned || ((place - position) * (place - position)).sum() > 0.0001 {
                position = place
                positioned = true
                step.moveTo = place
            }
            self.arriving = nil
        }
        return step
    }

    /// Decoder thread: pushes the second half of the last frame if it still
    /// waits; false when the next frame must be made.
    func pushLaterHalf() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard laterHalfWaits else { return false }
        stream.push(UnsafeBufferPointer(laterHalf))
        laterHalfWaits = false
        return true
    }

    /// Decodes the packet at the start of `opus` into `pcm` from `offset`; 0 samples for one Opus cannot read.
    private func decode(_ length: Int, at offset: Int) -> Int {
        (try? decoder.decode(UnsafeRawBufferPointer(rebasing: opus[..<length]),
                             into: UnsafeMutableBufferPointer(rebasing: pcm[offset...]))) ?? 0
    }

    /// Opus's guess at `count` lost samples, into `pcm` from `offset`; 0 when it has none.
    private func conceal(_ count: Int, at offset: Int) -> Int {
        (try? decoder.conceal(into: UnsafeMutableBufferPointer(rebasing: pcm[offset...]), samples: count)) ?? 0
    }

    /// `count` samples of silence into `pcm` from `offset`.
    private func silence(_ count: Int, at offset: Int) -> Int {
        UnsafeMutableBufferPointer(rebasing: pcm[offset..<offset + count]).update(repeating: 0)
        return count
    }

    /// Places the talker on the arc, its packets having no position the room uses.
    func place(at position: Position) {
        lock.withLock {
            self.position = position
            positioned = false
        }
    }

    /// The talker as `talkers` lists it.
    func summary() -> [String: Any] {
        lock.withLock {
            ["id": name, "session": Int(session), "source": sourceID, "position": [position.x, position.y, position.z],
             "positional": positioned, "talking": talking, "gain": gainDecibels, "muted": muted,
             "packetsReceived": packetsReceived, "packetsLost": packetsLost, "packetsUnplayable": packetsUnplayable,
             "jitterDelayMs": Double(jitter.delay) / 48]
        }
    }

    var isTalking: Bool { lock.withLock { talking } }

    /// Frames pushed and not yet played.
    var queuedFrames: Int { lock.withLock { stream.queuedFrames } }

    /// The gain the room's source takes: the talker's volume, or silence while muted here.
    var roomGain: Double { lock.withLock { muted ? -120 : gainDecibels } }

    /// Plays on in `stream`, the talker's source in a room loaded anew.
    func rejoin(_ stream: SourceStream) { lock.withLock { self.stream = stream } }

    /// Whether the talker stands where its packets say, not on the arc.
    var standsWhereItsPacketsSay: Bool { lock.withLock { positioned } }

    /// Where the talker stands in the room.
    var place: Position { lock.withLock { position } }

    /// Sets the talker's volume; the gain the room's source takes, which stays silent while muted.
    func hear(gain decibels: Double) -> Double {
        lock.withLock {
            gainDecibels = decibels
            return muted ? -120 : decibels
        }
    }

    /// Mutes or unmutes the talker here; the gain the room's source takes.
    func hear(muted: Bool) -> Double {
        lock.withLock {
            self.muted = muted
            return muted ? -120 : gainDecibels
        }
    }
}
