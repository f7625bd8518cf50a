// The C ABI (docs/ARCHITECTURE.md, "C ABI conventions"). Every entry point that can fail returns a
// status (0 ok), a null handle or a negative size, and leaves "[mg_name] message" for
// mg_last_error() on the calling thread. Handles are opaque pointers; byte sizes are doubles.
import Foundation

@inline(__always)
private func handleBits(_ pointer: UnsafeMutableRawPointer?) -> UInt64 {
    UInt64(UInt(bitPattern: pointer))
}

@inline(__always)
private func pointer(_ handle: UInt64) -> UnsafeMutableRawPointer? {
    UnsafeMutableRawPointer(bitPattern: UInt(handle))
}

/// Runs `body`, turning a thrown error into the failure value plus a recorded message.
@inline(__always)
private func guarded<T>(_ operation: String, _ failure: T, _ body: (Runtime) throws -> T) -> T {
    do {
        return try body(try Runtime.get())
    } catch {
        recordError(operation, error)
        return failure
    }
}

/// A byte count from JavaScript: a finite, non-negative integer below 2^53.
private func byteCount(_ value: Double, _ what: String) throws -> Int {
    guard value.isFinite, value >= 0, value == value.rounded(), value <= 9_007_199_254_740_992 else {
        throw RuntimeError("\(what) must be a non-negative integer number of bytes, got \(value)")
    }
    return Int(value)
}

private func string(_ text: UnsafePointer<CChar>?, _ what: String) throws -> String {
    guard let text else { throw RuntimeError("\(what) is null") }
    return String(cString: text)
}

private func returned(_ text: String) -> UnsafePointer<CChar>? {
    returnedStringSlot.set(text)
}

// MARK: Errors and facts

/// The message of the last failure on this thread ("" when none); valid until the next failure.
@_cdecl("mg_last_error")
public func mg_last_error() -> UnsafePointer<CChar> {
    lastErrorSlot.get() ?? lastErrorSlot.set("")
}

/// Device facts as JSON (valid until the next string-returning call on this thread).
@_cdecl("mg_device_info_json")
public func mg_device_info_json() -> UnsafePointer<CChar>? {
    guarded("mg_device_info_json", nil) { returned($0.device.infoJSON) }
}

/// Simulator compile/dispatch counters as JSON; {"simulator":false} on a real GPU.
@_cdecl("mg_sim_stats_json")
public func mg_sim_stats_json() -> UnsafePointer<CChar>? {
    returned(simulatorStatsJSON())
}

/// Batches, dispatches, command buffers and barriers so far, as JSON.
@_cdecl("mg_runtime_stats_json")
public func mg_runtime_stats_json() -> UnsafePointer<CChar>? {
    guarded("mg_runtime_stats_json", nil) { runtime in
        let counters = runtime.lock.withLock { runtime.counters }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return returned(String(decoding: try encoder.encode(counters), as: UTF8.self))
    }
}

// MARK: Memory

/// Fills out[0..<8] with active, peak, cache, view-held bytes, memory limit, cache limit, wired
/// limit and the number of live (not yet released) buffers.
@_cdecl("mg_memory_stats")
public func mg_memory_stats(_ out: UnsafeMutablePointer<Double>?) -> Int32 {
    guarded("mg_memory_stats", 1) { runtime in
        guard let out else { throw RuntimeError("the output array is null") }
        let stats = runtime.memoryStats()
        let values = [stats.active, stats.peak, stats.cache, stats.viewHeld, stats.memoryLimit, stats.cacheLimit,
                      stats.wiredLimit, stats.liveBuffers]
        for (index, value) in values.enumerated() { out[index] = Double(value) }
        return 0
    }
}

@_cdecl("mg_memory_reset_peak")
public func mg_memory_reset_peak() -> Int32 {
    guarded("mg_memory_reset_peak", 1) { runtime in
        runtime.lock.withLock { runtime.allocator.resetPeak() }
        return 0
    }
}

/// Frees every cached allocation (memory a live JavaScript view points into stays mapped).
@_cdecl("mg_memory_clear_cache")
public func mg_memory_clear_cache() -> Int32 {
    guarded("mg_memory_clear_cache", 1) { runtime in
        runtime.lock.withLock { runtime.allocator.clearCache() }
        return 0
    }
}

/// Sets the memory limit; returns the previous one, or -1 on error.
@_cdecl("mg_memory_set_limit")
public func mg_memory_set_limit(_ bytes: Double) -> Double {
    guarded("mg_memory_set_limit", -1) { runtime in
        let value = try byteCount(bytes, "the memory limit")
        return Double(runtime.lock.withLock { runtime.allocator.setMemoryLimit(value) })
    }
}

/// Sets the cache limit (evicting the oldest cached buffers beyond it); returns the previous one.
@_cdecl("mg_memory_set_cache_limit")
public func mg_memory_set_cache_limit(_ bytes: Double) -> Double {
    guarded("mg_memory_set_cache_limit", -1) { runtime in
        let value = try byteCount(bytes, "the cache limit")
        return Double(runtime.lock.withLock { runtime.allocator.setCacheLimit(value) })
    }
}

/// Stores the wired limit and returns the previous one. Stored only: wiring needs residency sets,
/// which are outside the Metal API subset (and the simulator has nothing to wire).
@_cdecl("mg_memory_set_wired_limit")
public func mg_memory_set_wired_limit(_ bytes: Double) -> Double {
    guarded("mg_memory_set_wired_limit", -1) { runtime in
        let value = try byteCount(bytes, "the wired limit")
        guard value <= Int(clamping: runtime.device.recommendedMaxWorkingSetSize) else {
            throw RuntimeError(
                "a wired limit of \(value) bytes is larger than the recommended working set size "
                    + "(\(runtime.device.recommendedMaxWorkingSetSize) bytes)")
        }
        return Double(runtime.lock.withLock { runtime.allocator.setWiredLimit(value) })
    }
}

// MARK: Buffers

/// A new buffer of `bytes` bytes (0 is allowed: a valid handle with no memory). The caller owns it
/// and holds its one view pin (released by mg_buffer_view_release).
@_cdecl("mg_buffer_new")
public func mg_buffer_new(_ bytes: Double) -> UnsafeMutableRawPointer? {
    guarded("mg_buffer_new", nil) { runtime in
        pointer(try runtime.newBuffer(size: try byteCount(bytes, "the buffer size")))
    }
}

/// mg_buffer_new and mg_buffer_contents in one call (one crossing, one lock): the handle; in out[0]
/// the address of its memory (0 for a zero-byte buffer) and in out[1] its allocated length (the
/// rounded size, or a larger cached block it reuses: what the memory counters count).
@_cdecl("mg_buffer_new_at")
public func mg_buffer_new_at(_ bytes: Double, _ out: UnsafeMutablePointer<Double>?) -> UnsafeMutableRawPointer? {
    guarded("mg_buffer_new", nil) { runtime in
        guard let out else { throw RuntimeError("the address slot is null") }
        let made = try runtime.newBufferWithContents(size: try byteCount(bytes, "the buffer size"))
        out[0] = Double(UInt(bitPattern: made.contents))
        out[1] = Double(made.allocated)
        return pointer(made.handle)
    }
}

/// The buffer's CPU-visible memory; null for a zero-byte buffer (not an error) or on error.
@_cdecl("mg_buffer_contents")
public func mg_buffer_contents(_ buffer: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
    guarded("mg_buffer_contents", nil) { try $0.bufferContents(handleBits(buffer)) }
}

/// The size the buffer was created with, or -1 on error.
@_cdecl("mg_buffer_length")
public func mg_buffer_length(_ buffer: UnsafeMutableRawPointer?) -> Double {
    guarded("mg_buffer_length", -1) { Double(try $0.bufferSize(handleBits(buffer))) }
}

/// 0 when the buffer's contents are valid; 1 when its last GPU write failed or was computed from a
/// failed buffer (the reason in mg_last_error). Meaningful once the batch that wrote it completed.
@_cdecl("mg_buffer_failure")
public func mg_buffer_failure(_ buffer: UnsafeMutableRawPointer?) -> Int32 {
    guarded("mg_buffer_failure", 1) { runtime in
        guard let message = try runtime.bufferFailure(handleBits(buffer)) else { return 0 }
        recordError("mg_buffer_failure", RuntimeError(message))
        return 1
    }
}

/// Drops the owner's hold. Idempotent; thread-safe.
@_cdecl("mg_buffer_release")
public func mg_buffer_release(_ buffer: UnsafeMutableRawPointer?) -> Int32 {
    guarded("mg_buffer_release", 1) { runtime in
        try runtime.releaseBuffer(handleBits(buffer))
        return 0
    }
}

/// The live buffer, which TypeScript keeps for reuse, counts as cache until mg_memory_unpark or its
/// release (Allocator.swift, "Parking"). Returns 0, 1 when declined (the cache limit has no room, or
/// a batch still holds it: release it instead), -1 on error (not live, already parked, empty).
@_cdecl("mg_memory_park")
public func mg_memory_park(_ buffer: UnsafeMutableRawPointer?) -> Int32 {
    guarded("mg_memory_park", -1) { runtime in
        try runtime.parkBuffer(handleBits(buffer)) ? 0 : 1
    }
}

/// The parked buffer is in use again. 0 ok, 1 on error (not live, or not parked).
@_cdecl("mg_memory_unpark")
public func mg_memory_unpark(_ buffer: UnsafeMutableRawPointer?) -> Int32 {
    guarded("mg_memory_unpark", 1) { runtime in
        try runtime.unparkBuffer(handleBits(buffer))
        return 0
    }
}

/// The ArrayBuffer deallocator (JSTypedArrayBytesDeallocator: bytes, context = buffer handle). It
/// may run on a GC thread. Drops the view pin, and the owner too if it was never released.
@_cdecl("mg_buffer_view_release")
public func mg_buffer_view_release(_ bytes: UnsafeMutableRawPointer?, _ context: UnsafeMutableRawPointer?) {
    guard case .success(let runtime) = Runtime.shared else { return }
    runtime.releaseView(handleBits(context))
}

/// The address of mg_buffer_view_release, to hand to toArrayBuffer as its deallocator.
@_cdecl("mg_buffer_view_deallocator")
public func mg_buffer_view_deallocator() -> UnsafeMutableRawPointer? {
    let function: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutableRawPointer?) -> Void = mg_buffer_view_release
    return unsafeBitCast(function, to: UnsafeMutableRawPointer?.self)
}

// MARK: Libraries and pipelines

/// Compiles (or finds in the cache) a library. `macros`: "NAME=VALUE" (or "NAME") entries separated
/// by "\n", may be null. mathMode: 0 safe, 1 relaxed, 2 fast. languageVersion: an
/// MTLLanguageVersion raw value, 0 for the default. checked 1 adds MG_SIM_CHECK=1 (the simulator's
/// checked mode; inert on a GPU), 2 MG_SIM_CHECK=writes (out-of-bounds writes fail the dispatch,
/// out-of-bounds reads give 0).
@_cdecl("mg_library_new")
public func mg_library_new(_ source: UnsafePointer<CChar>?, _ macros: UnsafePointer<CChar>?, _ mathMode: Int32,
                           _ languageVersion: UInt32, _ checked: Int32) -> UnsafeMutableRawPointer? {
    guarded("mg_library_new", nil) { runtime in
        let text = try string(source, "the source")
        var table: [(String, String)] = []
        if let macros {
            for line in String(cString: macros).split(separator: "\n", omittingEmptySubsequences: true) {
                let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = String(parts[0])
                guard !name.isEmpty, !name.contains(" ") else { throw RuntimeError("bad macro name in '\(line)'") }
                table.append((name, parts.count > 1 ? String(parts[1]) : "1"))
            }
        }
        return pointer(try runtime.library(
            source: text, macros: table, mathMode: mathMode, languageVersion: languageVersion, checked: checked))
    }
}

/// Loads a precompiled library (a .metallib built with `xcrun metallib`), cached per path. On the
/// Metal simulator this fails: it runs MSL source only.
@_cdecl("mg_library_from_file")
public func mg_library_from_file(_ path: UnsafePointer<CChar>?) -> UnsafeMutableRawPointer? {
    guarded("mg_library_from_file", nil) { runtime in
        pointer(try runtime.library(contentsOf: try string(path, "the path")))
    }
}

/// The library's kernel names as a JSON array of strings.
@_cdecl("mg_library_function_names_json")
public func mg_library_function_names_json(_ library: UnsafeMutableRawPointer?) -> UnsafePointer<CChar>? {
    guarded("mg_library_function_names_json", nil) { runtime in
        let names = try runtime.functionNames(library: handleBits(library))
        return returned(String(decoding: try JSONEncoder().encode(names), as: UTF8.self))
    }
}

/// A pipeline for a kernel, cached per (library, name, constants). `constants`: `count` groups of
/// 4 u32 words (index, MTLDataType raw value, value low word, value high word); may be null if 0.
@_cdecl("mg_pipeline_new")
public func mg_pipeline_new(_ library: UnsafeMutableRawPointer?, _ name: UnsafePointer<CChar>?,
                            _ constants: UnsafePointer<UInt32>?, _ count: Int32) -> UnsafeMutableRawPointer? {
    guarded("mg_pipeline_new", nil) { runtime in
        let functionName = try string(name, "the function name")
        guard count >= 0, count == 0 || constants != nil else {
            throw RuntimeError("\(count) function constants but no constant array")
        }
        let words = count == 0 ? [] : Array(UnsafeBufferPointer(start: constants, count: Int(count) * 4))
        return pointer(try runtime.pipeline(library: handleBits(library), name: functionName, constants: words))
    }
}

/// Fills out[0..<3] with maxTotalThreadsPerThreadgroup, threadExecutionWidth and
/// staticThreadgroupMemoryLength.
@_cdecl("mg_pipeline_info")
public func mg_pipeline_info(_ pipeline: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<Int32>?) -> Int32 {
    guarded("mg_pipeline_info", 1) { runtime in
        guard let out else { throw RuntimeError("the output array is null") }
        let record = try runtime.pipelineRecord(handleBits(pipeline))
        out[0] = Int32(clamping: record.maxTotalThreadsPerThreadgroup)
        out[1] = Int32(clamping: record.threadExecutionWidth)
        out[2] = Int32(clamping: record.staticThreadgroupMemoryLength)
        return 0
    }
}

/// The kernel cache (KernelCache.swift, and the simulator's loaded objects): sets the limits —
/// built pipeline states, built libraries, loaded simulator objects and their bytes; a value below
/// 1 keeps the current one — and fills out[0..<8] with the previous four limits, then the built
/// pipelines, built libraries, loaded simulator objects and their bytes now.
@_cdecl("mg_kernel_cache_limits")
public func mg_kernel_cache_limits(_ pipelines: Int32, _ libraries: Int32, _ simulatorObjects: Int32,
                                   _ simulatorBytes: Double, _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    guarded("mg_kernel_cache_limits", 1) { runtime in
        guard let out else { throw RuntimeError("the output array is null") }
        let (previous, builtPipelines, builtLibraries) = runtime.setKernelLimits(pipelines: Int(pipelines), libraries: Int(libraries))
        let sim = simulatorObjectLimits(objects: Int(simulatorObjects), bytes: simulatorBytes.isFinite ? simulatorBytes : -1)
        out[0] = Double(previous.pipelines)
        out[1] = Double(previous.libraries)
        out[2] = sim.previousObjects
        out[3] = sim.previousBytes
        out[4] = Double(builtPipelines)
        out[5] = Double(builtLibraries)
        out[6] = sim.loadedObjects
        out[7] = sim.loadedBytes
        return 0
    }
}

/// How the simulator runs the pipeline's threadgroups, as JSON: {"model":"plain"|"work-item"|
/// "fibers","reason":"..."} (fibers is the fallback; the reason says why); {} on a real GPU.
/// Valid until the next string-returning call on this thread.
@_cdecl("mg_pipeline_execution_json")
public func mg_pipeline_execution_json(_ pipeline: UnsafeMutableRawPointer?) -> UnsafePointer<CChar>? {
    guarded("mg_pipeline_execution_json", nil) { runtime in
        // the kernel cache may have dropped the built state: rebuilt from its recipe
        let record = try runtime.pipelineRecord(handleBits(pipeline))
        guard let state = try runtime.pipelineStates([record])[record.id] else { throw RuntimeError("the pipeline state could not be rebuilt") }
        return returned(pipelineExecutionJSON(state))
    }
}

// MARK: Queues and batches

/// A new command queue (a stream). Queues live as long as the process.
@_cdecl("mg_queue_new")
public func mg_queue_new() -> UnsafeMutableRawPointer? {
    guarded("mg_queue_new", nil) { pointer(try $0.newQueue()) }
}

/// Validates, encodes and commits a whole batch (`count` u32 words); returns the batch handle.
@_cdecl("mg_batch_submit")
public func mg_batch_submit(_ queue: UnsafeMutableRawPointer?, _ words: UnsafePointer<UInt32>?,
                            _ count: UInt32) -> UnsafeMutableRawPointer? {
    guarded("mg_batch_submit", nil) { runtime in
        guard let words else { throw RuntimeError("the batch words are null") }
        return pointer(try runtime.submit(queue: handleBits(queue), words: words, count: Int(count)))
    }
}

/// Waits for the batch: 0 completed, 1 failed (the command buffer's error in mg_last_error),
/// 2 timed out. `timeoutSeconds` may be Infinity.
@_cdecl("mg_batch_wait")
public func mg_batch_wait(_ batch: UnsafeMutableRawPointer?, _ timeoutSeconds: Double) -> Int32 {
    guarded("mg_batch_wait", 1) { runtime in
        let record = try runtime.batchRecord(handleBits(batch))
        guard !timeoutSeconds.isNaN else { throw RuntimeError("the timeout is NaN") }
        guard record.wait(timeout: timeoutSeconds) else {
            recordError("mg_batch_wait", RuntimeError("the batch did not complete within \(timeoutSeconds) s"))
            return 2
        }
        if case .failed(let message) = record.outcome { throw RuntimeError("the batch failed: \(message)") }
        return 0
    }
}

/// 0 pending, 1 completed, -1 failed (the error in mg_last_error), -2 bad handle.
@_cdecl("mg_batch_poll")
public func mg_batch_poll(_ batch: UnsafeMutableRawPointer?) -> Int32 {
    guarded("mg_batch_poll", -2) { runtime in
        switch try runtime.batchRecord(handleBits(batch)).outcome {
        case .pending: return 0
        case .completed: return 1
        case .failed(let message):
            recordError("mg_batch_poll", RuntimeError("the batch failed: \(message)"))
            return -1
        }
    }
}

/// Fills out[0..<2] with the batch's GPU start and end times (seconds on the host's clock).
@_cdecl("mg_batch_gpu_times")
public func mg_batch_gpu_times(_ batch: UnsafeMutableRawPointer?, _ out: UnsafeMutablePointer<Double>?) -> Int32 {
    guarded("mg_batch_gpu_times", 1) { runtime in
        guard let out else { throw RuntimeError("the output array is null") }
        guard let times = try runtime.batchRecord(handleBits(batch)).gpuTimes else {
            throw RuntimeError("the batch has not completed yet")
        }
        out[0] = times.start
        out[1] = times.end
        return 0
    }
}

/// Forgets the batch handle (a pending batch still completes). Idempotent.
@_cdecl("mg_batch_release")
public func mg_batch_release(_ batch: UnsafeMutableRawPointer?) -> Int32 {
    guarded("mg_batch_release", 1) { runtime in
        try runtime.releaseBatch(handleBits(batch))
        return 0
    }
}

// MARK: Capture

@_cdecl("mg_capture_start")
public func mg_capture_start(_ path: UnsafePointer<CChar>?) -> Int32 {
    guarded("mg_capture_start", 1) { runtime in
        try runtime.startCapture(path: try string(path, "the capture path"))
        return 0
    }
}

@_cdecl("mg_capture_stop")
public func mg_capture_stop() -> Int32 {
    guarded("mg_capture_stop", 1) { runtime in
        try runtime.stopCapture()
        return 0
    }
}
