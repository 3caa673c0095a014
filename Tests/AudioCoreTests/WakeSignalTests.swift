import AudioCore
import Foundation
import Testing

@Suite struct WakeSignalTests {
    /// A worker waiting for blocks wakes once for each block given while it
    /// waits, once for any number given while it was busy, and otherwise
    /// only when its wait runs out.
    @Test func wakesForBlocksAndCoalescesThoseGivenWhileBusy() {
        let signal = WakeSignal()
        var started = ContinuousClock.now
        #expect(!signal.wait(seconds: 0.05))
        let waited = (ContinuousClock.now - started) / .seconds(1)
        #expect(waited >= 0.045 && waited < 1)

        for _ in 0..<10 { signal.signal() }
        #expect(signal.wait(seconds: 1))
        #expect(!signal.wait(seconds: 0.01))

        let woken = DispatchSemaphore(value: 0)
        let given = ContinuousClock.now
        Thread {
            if signal.wait(seconds: 5) { woken.signal() }
        }.start()
        Thread.sleep(forTimeInterval: 0.05)
        started = ContinuousClock.now
        signal.signal()
        #expect(woken.wait(timeout: .now() + 1) == .success)
        // Woken by the signal, well before its wait of 5 s ran out.
        #expect((ContinuousClock.now - started) / .seconds(1) < 0.5)
        #expect((ContinuousClock.now - given) / .seconds(1) < 1)
    }
}
