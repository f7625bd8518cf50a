// The simulator's device, buffers, libraries, functions and pipelines.
//
// The device presents itself honestly: its name says it is the simulator. Its limits are those of an
// M-series GPU so that code written against them behaves as on a Mac:
//   maxThreadsPerThreadgroup      1024 × 1024 × 1024 (total per threadgroup is bounded by the
//                                 pipeline's maxTotalThreadsPerThreadgroup, as on Metal)
//   recommendedMaxWorkingSetSize  3/4 of the host's physical memory (macOS reports about that
//                                 share of unified memory on large-memory Macs)
//   maxBufferLength               1/2 of the host's physical memory
//   hasUnifiedMemory              true (CPU and "GPU" share memory, as on Apple silicon)
//   architecture                  "applegpu_g15s" (an M3 Max), or $MG_GPU_ARCH
import Foundation
import MSLSim

final class SimDevice: NSObject, MTLDevice, @unchecked Sendable {
    static let shared = SimDevice()

    let name = "metalgrad Metal simulator"
    let registryID: UInt64 = 0x6D67_5349_4D00  // "mgSIM": a fixed, recognisable id
    let architecture: MTLArchitecture
    let maxThreadsPerThreadgroup = MTLSize(width: 1024, height: 1024, depth: 1024)
    let recommendedMaxWorkingSetSize: UInt64
    let hasUnifiedMemory = true
    let maxBufferLength: Int
    /// The GPU family generation implied by the architecture (g13 → apple7 … g17 → apple10).
    private let appleFamily: Int

    private let lock = ShimLock()
    private var allocatedBytes = 0

    private override init() {
        let env = ProcessInfo.processInfo.environment["MG_GPU_ARCH"] ?? ""
        let arch = env.isEmpty ? "applegpu_g15s" : env
        architecture = MTLArchitecture(name: arch)
        let physical = ProcessInfo.processInfo.physicalMemory
        recommendedMaxWorkingSetSize = physical / 4 * 3
        maxBufferLength = Int(physical / 2)
        appleFamily = SimDevice.appleFamily(forArchitecture: arch)
        super.init()
    }

    private static func appleFamily(forArchitecture arch: String) -> Int {
        // "air64_v27": the Apple Paravirtual device of hosted macOS runners, which reports apple5
        // (MG_GPU_ARCH=air64_v27 lets Linux see what those runners see).
        if arch.hasPrefix("air64") { return 5 }
        let chars = Array(arch)
        guard chars.count >= 3, let gen = Int(String(chars[(chars.count - 3)..<(chars.count - 1)])) else {
            return 7
        }
        switch gen {
        case ..<14: return 7
        case 14: return 8
        case 15, 16: return 9
        default: return 10
        }
    }

    var currentAllocatedSize: Int {
        lock.withLock { allocatedBytes }
    }

    func noteAllocation(_ delta: Int) {
        lock.withLock { allocatedBytes += delta }
    }

    func supportsFamily(_ gpuFamily: MTLGPUFamily) -> Bool {
        switch gpuFamily {
        case .apple1, .apple2, .apple3, .apple4, .apple5, .apple6, .apple7, .apple8, .apple9, .apple10:
            return gpuFamily.rawValue - 1000 <= appleFamily
        case .mac2, .common1, .common2, .common3:
            return true
        case .metal3:
            return appleFamily >= 7
        case .metal4:
            return appleFamily >= 9
        default:
            return false
        }
    }

    func makeBuffer(length: Int, options: MTLResourceOptions) -> (any MTLBuffer)? {
        SimBuffer(device: self, length: length, bytes: nil)
    }

    func makeBuffer(bytes pointer: UnsafeRawPointer, length: Int, options: MTLResourceOptions) -> (any MTLBuffer)? {
        SimBuffer(device: self, length: length, bytes: pointer)
    }

    func makeBuffer(
        bytesNoCopy pointer: UnsafeMutableRawPointer, length: Int, options: MTLResourceOptions,
        deallocator: (@Sendable (UnsafeMutableRawPointer, Int) -> Void)?
    ) -> (any MTLBuffer)? {
        // Metal requires page-aligned no-copy memory; so does the simulator, to catch it here.
        guard length > 0, Int(bitPattern: pointer) % SimBuffer.alignment == 0 else { return nil }
        return SimBuffer(device: self, noCopy: pointer, length: length, deallocator: deallocator)
    }

    func makeLibrary(source: String, options: MTLCompileOptions?) throws -> any MTLLibrary {
        try SimLibrary(source: source, options: options ?? MTLCompileOptions())
    }

    func makeLibrary(URL url: URL) throws -> any MTLLibrary {
        // A .metallib holds AIR for Apple GPUs; the simulator only executes MSL source.
        throw simError(
            domain: "MTLLibraryErrorDomain", code: 1,
            "[MTLDevice makeLibrary(URL:)] \(url.path): compiled .metallib files cannot run on the Metal simulator; "
                + "build libraries from source with makeLibrary(source:options:)")
    }

    func makeComputePipelineState(function computeFunction: any MTLFunction) throws -> any MTLComputePipelineState {
        guard let function = computeFunction as? SimFunction else {
            throw simError(
                domain: "MTLLibraryErrorDomain", code: 2,
                "[MTLDevice makeComputePipelineState] the function was not created by the Metal simulator")
        }
        return SimPipelineState(function: function)
    }

    func makeCommandQueue() -> (any MTLCommandQueue)? {
        SimCommandQueue(maxCommandBufferCount: 64)
    }

    func makeCommandQueue(maxCommandBufferCount: Int) -> (any MTLCommandQueue)? {
        guard maxCommandBufferCount > 0 else { return nil }
        return SimCommandQueue(maxCommandBufferCount: maxCommandBufferCount)
    }

    func makeSharedEvent() -> (any MTLSharedEvent)? {
        SimSharedEvent()
    }
}

final class SimBuffer: NSObject, MTLBuffer, @unchecked Sendable {
    /// Apple silicon's page size: no-copy buffers must be page-aligned, as on Metal.
    static let alignment = 16384
    /// Buffers of a page or more are page-aligned; smaller ones 256-byte aligned — enough for any
    /// vector or simdgroup-matrix access — so that a small buffer does not fault in a page of its own.
    static func allocationAlignment(_ length: Int) -> Int { length >= alignment ? alignment : 256 }

    private let device: SimDevice
    private let memory: UnsafeMutableRawPointer
    let length: Int
    private let deallocator: (@Sendable (UnsafeMutableRawPointer, Int) -> Void)?
    private let ownsMemory: Bool
    private let lock = ShimLock()
    private var storedLabel: String?

    init?(device: SimDevice, length: Int, bytes: UnsafeRawPointer?) {
        guard length > 0, length <= device.maxBufferLength else { return nil }
        let raw: UnsafeMutableRawPointer
        if length >= SimBuffer.alignment {
            // Page-sized buffers come straight from the kernel: zeroed (as Metal's are) and faulted in
            // on first touch, so a buffer about to be overwritten (a file read, a kernel's output) is
            // not cleared first — the memset cost as much as the write that followed.
            guard let pages = SimBuffer.mapZeroedPages(length) else { return nil }
            raw = pages
        } else {
            var small: UnsafeMutableRawPointer?
            guard posix_memalign(&small, SimBuffer.allocationAlignment(length), length) == 0, let small else { return nil }
            memset(small, 0, length)  // Metal hands out zeroed pages
            raw = small
        }
        if let bytes { raw.copyMemory(from: bytes, byteCount: length) }
        self.device = device
        memory = raw
        self.length = length
        deallocator = nil
        ownsMemory = true
        super.init()
        device.noteAllocation(length)
    }

    /// Buffers of this size and more are aligned to it, so that where transparent huge pages are
    /// enabled system-wide the kernel can back them with huge pages. They are not requested with
    /// madvise: on a busy VM, first-touch faults of requested huge pages measured 3-5× slower than of
    /// 4 KiB pages (though faster once a process recycles them), and first touch is what loading a
    /// model costs.
    static let hugePageSize = 2 << 20

    /// Anonymous memory aligned to `alignment` (2 MiB from that size up): map a little more, then
    /// unmap the misaligned head and the tail.
    private static func mapZeroedPages(_ length: Int) -> UnsafeMutableRawPointer? {
        let align = length >= hugePageSize ? hugePageSize : alignment
        let mapped = mmap(nil, length + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let mapped, mapped != MAP_FAILED else { return nil }
        let start = Int(bitPattern: mapped)
        let aligned = (start + align - 1) / align * align
        let head = aligned - start
        if head > 0 { munmap(mapped, head) }
        let end = aligned + pageRounded(length)
        let tail = start + length + align - end
        if tail > 0 { munmap(UnsafeMutableRawPointer(bitPattern: end), tail) }
        return UnsafeMutableRawPointer(bitPattern: aligned)
    }

    private static func pageRounded(_ length: Int) -> Int {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        return (length + page - 1) / page * page
    }

    init(device: SimDevice, noCopy: UnsafeMutableRawPointer, length: Int,
         deallocator: (@Sendable (UnsafeMutableRawPointer, Int) -> Void)?) {
        self.device = device
        memory = noCopy
        self.length = length
        self.deallocator = deallocator
        ownsMemory = false
        super.init()
        device.noteAllocation(length)
    }

    deinit {
        device.noteAllocation(-length)
        if ownsMemory {
            if length >= SimBuffer.alignment { munmap(memory, SimBuffer.pageRounded(length)) } else { free(memory) }
        } else {
            deallocator?(memory, length)
        }
    }

    func contents() -> UnsafeMutableRawPointer { memory }

    var label: String? {
        get { lock.withLock { storedLabel } }
        set { lock.withLock { storedLabel = newValue } }
    }
}

/// Takes ownership of a message the simulator allocated.
func takeSimMessage(_ message: UnsafeMutablePointer<CChar>?, orElse fallback: String) -> String {
    guard let message else { return fallback }
    defer { mgsim_string_free(message) }
    return String(cString: message)
}

final class SimLibrary: NSObject, MTLLibrary, @unchecked Sendable {
    let handle: OpaquePointer
    let functionNames: [String]

    /// The preprocessor macro that turns on the simulator's checked mode for one library.
    static let checkedModeMacro = "MG_SIM_CHECK"

    init(source: String, options: MTLCompileOptions) throws {
        var names: [String] = []
        var values: [String?] = []
        var checked: Int32 = 0
        var tolerateReads: Int32 = 0
        for (name, value) in (options.preprocessorMacros ?? [:]).sorted(by: { $0.key < $1.key }) {
            let text: String?
            if let string = value as? NSString {
                text = string as String
            } else if let number = value as? NSNumber {
                text = number.stringValue
            } else {
                text = nil
            }
            if name == SimLibrary.checkedModeMacro, let text, text != "0" {
                checked = 1
                // MG_SIM_CHECK=writes: out-of-bounds writes fail, out-of-bounds reads give 0
                if text == "writes" { tolerateReads = 1 }
            }
            names.append(name)
            values.append(text)
        }
        let cNames = names.map { strdup($0) }
        let cValues = values.map { $0.map { strdup($0) } ?? nil }
        defer {
            cNames.forEach { free($0) }
            cValues.forEach { free($0) }
        }
        var error: UnsafeMutablePointer<CChar>?
        let created: OpaquePointer? = cNames.map { UnsafePointer($0) }.withUnsafeBufferPointer { namePtrs in
            cValues.map { $0.map { UnsafePointer($0) } }.withUnsafeBufferPointer { valuePtrs in
                var compile = mgsim_compile_options()
                compile.math_mode = Int32(options.mathMode.rawValue)
                compile.language_version = UInt32(options.languageVersion.rawValue)
                compile.macro_names = namePtrs.baseAddress
                compile.macro_values = valuePtrs.baseAddress
                compile.macro_count = Int32(names.count)
                compile.checked = checked
                compile.tolerate_oob_reads = tolerateReads
                return mgsim_library_create(source, &compile, &error)
            }
        }
        guard let created else {
            throw simError(
                domain: "MTLLibraryErrorDomain", code: 3,
                takeSimMessage(error, orElse: "[mgsim compile] the simulator could not compile the library"))
        }
        handle = created
        var functions: [String] = []
        let count = mgsim_library_function_count(created)
        for index in 0..<max(count, 0) {
            if let name = mgsim_library_function_name(created, index) {
                functions.append(String(cString: name))
            }
        }
        functionNames = functions
        super.init()
    }

    deinit {
        mgsim_library_release(handle)
    }

    func makeFunction(name functionName: String) -> (any MTLFunction)? {
        try? SimFunction(library: self, name: functionName, constants: [])
    }

    func makeFunction(name: String, constantValues: MTLFunctionConstantValues) throws -> any MTLFunction {
        try SimFunction(library: self, name: name, constants: constantValues.entries)
    }
}

final class SimFunction: NSObject, MTLFunction, @unchecked Sendable {
    let handle: OpaquePointer
    let library: SimLibrary

    init(library: SimLibrary, name: String, constants: [MTLFunctionConstantValues.Entry]) throws {
        let names = constants.map { $0.name.map { strdup($0) } ?? nil }
        defer { names.forEach { free($0) } }
        var values: [mgsim_constant_value] = []
        for (entry, cName) in zip(constants, names) {
            var value = mgsim_constant_value()
            value.index = Int32(entry.index)
            value.name = UnsafePointer(cName)
            value.type = UInt32(entry.type.rawValue)
            withUnsafeMutableBytes(of: &value.bytes) { raw in
                for (offset, byte) in entry.bytes.prefix(raw.count).enumerated() {
                    raw[offset] = byte
                }
            }
            values.append(value)
        }
        var error: UnsafeMutablePointer<CChar>?
        let created = values.withUnsafeBufferPointer { buffer in
            mgsim_function_create(library.handle, name, buffer.baseAddress, Int32(buffer.count), &error)
        }
        guard let created else {
            throw simError(
                domain: "MTLLibraryErrorDomain", code: 5,
                takeSimMessage(error, orElse: "[mgsim function] no function named '\(name)'"))
        }
        handle = created
        self.library = library
        super.init()
    }

    deinit {
        mgsim_function_release(handle)
    }
}

/// How the simulator runs a pipeline's threadgroups (MSLSim's MGSIM_EXEC_*: 0 plain loop, 1
/// work-item form, 2 fibers) and, for fibers, why, as far as known without compiling (a work-item
/// kernel still at tier 0 says work-item). Simulator-only: the runtime reaches it through its one
/// `#if !canImport(Metal)` block.
public func simulatorExecutionModel(of state: any MTLComputePipelineState) -> (model: Int32, reason: String) {
    guard let sim = state as? SimPipelineState else { return (0, "") }
    var reason: UnsafePointer<CChar>? = nil
    let model = mgsim_function_execution_model_known(sim.function.handle, &reason)
    return (model, reason.map { String(cString: $0) } ?? "")
}

final class SimPipelineState: NSObject, MTLComputePipelineState, @unchecked Sendable {
    let function: SimFunction
    let maxTotalThreadsPerThreadgroup: Int
    let threadExecutionWidth: Int
    let staticThreadgroupMemoryLength: Int

    init(function: SimFunction) {
        self.function = function
        maxTotalThreadsPerThreadgroup = Int(mgsim_function_max_total_threads_per_threadgroup(function.handle))
        threadExecutionWidth = Int(mgsim_function_thread_execution_width(function.handle))
        staticThreadgroupMemoryLength = Int(mgsim_function_static_threadgroup_memory_length(function.handle))
        super.init()
    }
}
