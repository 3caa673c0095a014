#if canImport(Glibc)
import Glibc
#endif

/// A wake-up that the render thread gives a worker without blocking or
/// allocating (a POSIX semaphore's post): the worker that fills or drains
/// what a block moved waits for the block instead of polling for it.
/// Wake-ups given while the worker is busy count as one.
public final class WakeSignal: @unchecked Sendable {
    private let semaphore: UnsafeMutablePointer<sem_t>

    /// A signal nobody has given yet.
    public init() {
        semaphore = .allocate(capacity: 1)
        sem_init(semaphore, 0, 0)
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// Wakes the waiter, or the next wait if none waits now. Real-time
    /// safe; two threads giving it at once wake the waiter twice at most.
    public func signal() {
        var pending: Int32 = 0
        sem_getvalue(semaphore, &pending)
        if pending == 0 { sem_post(semaphore) }
    }

    /// Waits until the signal is given or `seconds` pass on the wall clock
    /// (`sem_timedwait`'s); true when it was given.
    @discardableResult
    public func wait(seconds: Double) -> Bool {
        var deadline = timespec()
        clock_gettime(CLOCK_REALTIME, &deadline)
        let nanoseconds = Int(deadline.tv_nsec) + Int(max(0, seconds) * 1e9)
        deadline.tv_sec += nanoseconds / 1_000_000_000
        deadline.tv_nsec = nanoseconds % 1_000_000_000
        while sem_timedwait(semaphore, &deadline) != 0 {
            guard errno == EINTR else { return false }
        }
        return true
    }
}
