import CSpeexDSP

/// Where a slot's packet data starts: after a header of its state, timestamp and span.
private let slotHeaderBytes = 16

/// SpeexDSP's destroy callback: the buffer no longer holds the packet at `data`, so its slot is free.
private func releaseSlot(_ data: UnsafeMutableRawPointer?) {
    data?.storeBytes(of: 0, toByteOffset: -slotHeaderBytes, as: UInt32.self)
}

/// SpeexDSP's adaptive jitter buffer over one remote talker's Opus packets:
/// it reorders them, says which are missing, and grows or shrinks its delay
/// with the network's jitter. Time is in 48 kHz samples, the delay moves in
/// 20 ms steps, and Mumble's sequence number, which counts 10 ms, is turned
/// into a timestamp by `timestamp(sequence:)`.
///
/// The packets live in slots made once, which SpeexDSP only points at (its
/// destroy-callback mode), so neither `put` nor `get` allocates or frees.
/// Not thread-safe: put and get on one thread, or under one lock.
///
/// Each 20 ms, `get` the next packet (or learn it is missing), decode or
/// conceal it, then `tick`. A packet shorter than asked leaves a `get` for
/// the rest of the 20 ms before the tick.
public final class JitterBuffer {
    /// Samples in one 20 ms frame at 48 kHz: the step by which the buffer moves its delay and
    /// what `get` asks for unless told otherwise.
    public static let frameSamples = 960
    /// Samples one step of Mumble's sequence number stands for: 10 ms.
    public static let samplesPerSequenceStep: Int64 = 480
    /// Gets in a row without a packet after which SpeexDSP resets itself at the next put.
    private static let resetAfterMisses = 20
    /// How late a packet may start, in samples behind the playback point, and still reach SpeexDSP:
    /// its delay statistics are 16-bit, and a burst of packets over 0.68 s late wraps them, so
    /// that playback leaps up to two thirds of a second ahead. Such packets could never play anyway.
    private static let latestUseful: Int32 = 24_000

    /// What `put` did with a packet.
    public enum Admission: Sendable, Equatable {
        /// Held until its time to play.
        case accepted
        /// Too late to play; unless over half a second late, it taught the buffer how late packets come.
        case late
        /// Dropped: every slot holds a packet.
        case full
        /// Dropped: longer than `maxPacketBytes`.
        case tooLarge
    }

    /// What `get` found for the next stretch of audio.
    public enum Outcome: Sendable, Equatable {
        /// A packet of `length` bytes, now at the start of the buffer given to `get`, covering
        /// `span` samples from `timestamp`; the last of its talk spurt if `put` said so.
        case packet(length: Int, timestamp: UInt32, span: Int, isLastInSpurt: Bool)
        /// The packet for the next `span` samples is lost or late: conceal them.
        case missing(span: Int)
        /// The buffer is growing its delay: play `span` samples of concealment without consuming a packet.
        case insertion(span: Int)
        /// Nothing has arrived since the buffer was made or reset: the talker is silent.
        case empty
    }

    /// How many packets the buffer can hold.
    public let capacity: Int
    /// The longest packet it takes, in bytes.
    public let maxPacketBytes: Int
    private let state: OpaquePointer
    /// `capacity` slots of `slotBytes`: a header (nonzero first word while SpeexDSP holds the
    /// slot, then the packet's timestamp and span) and the packet's bytes.
    private let slots: UnsafeMutableRawPointer
    private let slotBytes: Int
    /// SpeexDSP has found its first packet since it was made or reset and plays from there.
    @exclusivity(unchecked) private var synchronised = false
    @exclusivity(unchecked) private var missesInARow = 0

    /// A buffer of `capacity` packets (64 by default, 1.28 s of 20 ms packets) of up to
    /// `maxPacketBytes` (1020 by default: Mumble keeps a whole voice packet within that), that
    /// keeps at least `margin` samples (up to 60 ms) of extra delay.
    public init(capacity: Int = 64, maxPacketBytes: Int = 1_020, margin: Int = 0) {
        precondition(capacity > 0 && maxPacketBytes > 0, "a jitter buffer holds something")
        // With more margin, a packet `latestUseful` late could still wrap SpeexDSP's statistics.
        precondition((0...2_880).contains(margin), "a margin of 0 to 60 ms")
        guard let state = jitter_buffer_init(Int32(Self.frameSamples)) else {
            fatalError("SpeexDSP could not allocate a jitter buffer")
        }
        self.state = state
        self.capacity = capacity
        self.maxPacketBytes = maxPacketBytes
        slotBytes = slotHeaderBytes + (maxPacketBytes + 15) / 16 * 16
        slots = UnsafeMutableRawPointer.allocate(byteCount: capacity * slotBytes, alignment: 16)
        slots.initializeMemory(as: UInt8.self, repeating: 0, count: capacity * slotBytes)

        let destroy: @convention(c) (UnsafeMutableRawPointer?) -> Void = releaseSlot
        jitter_buffer_ctl(state, JITTER_BUFFER_SET_DESTROY_CALLBACK, unsafeBitCast(destroy, to: UnsafeMutableRawPointer.self))
        // Conceal in 10 ms steps, Mumble's shortest packet, so asking for the rest after one conceals that rest.
        var concealment = Int32(Self.samplesPerSequenceStep)
        jitter_buffer_ctl(state, JITTER_BUFFER_SET_CONCEALMENT_SIZE, &concealment)
        var margin = Int32(margin)
        jitter_buffer_ctl(state, JITTER_BUFFER_SET_MARGIN, &margin)
    }

    deinit {
        jitter_buffer_destroy(state)
        slots.deallocate()
    }

    /// The timestamp of a packet at Mumble's `sequence`: 480 samples a step, wrapping at 2³² as
    /// SpeexDSP's timestamps do.
    public static func timestamp(sequence: Int64) -> UInt32 {
        UInt32(truncatingIfNeeded: sequence &* samplesPerSequenceStep)
    }

    /// Takes a copy of `packet`, which covers `span` samples (1 to 5760, as
    /// `OpusVoiceDecoder.sampleCount` tells) from `timestamp`; `get` hands back
    /// `isLastInSpurt` with it, in playing order. After more than 20 gets in a
    /// row without a packet, the buffer starts afresh from this one.
    @discardableResult
    public func put(_ packet: UnsafeRawBufferPointer, timestamp: UInt32, span: Int, isLastInSpurt: Bool = false) -> Admission {
        precondition((1...OpusVoiceDecoder.maxSamples).contains(span), "a packet covers 1 to 5760 samples")
        guard packet.count <= maxPacketBytes else { return .tooLarge }
        // SpeexDSP would reset itself inside this put, out of sight of the slots; resetting here keeps them in step.
        if missesInARow > Self.resetAfterMisses { reset() }
        let playback = UInt32(bitPattern: jitter_buffer_get_pointer_timestamp(state))
        if synchronised && Int32(bitPattern: timestamp &- playback) < -Self.latestUseful { return .late }
        guard let slot = firstFreeSlot() else { return .full }
        let header = slots + slot * slotBytes, data = header + slotHeaderBytes
        // SpeexDSP's own test: before the first packet it keeps anything, after it what ends no
        // more than a step before the playback point.
        let kept = !synchronised || Int32(bitPattern: timestamp &+ UInt32(span) &+ UInt32(Self.frameSamples) &- playback) >= 0

        header.storeBytes(of: 1, as: UInt32.self)
        header.storeBytes(of: timestamp, toByteOffset: 4, as: UInt32.self)
        header.storeBytes(of: UInt32(span), toByteOffset: 8, as: UInt32.self)
        if let bytes = packet.baseAddress { data.copyMemory(from: bytes, byteCount: packet.count) }
        var entry = JitterBufferPacket()
        entry.data = data.assumingMemoryBound(to: CChar.self)
        entry.len = spx_uint32_t(packet.count)
        entry.timestamp = timestamp
        entry.span = spx_uint32_t(span)
        entry.user_data = isLastInSpurt ? 1 : 0
        // Even a packet too late to keep tells SpeexDSP how late packets arrive.
        jitter_buffer_put(state, &entry)
        guard kept else {
            releaseSlot(data)
            return .late
        }
        return .accepted
    }

    /// The next `span` samples' packet (20 ms by default), copied to the start of `output`, which
    /// holds at least `maxPacketBytes`; or why there is none.
    public func get(into output: UnsafeMutableRawBufferPointer, span: Int = frameSamples) -> Outcome {
        precondition(output.count >= maxPacketBytes, "the output holds the longest packet")
        precondition(span > 0, "get asks for some audio")
        // Before its first packet SpeexDSP plays from the oldest it holds, if it holds any.
        let synchronises = !synchronised && holdsAnyPacket
        var entry = JitterBufferPacket()
        var offset: Int32 = 0
        // Passing the offset keeps SpeexDSP from printing a warning when a packet starts off the playback point.
        let status = jitter_buffer_get(state, &entry, Int32(span), &offset)
        if !synchronised {
            guard synchronises else { return .empty }
            synchronised = true
        }
        switch status {
        case JITTER_BUFFER_OK:
            missesInARow = 0
            let data = UnsafeMutableRawPointer(entry.data!)
            let length = Int(entry.len)
            output.baseAddress!.copyMemory(from: data, byteCount: length)
            releaseSlot(data)
            return .packet(length: length, timestamp: entry.timestamp, span: Int(entry.span), isLastInSpurt: entry.user_data != 0)
        case JITTER_BUFFER_INSERTION:
            missesInARow += 1
            return .insertion(span: Int(entry.span))
        default:
            missesInARow += 1
            return .missing(span: Int(entry.span))
        }
    }

    /// Ends one 20 ms period of playback, after its `get`s; the buffer adjusts its delay here.
    public func tick() {
        jitter_buffer_tick(state)
    }

    /// Forgets every packet and the timing learnt, as at the start: for a talker who has stopped.
    public func reset() {
        // SpeexDSP hands every packet it holds back through `releaseSlot`.
        jitter_buffer_reset(state)
        synchronised = false
        missesInARow = 0
    }

    /// How far past the playback point the packets held reach, in samples (from the oldest
    /// before the first `get` finds one): about how long a packet arriving now waits to play.
    public var delay: Int {
        var start: UInt32?, end: UInt32?
        for slot in 0..<capacity where isHeld(slot) {
            let header = slots + slot * slotBytes
            let timestamp = header.load(fromByteOffset: 4, as: UInt32.self)
            let finish = timestamp &+ header.load(fromByteOffset: 8, as: UInt32.self)
            if start.map({ Self.isBefore(timestamp, $0) }) ?? true { start = timestamp }
            if end.map({ Self.isBefore($0, finish) }) ?? true { end = finish }
        }
        guard let start, let end else { return 0 }
        let from = synchronised ? UInt32(bitPattern: jitter_buffer_get_pointer_timestamp(state)) : start
        return max(0, Int(Int32(bitPattern: end &- from)))
    }

    private func isHeld(_ slot: Int) -> Bool {
        slots.load(fromByteOffset: slot * slotBytes, as: UInt32.self) != 0
    }

    // Plain loops: the closures of `first(where:)` allocate in a debug build.
    private func firstFreeSlot() -> Int? {
        for slot in 0..<capacity where !isHeld(slot) { return slot }
        return nil
    }

    private var holdsAnyPacket: Bool {
        for slot in 0..<capacity where isHeld(slot) { return true }
        return false
    }

    /// `a` comes before `b` on SpeexDSP's wrapping clock.
    private static func isBefore(_ a: UInt32, _ b: UInt32) -> Bool {
        Int32(bitPattern: a &- b) < 0
    }
}
