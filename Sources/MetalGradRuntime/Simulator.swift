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

func simulatorStatsJSON() -> String {
    var stats = mgsim_stats()
    mgsim_get_stats(&stats)
    let directory = mgsim_cache_directory().map { String(cString: $0) } ?? ""
    let fields: [String: Any] = [
        "simulator": true,
        "compilerInvocations": stats.compiler_invocations,
        "diskCacheHits": stats.disk_cache_hits,
        "memoryCacheHits": stats.memory_cache_hits,
        "dispatches": stats.dispatches,
        "fiberDispatches": stats.fiber_dispatches,
        "workItemDispatches": stats.workitem_dispatches,
        "fiberFallbackDispatches": stats.fiber_fallback_dispatches,
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
func simulatorStatsJSON() -> String { "{\"simulator\":false}" }
#endif

/// Bindings per dispatch (Metal's buffer argument table has 31 entries).
let maxBindings = 31
