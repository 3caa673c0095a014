import AudioCore
import CPulse
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A PulseAudio output stream the server pulls from: libpulse asks for
/// audio on the mainloop thread and `render` fills it in place.
public final class PlaybackStream: @unchecked Sendable {
    /// The buffering the server granted, in frames.
    public struct BufferAttributes: Sendable, Equatable {
        /// How much audio the server keeps queued: the stream's share of the latency.
        public let targetFrames: Int
        /// The smallest amount the server asks `render` for.
        public let minimumRequestFrames: Int
    }

    private let stream: PulseStream
    private let render: (UnsafeMutableBufferPointer<Float>) -> Void
    private let underrunCount = Atomic<Int>(0)
    /// Whether the mainloop thread has asked to be scheduled in real time, once.
    private var askedForRealTime = false

    /// Opens a stream of `channels` interleaved floats in the engine's
    /// (WAV) channel order, 1, 2, 4, 6 or 8 channels, and connects it to
    /// `device` (a sink name; nil for the default).
    ///
    /// `render` runs on the mainloop thread and must be real-time safe; it
    /// gets a whole number of frames to fill. It is called with the lock
    /// held, so it must not call back into the connection.
    public init(connection: PulseConnection, name: String, role: String, channels: Int, sampleRate: Int,
                device: String? = nil, targetLatencyFrames: Int,
                render: @escaping (UnsafeMutableBufferPointer<Float>) -> Void) throws {
        guard let layout = ChannelLayout.allCases.first(where: { $0.channelCount == channels }) else {
            throw PulseError(call: "pa_stream_new", code: PA_ERR_NOTSUPPORTED)
        }
        stream = try PulseStream(connection: connection, name: name, role: role, sampleRate: sampleRate,
                                 channelMap: Self.channelMap(layout))
        self.render = render

        let userdata = Unmanaged.passUnretained(self).toOpaque()
        connection.withLock {
            pa_stream_set_write_callback(stream.stream, { _, requested, userdata in
                Unmanaged<PlaybackStream>.fromOpaque(userdata!).takeUnretainedValue().write(requested)
            }, userdata)
            pa_stream_set_underflow_callback(stream.stream, { _, userdata in
                Unmanaged<PlaybackStream>.fromOpaque(userdata!).takeUnretainedValue()
                    .underrunCount.wrappingAdd(1, ordering: .relaxed)
            }, userdata)
        }
        let frameBytes = UInt32(stream.frameBytes)
        var attributes = pa_buffer_attr(maxlength: serverChooses, tlength: UInt32(targetLatencyFrames) * frameBytes,
                                        prebuf: serverChooses,
                                        minreq: UInt32(max(1, min(480, targetLatencyFrames / 2))) * frameBytes,
                                        fragsize: serverChooses)
        let flags = pa_stream_flags_t(PA_STREAM_ADJUST_LATENCY.rawValue | PA_STREAM_AUTO_TIMING_UPDATE.rawValue
                                      | PA_STREAM_INTERPOLATE_TIMING.rawValue)
        try stream.connect("pa_stream_connect_playback") {
            pa_stream_connect_playback($0, device, &attributes, flags, nil, nil)
        }
    }

    deinit { close() }

    /// Times the server ran out of audio since the stream opened.
    public var underruns: Int { underrunCount.load(ordering: .relaxed) }

    /// How long a frame rendered now takes to be heard, in frames; nil
    /// until timing data arrived, or once the stream is closed or lost.
    public func latencyFrames() -> Int? { stream.latencyFrames }

    /// The buffering the server granted; nil once the stream is closed or lost.
    public var bufferAttributes: BufferAttributes? {
        stream.ifReady { stream in
            pa_stream_get_buffer_attr(stream).map { attributes in
                let frameBytes = UInt32(self.stream.frameBytes)
                return BufferAttributes(targetFrames: Int(attributes.pointee.tlength / frameBytes),
                                        minimumRequestFrames: Int(attributes.pointee.minreq / frameBytes))
            }
        }
    }

    /// Changes `media.role` (say "phone" during a call), so that the server's
    /// policy modules can route or duck the stream. Does not wait for the server.
    public func setRole(_ role: String) {
        _ = stream.ifReady { stream in
            let properties = pa_proplist_new()
            defer { pa_proplist_free(properties) }
            pa_proplist_sets(properties, PA_PROP_MEDIA_ROLE, role)
            pa_stream_proplist_update(stream, PA_UPDATE_REPLACE, properties, nil, nil).map { pa_operation_unref($0) }
            return ()
        }
    }

    /// Stops rendering and frees the stream. Idempotent; safe after the connection was lost.
    public func close() { stream.close() }

    /// The sink it plays to now.
    public var deviceName: String? { stream.deviceName }

    /// The write callback, on the mainloop thread: fills libpulse's own
    /// buffers in place, so it allocates nothing and takes no lock of ours.
    private func write(_ requested: Int) {
        if !askedForRealTime {
            askedForRealTime = true
            Self.askForRealTimeScheduling()
        }
        var remaining = requested
        while remaining > 0 {
            var data: UnsafeMutableRawPointer?
            var bytes = remaining
            guard pa_stream_begin_write(stream.stream, &data, &bytes) == 0, let data else { return }
            let frames = bytes / stream.frameBytes
            guard frames > 0 else {
                pa_stream_cancel_write(stream.stream)
                return
            }
            let count = frames * stream.frameBytes / MemoryLayout<Float>.size
            render(UnsafeMutableBufferPointer(start: data.bindMemory(to: Float.self, capacity: count), count: count))
            pa_stream_write(stream.stream, data, frames * stream.frameBytes, nil, 0, PA_SEEK_RELATIVE)
            remaining -= min(remaining, frames * stream.frameBytes)
        }
    }

    /// Puts the calling thread, which renders the room, ahead of every
    /// ordinary thread (SCHED_FIFO at the lowest real-time priority), as
    /// audio clients do: a busy machine, or a control client sending
    /// thousands of moves a tick, then cannot starve it. Without the right
    /// to (RLIMIT_RTPRIO), the thread renders at its ordinary priority, as before.
    private static func askForRealTimeScheduling() {
        var parameters = sched_param()
        parameters.sched_priority = sched_get_priority_min(SCHED_FIFO)
        _ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &parameters)
    }

    /// `layout`'s speakers as `pa_channel_map_parse` names them. libpulse's
    /// default (AIFF) order differs from the engine's WAV order for 5.1 and 7.1.
    private static func channelMap(_ layout: ChannelLayout) -> String {
        guard layout != .mono else { return "mono" }
        return layout.speakers.map { speaker in
            switch speaker {
            case .frontLeft: "front-left"
            case .frontRight: "front-right"
            case .frontCenter: "front-center"
            case .lowFrequency: "lfe"
            case .sideLeft: "side-left"
            case .sideRight: "side-right"
            case .backLeft: "rear-left"
            case .backRight: "rear-right"
            }
        }.joined(separator: ",")
    }
}
