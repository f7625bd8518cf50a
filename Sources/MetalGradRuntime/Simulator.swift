// The only place the runtime reaches past the Metal API subset: on Linux the shim runs kernels on
// the MSL CPU simulator, which takes per-dispatch hints (checked-mode view lengths and the
// must-write mask) and reports compile statistics. On macOS these are no-ops.
//
// Checked mode: a library built with the preprocessor macro `MG_SIM_CHECK=1` (mg_library_new's
// `checked` flag sets it) runs in the simulator's checked mode, where out-of-bounds accesses and
// unwritten must-write outputs fail the command buffer. On a real GPU the macro is inert.
import Foundation
#if !canImport(Metal)
import MSLSim
import MetalShim

let runningOnSimulator = true

/// Hands the simulator the logical view length of each binding (0: to the end of the buffer) and
/// the must-write mask for the dispatch encoded next on this thread.
func annotateNextDispatch(viewLengths: UnsafePointer<UInt64>, mustWrite: UInt64) {
    var annotation = mgsim_annotation()
    withUnsafeMutableBytes(of: &annotation.view_length) { raw in
        raw.copyMemory(from: UnsafeRawBufferPointer(start: viewLengths, count: Int(MGSIM_MAX_BINDINGS) * 8))
    }
    annotation.must_write_mask = mustWrite
    mgsim_annotate_next_dispatch(&annotation)
}

/// Frees the simulator's idle checked-mode record memory (kept across dispatches; clearCache).
func releaseSimulatorCheckMemory() {
    mgsim_release_check_memory()
}

/// The dispatches of a failed command buffer that failed (ordinals within it, with their
/// messages); the simulator runs the others. nil: unknown (the whole command buffer failed).
func failedDispatchOrdinals(_ error: any Error) -> [(Int, String)]? {
    guard let entries = (error as NSError).userInfo[shimFailedDispatchesKey] as? [[Any]] else { return nil }
    return entries.compactMap { entry in
        guard entry.count == 2, let ordinal = entry[0] as? Int, let message = entry[1] as? String else { return nil }
        return (ordinal, message)
    }
}

/// The simulator's loaded kernel objects: sets its cache limits (below 1: unchanged) and reports the
/// previous limits and what is loaded now.
func simulatorObjectLimits(objects: Int, bytes: Double) -> (previousObjects: Double, previousBytes: Double, loadedObjects: Double, loadedBytes: Double) {
    var state = mgsim_library_cache_state()
    mgsim_library_cache_limits(Int64(objects), bytes >= 1 ? Int64(min(bytes, 9.0e18)) : -1, &state)
    return (Double(state.previous_count), Double(state.previous_bytes), Double(state.loaded_objects), Double(state.loaded_bytes))
}

func simulatorStatsJSON() -> String {
    var stats = mgsim_stats()
    mgsim_get_stats(&stats)
    let directory = mgsim_cache_directory().map { String(cString: $0) } ?? ""
    var cacheState = mgsim_library_cache_state()
    mgsim_library_cache_limits(0, 0, &cacheState)
    let fields: [String: Any] = [
        "simulator": true,
        "compilerInvocations": stats.compiler_invocations,
        "diskCacheHits": stats.disk_cache_hits,
        "memoryCacheHits": stats.memory_cache_hits,
        "dispatches": stats.dispatches,
        "fiberDispatches": stats.fiber_dispatches,
        "loadedObjects": cacheState.loaded_objects,
        "loadedObjectBytes": cacheState.loaded_bytes,
        "unloadedObjects": cacheState.unloaded_objects,
        "workItemDispatches": stats.workitem_dispatches,
        "fiberFallbackDispatches": stats.fiber_fallback_dispatches,
        "tier0Compiles": stats.tier0_compiles,
        "tier0Dispatches": stats.tier0_dispatches,
        "tierPromotions": stats.tier_promotions,
        "tier0FiberDispatches": stats.tier0_fiber_dispatches,
        "checkMemoryMaps": stats.check_memory_maps,
        "checkMemoryReuses": stats.check_memory_reuses,
        "checkMemoryWraps": stats.check_memory_wraps,
        "poolSteers": stats.pool_steers,
        "poolSteerBackoffs": stats.pool_steer_backoffs,
        "cacheDirectory": directory,
    ]
    let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data("{}".utf8)
    return String(decoding: data, as: UTF8.self)
}

/// How the simulator runs this pipeline: {"model":"plain"|"work-item"|"fibers","reason":...}.
func pipelineExecutionJSON(_ state: any MTLComputePipelineState) -> String {
    let (model, reason) = simulatorExecutionModel(of: state)
    let fields: [String: Any] = ["model": model == 1 ? "work-item" : model == 2 ? "fibers" : "plain", "reason": reason]
    let data = (try? JSONSerialization.data(withJSONObject: fields, options: [.sortedKeys])) ?? Data("{}".utf8)
    return String(decoding: data, as: UTF8.self)
}
#else
import Metal

let runningOnSimulator = false
func pipelineExecutionJSON(_ state: any MTLComputePipelineState) -> String { "{}" }
func annotateNextDispatch(viewLengths: UnsafePointer<UInt64>, mustWrite: UInt64) {}
func failedDispatchOrdinals(_ error: any Error) -> [(Int, String)]? { nil }
func simulatorObjectLimits(objects: Int, bytes: Double) -> (previousObjects: Double, previousBytes: Double, loadedObjects: Double, loadedBytes: Double) {
    (0, 0, 0, 0)
}
func simulatorStatsJSON() -> String { "{\"simulator\":false}" }
func releaseSimulatorCheckMemory() {}
#endif

/// Bindings per dispatch (Metal's buffer argument table has 31 entries).
let maxBindings = 31
