import CPulse

/// The plumbing `PlaybackStream` and `CaptureStream` share: a `pa_stream`
/// of 32-bit float samples, connected, queried and closed under the
/// connection's lock.
///
/// Once the connection is lost, libpulse unlinks the stream and most
/// `pa_stream_*` calls are invalid, so everything but `close()` first
/// checks that the stream is still ready.
final class PulseStream: @unchecked Sendable {
    let connection: PulseConnection
    let stream: OpaquePointer
    let sampleRate: Int
    let frameBytes: Int
    private var closed = false  // guarded by the mainloop lock

    /// An unconnected stream; `channelMap` in `pa_channel_map_parse`'s syntax ("front-left,front-right").
    init(connection: PulseConnection, name: String, role: String, sampleRate: Int, channelMap: String) throws {
        var map = pa_channel_map()
        guard pa_channel_map_parse(&map, channelMap) != nil else {
            throw PulseError(call: "pa_channel_map_parse", code: PA_ERR_INVALID)
        }
        // PA_SAMPLE_FLOAT32NE is a macro Swift can't import.
        let float32 = 1.littleEndian == 1 ? PA_SAMPLE_FLOAT32LE : PA_SAMPLE_FLOAT32BE
        var spec = pa_sample_spec(format: float32, rate: UInt32(sampleRate), channels: map.channels)
        let properties = pa_proplist_new()
        defer { pa_proplist_free(properties) }
        pa_proplist_sets(properties, PA_PROP_MEDIA_NAME, name)
        pa_proplist_sets(properties, PA_PROP_MEDIA_ROLE, role)
        pa_proplist_sets(properties, PA_PROP_MEDIA_ICON_NAME, "audio-x-generic")
        stream = try connection.withLock {
            try connection.checkReady("pa_stream_new")
            guard let stream = pa_stream_new_with_proplist(connection.context, name, &spec, &map, properties) else {
                throw PulseError.pending("pa_stream_new", context: connection.context)
            }
            pa_stream_set_state_callback(stream, signalMainloop, UnsafeMutableRawPointer(connection.mainloop))
            return stream
        }
        self.connection = connection
        self.sampleRate = sampleRate
        frameBytes = Int(map.channels) * MemoryLayout<Float>.size
    }

    deinit { close() }

    /// Connects the stream with `body` (a `pa_stream_connect_*` call) and
    /// waits until the server has set it up.
    func connect(_ call: String, _ body: (OpaquePointer) -> Int32) throws {
        try connection.withLock {
            try connection.checkReady(call)
            guard body(stream) == 0 else { throw PulseError.pending(call, context: connection.context) }
            try connection.wait(call) {
                [PA_STREAM_READY, PA_STREAM_FAILED, PA_STREAM_TERMINATED].contains(pa_stream_get_state(stream))
            }
            guard pa_stream_get_state(stream) == PA_STREAM_READY else { throw PulseError.pending(call, context: connection.context) }
        }
    }

    /// The sink or source the stream plays to or records from now; it changes when the server moves the stream.
    var deviceName: String? {
        ifReady { pa_stream_get_device_name($0).map { String(cString: $0) } }
    }

    /// `body`'s answer about the stream, under the lock; nil once the stream is closed or lost.
    func ifReady<T>(_ body: (OpaquePointer) -> T?) -> T? {
        connection.withLock {
            !closed && pa_stream_get_state(stream) == PA_STREAM_READY ? body(stream) : nil
        }
    }

    /// The stream's latency in frames (negative for a record stream that is
    /// ahead of its source); nil until libpulse has timing data.
    var latencyFrames: Int? {
        ifReady { stream in
            var microseconds: pa_usec_t = 0
            var negative: Int32 = 0
            guard pa_stream_get_latency(stream, &microseconds, &negative) == 0 else { return nil }
            let frames = Int(microseconds * pa_usec_t(sampleRate) / 1_000_000)
            return negative != 0 ? -frames : frames
        }
    }

    /// Stops the callbacks, disconnects and frees the stream. Idempotent.
    func close() {
        connection.withLock {
            guard !closed else { return }
            closed = true
            // After these, libpulse calls none of our callbacks, so their unretained userdata may go.
            pa_stream_set_state_callback(stream, nil, nil)
            pa_stream_set_write_callback(stream, nil, nil)
            pa_stream_set_read_callback(stream, nil, nil)
            pa_stream_set_underflow_callback(stream, nil, nil)
            pa_stream_set_overflow_callback(stream, nil, nil)
            if pa_stream_get_state(stream) == PA_STREAM_READY { pa_stream_disconnect(stream) }
            pa_stream_unref(stream)
        }
    }
}

/// A `pa_buffer_attr` field left for the server to choose.
let serverChooses = UInt32.max
