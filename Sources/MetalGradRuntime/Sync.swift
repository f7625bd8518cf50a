// A mutex + condition variable usable on macOS 14 and Linux (Synchronization.Mutex needs macOS 15,
// and NSCondition's timed wait is wall-clock based on both platforms anyway).
import Foundation

final class RuntimeLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(cond, nil)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    @inline(__always)
    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a broadcast; the caller holds the lock (inside withLock).
    func wait() {
        pthread_cond_wait(cond, mutex)
    }

    /// Waits for a broadcast or until `seconds` have passed; the caller holds the lock.
    func wait(seconds: Double) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let whole = Int(seconds.rounded(.down))
        var nanos = now.tv_nsec + Int((seconds - Double(whole)) * 1e9)
        var secs = now.tv_sec + whole
        if nanos >= 1_000_000_000 {
            secs += 1
            nanos -= 1_000_000_000
        }
        var deadline = timespec(tv_sec: secs, tv_nsec: nanos)
        _ = pthread_cond_timedwait(cond, mutex, &deadline)
    }

    func broadcast() {
        pthread_cond_broadcast(cond)
    }
}

/// Monotonic seconds, for timeouts.
func monotonicSeconds() -> Double {
    ProcessInfo.processInfo.systemUptime
}
