import CPulse
import Synchronization

/// A connection to the PulseAudio server: a `pa_context` driven by its own
/// `pa_threaded_mainloop` thread.
///
/// libpulse calls every callback (`onLost`, route changes, the streams'
/// render and capture) on the mainloop thread with the mainloop lock held.
/// From those callbacks, don't call the blocking queries (`defaultSink()`,
/// `sinkNames()`), `close()`, or anything that waits for the server: they
/// would wait for the very thread they block. Hop to another thread first.
///
/// Close a connection's streams before the connection; each stream keeps
/// its connection alive until then.
public final class PulseConnection: @unchecked Sendable {
    let mainloop: OpaquePointer
    let context: OpaquePointer
    private let closed = Atomic<Bool>(false)
    private let lostHandler = Mutex<(@Sendable () -> Void)?>(nil)
    private let routeHandler = Mutex<(@Sendable () -> Void)?>(nil)
    // Guarded by the mainloop lock.
    private var wasReady = false
    private var connectTimedOut = false
    /// When the ping awaiting its answer was sent.
    private var pingSent: ContinuousClock.Instant?

    /// Connects to the server `PULSE_SERVER` names (or the user's default)
    /// without spawning one, waiting at most `timeout`.
    public init(applicationName: String, iconName: String, timeout: Duration = .seconds(1)) throws {
        guard let mainloop = pa_threaded_mainloop_new() else {
            throw PulseError(call: "pa_threaded_mainloop_new", code: PA_ERR_INTERNAL)
        }
        let properties = pa_proplist_new()
        pa_proplist_sets(properties, PA_PROP_APPLICATION_NAME, applicationName)
        pa_proplist_sets(properties, PA_PROP_APPLICATION_ICON_NAME, iconName)
        let context = pa_context_new_with_proplist(pa_threaded_mainloop_get_api(mainloop), applicationName, properties)
        pa_proplist_free(properties)
        guard let context else {
            pa_threaded_mainloop_free(mainloop)
            throw PulseError(call: "pa_context_new", code: PA_ERR_INTERNAL)
        }
        self.mainloop = mainloop
        self.context = context
        // From here on, deinit frees what a failure leaves behind.

        let userdata = Unmanaged.passUnretained(self).toOpaque()
        pa_context_set_state_callback(context, { _, userdata in
            Unmanaged<PulseConnection>.fromOpaque(userdata!).takeUnretainedValue().stateChanged()
        }, userdata)
        guard pa_context_connect(context, nil, PA_CONTEXT_NOAUTOSPAWN, nil) == 0 else {
            throw PulseError.pending("pa_context_connect", context: context)
        }
        // libpulse has no timed wait; a timer event on the loop ends the wait instead.
        let timer = pa_context_rttime_new(context, pa_rtclock_now() + microseconds(timeout), { _, _, _, userdata in
            let connection = Unmanaged<PulseConnection>.fromOpaque(userdata!).takeUnretainedValue()
            connection.connectTimedOut = true
            pa_threaded_mainloop_signal(connection.mainloop, 0)
        }, userdata)
        guard pa_threaded_mainloop_start(mainloop) == 0 else {
            throw PulseError(call: "pa_threaded_mainloop_start", code: PA_ERR_INTERNAL)
        }
        let failure: PulseError? = withLock {
            defer { pa_threaded_mainloop_get_api(mainloop).pointee.time_free(timer) }
            while true {
                switch pa_context_get_state(context) {
                case PA_CONTEXT_READY: return nil
                case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED: return .pending("pa_context_connect", context: context)
                default: if connectTimedOut { return PulseError(call: "pa_context_connect", code: PA_ERR_TIMEOUT) }
                }
                pa_threaded_mainloop_wait(mainloop)
            }
        }
        if let failure {
            close()
            throw failure
        }
    }

    deinit {
        close()
        pa_context_unref(context)
        pa_threaded_mainloop_free(mainloop)
    }

    /// Called once, on the mainloop thread, when a connection that was ready
    /// fails or ends (the server died or kicked us out); not on `close()`.
    public var onLost: (@Sendable () -> Void)? {
        get { lostHandler.withLock { $0 } }
        set { lostHandler.withLock { $0 = newValue } }
    }

    /// Whether the connection is open and the server ready: false after `close()` or once the server is lost.
    public var isConnected: Bool {
        !closed.load(ordering: .acquiring) && withLock { pa_context_get_state(context) == PA_CONTEXT_READY }
    }

    /// Stops the mainloop thread and disconnects. Idempotent. Must not be
    /// called from a libpulse callback: `pa_threaded_mainloop_stop` joins the
    /// mainloop thread, which would then wait for itself.
    public func close() {
        precondition(pa_threaded_mainloop_in_thread(mainloop) == 0,
                     "PulseConnection.close() called on the mainloop thread; hop to another thread first")
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        withLock {
            // No onLost for a disconnect we asked for.
            pa_context_set_state_callback(context, nil, nil)
            pa_context_set_subscribe_callback(context, nil, nil)
            pa_context_disconnect(context)
        }
        pa_threaded_mainloop_stop(mainloop)
        lostHandler.withLock { $0 = nil }
        routeHandler.withLock { $0 = nil }
    }

    /// Runs `body` holding the mainloop lock, so that no callback runs meanwhile.
    public func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        return try body()
    }

    /// The server's default output.
    public func defaultSink() throws -> SinkInfo {
        let name = try request("pa_context_get_server_info", initial: String?.none) { context, reply in
            pa_context_get_server_info(context, { _, info, reply in
                Reply<String?>.of(reply).value = info?.pointee.default_sink_name.map { String(cString: $0) }
            }, reply)
        }
        guard let name else { throw PulseError(call: "pa_context_get_server_info", code: PA_ERR_NOENTITY) }
        let sink = try request("pa_context_get_sink_info_by_name", initial: SinkInfo?.none) { context, reply in
            pa_context_get_sink_info_by_name(context, name, { _, info, _, reply in
                // Called once with the sink, then once more with end-of-list.
                if let info { Reply<SinkInfo?>.of(reply).value = SinkInfo(info.pointee) }
            }, reply)
        }
        guard let sink else { throw PulseError.pending("pa_context_get_sink_info_by_name", context: context) }
        return sink
    }

    /// The names of all sinks.
    public func sinkNames() throws -> [String] {
        try request("pa_context_get_sink_info_list", initial: [String]()) { context, reply in
            pa_context_get_sink_info_list(context, { _, info, _, reply in
                if let info { Reply<[String]>.of(reply).value.append(String(cString: info.pointee.name)) }
            }, reply)
        }
    }

    /// The sink whose monitor source `name` is; nil for a source that hears
    /// something else (a microphone, a line in).
    public func monitoredSink(ofSource name: String) throws -> String? {
        try request("pa_context_get_source_info_by_name", initial: String?.none) { context, reply in
            pa_context_get_source_info_by_name(context, name, { _, info, _, reply in
                if let info { Reply<String?>.of(reply).value = info.pointee.monitor_of_sink_name.map { String(cString: $0) } }
            }, reply)
        }
    }

    /// Calls `handler` on the mainloop thread whenever the server, a sink, a
    /// source, a card or a capture changes: a new default, a plugged
    /// headset, a port switch, a microphone that went away. It must
    /// not query from there (see the type's notes); hop to another thread.
    /// Replaces an earlier handler.
    public func subscribeToRouteChanges(_ handler: @escaping @Sendable () -> Void) throws {
        routeHandler.withLock { $0 = handler }
        withLock {
            pa_context_set_subscribe_callback(context, { _, _, _, userdata in
                Unmanaged<PulseConnection>.fromOpaque(userdata!).takeUnretainedValue().routeHandler.withLock { $0 }?()
            }, Unmanaged.passUnretained(self).toOpaque())
        }
        let mask = pa_subscription_mask_t(PA_SUBSCRIPTION_MASK_SERVER.rawValue | PA_SUBSCRIPTION_MASK_SINK.rawValue
                                          | PA_SUBSCRIPTION_MASK_CARD.rawValue | PA_SUBSCRIPTION_MASK_SOURCE.rawValue
                                          | PA_SUBSCRIPTION_MASK_SOURCE_OUTPUT.rawValue)
        let succeeded = try request("pa_context_subscribe", initial: false) { context, reply in
            pa_context_subscribe(context, mask, { _, success, reply in Reply<Bool>.of(reply).value = success != 0 }, reply)
        }
        guard succeeded else { throw PulseError.pending("pa_context_subscribe", context: context) }
    }

    // MARK: - Waiting for the server

    /// Issues one request with `start` (given the context and the userdata
    /// for its callback, which fills in a `Reply<Value>`) and waits for its
    /// operation to finish. Throws if the connection is closed or is lost
    /// meanwhile: libpulse then cancels the operation.
    func request<Value>(_ call: String, initial: Value,
                        _ start: (OpaquePointer, UnsafeMutableRawPointer) -> OpaquePointer?) throws -> Value {
        try withLock {
            try checkReady(call)
            let reply = Reply(initial)
            guard let operation = start(context, Unmanaged.passUnretained(reply).toOpaque()) else {
                throw PulseError.pending(call, context: context)
            }
            defer { pa_operation_unref(operation) }
            pa_operation_set_state_callback(operation, signalMainloop, UnsafeMutableRawPointer(mainloop))
            do {
                try wait(call) { pa_operation_get_state(operation) != PA_OPERATION_RUNNING }
            } catch {
                // No reply may arrive after this: the reply is gone then.
                pa_operation_cancel(operation)
                throw error
            }
            guard pa_operation_get_state(operation) == PA_OPERATION_DONE else {
                throw PulseError.pending(call, context: context)
            }
            return withExtendedLifetime(reply) { reply.value }
        }
    }

    /// How long a request waits for the server, and a ping for its answer:
    /// one that stopped answering (stopped, hung, swapping) must not hold
    /// the caller for ever, and is as good as gone.
    public static let answerTimeout = Duration.seconds(2)

    /// With the lock held: waits until `done` says so, or throws a timeout
    /// once `answerTimeout` has passed.
    func wait(_ call: String, until done: () -> Bool) throws {
        let deadline = Deadline(mainloop: mainloop)
        // libpulse has no timed wait; a timer event on the loop ends the wait instead.
        let timer = pa_context_rttime_new(context, pa_rtclock_now() + microseconds(Self.answerTimeout), { _, _, _, userdata in
            let deadline = Unmanaged<Deadline>.fromOpaque(userdata!).takeUnretainedValue()
            deadline.passed = true
            pa_threaded_mainloop_signal(deadline.mainloop, 0)
        }, Unmanaged.passUnretained(deadline).toOpaque())
        defer { withExtendedLifetime(deadline) { pa_threaded_mainloop_get_api(mainloop).pointee.time_free(timer) } }
        while !done() {
            if deadline.passed { throw PulseError(call: call, code: PA_ERR_TIMEOUT) }
            pa_threaded_mainloop_wait(mainloop)
        }
    }

    /// Asks the server something small without waiting for the answer;
    /// `secondsSinceAnswer` says how long it has left a ping unanswered.
    public func ping() {
        withLock {
            guard !closed.load(ordering: .acquiring), pa_context_get_state(context) == PA_CONTEXT_READY,
                  pingSent == nil else { return }
            pingSent = .now
            let operation = pa_context_get_server_info(context, { _, _, userdata in
                Unmanaged<PulseConnection>.fromOpaque(userdata!).takeUnretainedValue().pingSent = nil
            }, Unmanaged.passUnretained(self).toOpaque())
            if let operation { pa_operation_unref(operation) }
        }
    }

    /// How long the last ping has waited for its answer; 0 when answered.
    public var secondsSinceAnswer: Double {
        withLock {
            guard let pingSent else { return 0 }
            let waited = ContinuousClock.now - pingSent
            return Double(waited.components.seconds) + Double(waited.components.attoseconds) * 1e-18
        }
    }

    /// Throws unless the connection is open and ready. Call with the lock held.
    func checkReady(_ call: String) throws {
        guard !closed.load(ordering: .acquiring) else { throw PulseError(call: call, code: PA_ERR_BADSTATE) }
        guard pa_context_get_state(context) == PA_CONTEXT_READY else { throw PulseError.pending(call, context: context) }
    }

    /// On the mainloop thread: wakes whoever waits, and reports a lost connection once.
    private func stateChanged() {
        switch pa_context_get_state(context) {
        case PA_CONTEXT_READY:
            wasReady = true
        case PA_CONTEXT_FAILED, PA_CONTEXT_TERMINATED:
            guard wasReady else { break }
            wasReady = false
            lostHandler.withLock { handler in
                defer { handler = nil }
                return handler
            }?()
        default:
            break
        }
        pa_threaded_mainloop_signal(mainloop, 0)
    }
}

/// A request's result, filled in by its callback on the mainloop thread.
final class Reply<Value> {
    var value: Value

    init(_ value: Value) { self.value = value }

    /// The reply behind a callback's userdata.
    static func of(_ userdata: UnsafeMutableRawPointer?) -> Reply {
        Unmanaged<Reply>.fromOpaque(userdata!).takeUnretainedValue()
    }
}

/// When a wait for the server gives up, set by a timer on the mainloop thread.
final class Deadline {
    let mainloop: OpaquePointer
    var passed = false

    init(mainloop: OpaquePointer) { self.mainloop = mainloop }
}

/// A libpulse notify callback (operation, stream) whose userdata is the mainloop to signal.
func signalMainloop(_: OpaquePointer?, _ mainloop: UnsafeMutableRawPointer?) {
    pa_threaded_mainloop_signal(OpaquePointer(mainloop), 0)
}

private func microseconds(_ duration: Duration) -> pa_usec_t {
    let (seconds, attoseconds) = duration.components
    return pa_usec_t(max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
}
