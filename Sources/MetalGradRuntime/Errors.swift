// Errors and the thread-local strings handed back through the C ABI.
import Foundation

/// A failure inside the runtime. The C entry point that catches it prefixes its own name, so the
/// message reads "[mg_buffer_new] …" for the caller.
struct RuntimeError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Thread-local C strings: one slot for the last error, one for returned JSON. Each slot owns a
/// malloc'd copy that stays valid until the next write to the same slot on the same thread.
final class ThreadLocalString: Sendable {
    private let key: pthread_key_t

    init() {
        var key = pthread_key_t()
        // The destructor frees the thread's copy when the thread exits (GC threads come and go).
        pthread_key_create(&key, { free($0) })
        self.key = key
    }

    func set(_ text: String) -> UnsafePointer<CChar> {
        let copy = strdup(text)!
        free(pthread_getspecific(key))
        pthread_setspecific(key, copy)
        return UnsafePointer(copy)
    }

    func get() -> UnsafePointer<CChar>? {
        pthread_getspecific(key).map { UnsafePointer($0.assumingMemoryBound(to: CChar.self)) }
    }
}

let lastErrorSlot = ThreadLocalString()
let returnedStringSlot = ThreadLocalString()
/// Records `error` for mg_last_error(), tagged with the failing C entry point.
func recordError(_ operation: String, _ error: any Error) {
    let body: String
    if let error = error as? RuntimeError {
        body = error.message
    } else {
        body = String(describing: error)
    }
    _ = lastErrorSlot.set("[\(operation)] \(body)")
}
