import CPulse
import Synchronization

/// A mono PulseAudio record stream: libpulse hands over fragments on the
/// mainloop thread and `capture` reads them in place.
public final class CaptureStream: @unchecked Sendable {
    private let stream: PulseStream
    private let capture: (UnsafeBufferPointer<Float>) -> Void
    private let overrunCount = Atomic<Int>(0)

    /// Opens a mono stream from `device` (a source name, such as a sink's
    /// ".monitor"; nil for the default) delivered in fragments of about
    /// `fragmentFrames`.
    ///
    /// `capture` runs on the mainloop thread and must be real-time safe.
    /// It is called with the lock held, so it must not call back into the connection.
    public init(connection: PulseConnection, name: String, role: String, sampleRate: Int, device: String? = nil,
                fragmentFrames: Int, capture: @escaping (UnsafeBufferPointer<Float>) -> Void) throws {
        stream = try PulseStream(connection: connection, name: name, role: role, sampleRate: sampleRate,
                                 channelMap: "mono")
        self.capture = capture

        let userdata = Unmanaged.passUnretained(self).toOpaque()
        connection.withLock {
            pa_stream_set_read_callback(stream.stream, { _, _, userdata in
                Unmanaged<CaptureStream>.fromOpaque(userdata!).takeUnretainedValue().read()
            }, userdata)
            pa_stream_set_overflow_callback(stream.stream, { _, userdata in
                Unmanaged<CaptureStream>.fromOpaque(userdata!).takeUnretainedValue()
                    .overrunCount.wrappingAdd(1, ordering: .relaxed)
            }, userdata)
        }
        var attributes = pa_buffer_attr(maxlength: serverChooses, tlength: serverChooses, prebuf: serverChooses,
                                        minreq: serverChooses,
                                        fragsize: UInt32(fragmentFrames * stream.frameBytes))
        let flags = pa_stream_flags_t(PA_STREAM_ADJUST_LATENCY.rawValue | PA_STREAM_AUTO_TIMING_UPDATE.rawValue
                                      | PA_STREAM_INTERPOLATE_TIMING.rawValue)
        try stream.connect("pa_stream_connect_record") {
            pa_stream_connect_record($0, device, &attributes, flags)
        }
    }

    deinit { close() }

    /// Times the server dropped audio because `capture` fell behind.
    public var overruns: Int { overrunCount.load(ordering: .relaxed) }

    /// How long ago, in frames, the audio handed over now was captured
    /// (can be negative); nil until timing data arrived, or once closed or lost.
    public func latencyFrames() -> Int? { stream.latencyFrames }

    /// The source it records from now: the server moves it when its source goes away.
    public var deviceName: String? { stream.deviceName }

    /// Stops capturing and frees the stream. Idempotent; safe after the connection was lost.
    public func close() { stream.close() }

    /// The read callback, on the mainloop thread: reads libpulse's buffers
    /// in place, so it allocates nothing and takes no lock of ours.
    private func read() {
        while true {
            var data: UnsafeRawPointer?
            var bytes = 0
            guard pa_stream_peek(stream.stream, &data, &bytes) == 0, bytes > 0 else { return }
            // No data with a size is a hole (the server dropped audio): skip it.
            if let data {
                let count = bytes / stream.frameBytes
                capture(UnsafeBufferPointer(start: data.bindMemory(to: Float.self, capacity: count), count: count))
            }
            pa_stream_drop(stream.stream)
        }
    }
}
