// The runtime's state: the device, the handle tables and the allocator, behind one registry lock.
//
// Handles are opaque pointers whose bits are `serial << 3 | kind`. Serials are never reused, so a
// stale handle (released, or of the wrong kind) is always recognised instead of touching freed
// memory, and every handle stays below 2^53, exact in a JavaScript number.
#if canImport(Metal)
import Metal
#else
import MetalShim
#endif
import Foundation

enum HandleKind: UInt64 {
    case buffer = 1, library = 2, pipeline = 3, queue = 4, batch = 5

    var noun: String {
        switch self {
        case .buffer: return "buffer"
        case .library: return "library"
        case .pipeline: return "pipeline"
        case .queue: return "queue"
        case .batch: return "batch"
        }
    }
}

struct Handle {
    static func make(_ serial: UInt64, _ kind: HandleKind) -> UInt64 { serial << 3 | kind.rawValue }
    static func kind(_ handle: UInt64) -> HandleKind? { HandleKind(rawValue: handle & 7) }
    static func serial(_ handle: UInt64) -> UInt64 { handle >> 3 }
    static func describe(_ handle: UInt64) -> String { "0x" + String(handle, radix: 16) }
}

final class LibraryRecord {
    let id: UInt64
    let library: any MTLLibrary
    init(id: UInt64, library: any MTLLibrary) {
        self.id = id
        self.library = library
    }
}

final class PipelineRecord {
    let id: UInt64
    let name: String
    let state: any MTLComputePipelineState
    let maxTotalThreadsPerThreadgroup: Int
    let threadExecutionWidth: Int
    let staticThreadgroupMemoryLength: Int
    init(id: UInt64, name: String, state: any MTLComputePipelineState) {
        self.id = id
        self.name = name
        self.state = state
        maxTotalThreadsPerThreadgroup = state.maxTotalThreadsPerThreadgroup
        threadExecutionWidth = state.threadExecutionWidth
        staticThreadgroupMemoryLength = state.staticThreadgroupMemoryLength
    }
}

final class QueueRecord {
    let id: UInt64
    let queue: any MTLCommandQueue
    /// Keeps one batch's command buffers contiguous on the queue.
    let submitLock = RuntimeLock()
    init(id: UInt64, queue: any MTLCommandQueue) {
        self.id = id
        self.queue = queue
    }
}

struct LibraryKey: Hashable {
    let source: String
    let mathMode: Int32
    let languageVersion: UInt32
    let macros: [String]
    let checked: Bool
}

struct PipelineKey: Hashable {
    let library: UInt64
    let name: String
    let constants: [UInt32]
}

/// Counters that prove how work crossed the FFI boundary.
struct RuntimeCounters: Codable {
    var batchesSubmitted = 0
    var dispatchesEncoded = 0
    var commandBuffersCommitted = 0
    var memoryBarriers = 0
    var batchesFailed = 0
    var librariesCompiled = 0
    var pipelinesCreated = 0
}

final class Runtime: @unchecked Sendable {
    static let shared: Result<Runtime, RuntimeError> = {
        do {
            return .success(try Runtime())
        } catch let error as RuntimeError {
            return .failure(error)
        } catch {
            return .failure(RuntimeError(String(describing: error)))
        }
    }()

    static func get() throws -> Runtime {
        try shared.get()
    }

    let device: Device
    /// Guards every table below, the allocator and the counters. Never held while waiting for the
    /// GPU or compiling, because completion handlers take it.
    let lock = RuntimeLock()
    /// Serialises compilation so that two threads asking for the same library compile it once.
    let compileLock = RuntimeLock()

    private var nextSerial: UInt64 = 1
    let allocator: Allocator
    /// Buffer handles to records (HandleTable.swift: the per-binding lookup of every batch).
    var buffers = HandleTable<BufferRecord>()
    var liveBufferCount = 0
    var libraries: [UInt64: LibraryRecord] = [:]
    var pipelines: [UInt64: PipelineRecord] = [:]
    var queues: [UInt64: QueueRecord] = [:]
    var batches: [UInt64: BatchRecord] = [:]
    var libraryCache: [LibraryKey: UInt64] = [:]
    /// Libraries loaded from .metallib files, by path.
    var fileLibraryCache: [String: UInt64] = [:]
    var pipelineCache: [PipelineKey: UInt64] = [:]
    var counters = RuntimeCounters()
    /// Numbers batch parses, for BufferRecord.batchMark (lock held).
    var batchMarks: UInt64 = 0

    private init() throws {
        device = try Device()
        allocator = Allocator(
            device: device.device, recommendedMaxWorkingSetSize: device.recommendedMaxWorkingSetSize,
            maxBufferLength: device.maxBufferLength)
    }

    /// Call with `lock` held.
    func newID(_ kind: HandleKind) -> UInt64 {
        defer { nextSerial += 1 }
        return Handle.make(nextSerial, kind)
    }

    /// A handle that has the right kind bits and was issued at some point (maybe released since).
    func wasIssued(_ handle: UInt64, _ kind: HandleKind) -> Bool {
        Handle.kind(handle) == kind && Handle.serial(handle) > 0 && Handle.serial(handle) < nextSerial
    }

    func unknownHandle(_ handle: UInt64, _ kind: HandleKind) -> RuntimeError {
        if handle == 0 { return RuntimeError("null \(kind.noun) handle") }
        if wasIssued(handle, kind) { return RuntimeError("\(kind.noun) \(Handle.describe(handle)) was released") }
        if let actual = Handle.kind(handle), Handle.serial(handle) > 0, Handle.serial(handle) < nextSerial {
            return RuntimeError("handle \(Handle.describe(handle)) is a \(actual.noun), not a \(kind.noun)")
        }
        return RuntimeError("unknown \(kind.noun) handle \(Handle.describe(handle))")
    }

    // MARK: Buffers

    func newBuffer(size: Int) throws -> UInt64 {
        try newBufferWithContents(size: size).handle
    }

    /// newBuffer, its contents and its allocated length (what the counters count) under one lock.
    func newBufferWithContents(size: Int) throws -> (handle: UInt64, contents: UnsafeMutableRawPointer?, allocated: Int) {
        try lock.withLock {
            let allocation = try allocator.allocate(size: size)
            let id = newID(.buffer)
            let record = BufferRecord(id: id, size: size, allocation: allocation)
            allocation?.viewPins += 1
            buffers[id] = record
            liveBufferCount += 1
            return (id, allocation?.buffer.contents(), allocation?.length ?? 0)
        }
    }

    /// The owner's record; a released buffer is an error.
    func ownedBuffer(_ handle: UInt64) throws -> BufferRecord {
        guard let record = buffers[handle], record.ownerHeld else { throw unknownHandle(handle, .buffer) }
        return record
    }

    func bufferContents(_ handle: UInt64) throws -> UnsafeMutableRawPointer? {
        try lock.withLock { try ownedBuffer(handle).allocation?.buffer.contents() }
    }

    func bufferSize(_ handle: UInt64) throws -> Int {
        try lock.withLock { try ownedBuffer(handle).size }
    }

    /// Drops the owner. Releasing twice is fine; releasing something never issued is an error.
    func releaseBuffer(_ handle: UInt64) throws {
        try lock.withLock {
            guard let record = buffers[handle] else {
                if wasIssued(handle, .buffer) { return }
                throw unknownHandle(handle, .buffer)
            }
            dropOwner(record)
        }
    }

    /// The view's deallocator (possibly on a GC thread): drops the view pin, and the owner too if
    /// the buffer was never released explicitly.
    func releaseView(_ handle: UInt64) {
        lock.withLock {
            guard let record = buffers[handle], record.viewPinned else { return }
            record.viewPinned = false
            if let allocation = record.allocation { allocator.dropViewPin(allocation) }
            dropOwner(record)
            settle(record)
        }
    }

    private func dropOwner(_ record: BufferRecord) {
        guard record.ownerHeld else { return }
        record.ownerHeld = false
        liveBufferCount -= 1
        settle(record)
    }

    /// Returns the memory to the cache once no owner or batch holds it; forgets the record once
    /// nothing refers to its handle any more. Lock held.
    func settle(_ record: BufferRecord) {
        guard !record.ownerHeld, record.inflight == 0 else { return }
        if !record.retired {
            record.retired = true
            if let allocation = record.allocation { allocator.retire(allocation) }
        }
        if !record.viewPinned { buffers[record.id] = nil }
    }

    func memoryStats() -> MemoryStats {
        lock.withLock {
            allocator.setLiveBuffers(liveBufferCount - allocator.parkedCount)
            return allocator.stats
        }
    }

    // MARK: Libraries and pipelines

    func library(source: String, macros: [(String, String)], mathMode: Int32, languageVersion: UInt32,
                 checked: Bool) throws -> UInt64 {
        guard (0...2).contains(mathMode) else {
            throw RuntimeError("math mode must be 0 (safe), 1 (relaxed) or 2 (fast), got \(mathMode)")
        }
        let version = languageVersion == 0 ? nil : try checkedLanguageVersion(languageVersion)
        var allMacros = macros
        if checked { allMacros.append((checkedModeMacro, "1")) }
        let key = LibraryKey(
            source: source, mathMode: mathMode, languageVersion: languageVersion,
            macros: allMacros.map { "\($0.0)=\($0.1)" }.sorted(), checked: checked)
        return try compileLock.withLock {
            if let cached = lock.withLock({ libraryCache[key] }) { return cached }
            let options = MTLCompileOptions()
            setMathMode(options, mathMode)
            if let version { options.languageVersion = version }
            if !allMacros.isEmpty {
                var table: [String: NSObject] = [:]
                for (name, value) in allMacros { table[name] = NSString(string: value) }
                options.preprocessorMacros = table
            }
            let library: any MTLLibrary
            do {
                library = try device.device.makeLibrary(source: source, options: options)
            } catch {
                throw RuntimeError("the library failed to compile: \(describeError(error))\(device.missingFeatureHint(source: source))")
            }
            return lock.withLock {
                let id = newID(.library)
                libraries[id] = LibraryRecord(id: id, library: library)
                libraryCache[key] = id
                counters.librariesCompiled += 1
                return id
            }
        }
    }

    func library(contentsOf path: String) throws -> UInt64 {
        try compileLock.withLock {
            if let cached = lock.withLock({ fileLibraryCache[path] }) { return cached }
            guard FileManager.default.fileExists(atPath: path) else { throw RuntimeError("\(path) does not exist") }
            let library: any MTLLibrary
            do {
                library = try device.device.makeLibrary(URL: URL(fileURLWithPath: path))
            } catch {
                throw RuntimeError("\(path) could not be loaded: \(describeError(error))")
            }
            return lock.withLock {
                let id = newID(.library)
                libraries[id] = LibraryRecord(id: id, library: library)
                fileLibraryCache[path] = id
                return id
            }
        }
    }

    func functionNames(library handle: UInt64) throws -> [String] {
        try lock.withLock {
            guard let record = libraries[handle] else { throw unknownHandle(handle, .library) }
            return record.library.functionNames.sorted()
        }
    }

    /// `constants`: 4 words each — index, MTLDataType raw value, value low word, value high word.
    func pipeline(library handle: UInt64, name: String, constants: [UInt32]) throws -> UInt64 {
        guard constants.count % 4 == 0 else {
            throw RuntimeError("function constants come in groups of 4 words, got \(constants.count)")
        }
        let key = PipelineKey(library: handle, name: name, constants: constants)
        return try compileLock.withLock {
            let (cached, libraryRecord) = try lock.withLock { () throws -> (UInt64?, LibraryRecord) in
                guard let record = libraries[handle] else { throw unknownHandle(handle, .library) }
                return (pipelineCache[key], record)
            }
            if let cached { return cached }
            let library = libraryRecord.library
            let function: any MTLFunction
            if constants.isEmpty {
                guard let found = library.makeFunction(name: name) else {
                    throw RuntimeError(
                        "the library has no function named '\(name)' (it has: \(library.functionNames.sorted().joined(separator: ", ")))")
                }
                function = found
            } else {
                let values = MTLFunctionConstantValues()
                for group in stride(from: 0, to: constants.count, by: 4) {
                    // Checked by raw value: MTLDataType(rawValue:) accepts anything (an open enum).
                    guard constantDataTypes.contains(constants[group + 1]),
                          let type = MTLDataType(rawValue: UInt(constants[group + 1])) else {
                        throw RuntimeError("function constant \(constants[group]) has unsupported MTLDataType \(constants[group + 1])")
                    }
                    var value = UInt64(constants[group + 2]) | UInt64(constants[group + 3]) << 32
                    withUnsafeBytes(of: &value) { raw in
                        values.setConstantValue(raw.baseAddress!, type: type, index: Int(constants[group]))
                    }
                }
                guard library.functionNames.contains(name) else {
                    throw RuntimeError(
                        "the library has no function named '\(name)' (it has: \(library.functionNames.sorted().joined(separator: ", ")))")
                }
                do {
                    function = try library.makeFunction(name: name, constantValues: values)
                } catch {
                    throw RuntimeError("function '\(name)' could not be specialised: \(describeError(error))")
                }
            }
            let state: any MTLComputePipelineState
            do {
                state = try device.device.makeComputePipelineState(function: function)
            } catch {
                throw RuntimeError("pipeline for '\(name)' could not be built: \(describeError(error))")
            }
            return lock.withLock {
                let id = newID(.pipeline)
                pipelines[id] = PipelineRecord(id: id, name: name, state: state)
                pipelineCache[key] = id
                counters.pipelinesCreated += 1
                return id
            }
        }
    }

    func pipelineRecord(_ handle: UInt64) throws -> PipelineRecord {
        try lock.withLock {
            guard let record = pipelines[handle] else { throw unknownHandle(handle, .pipeline) }
            return record
        }
    }

    // MARK: Queues

    func newQueue() throws -> UInt64 {
        // Room for a whole batch's command buffers in flight before makeCommandBuffer blocks.
        guard let queue = device.device.makeCommandQueue(maxCommandBufferCount: 512) else {
            throw RuntimeError("the device could not create a command queue")
        }
        return lock.withLock {
            let id = newID(.queue)
            queues[id] = QueueRecord(id: id, queue: queue)
            return id
        }
    }

    func queueRecord(_ handle: UInt64) throws -> QueueRecord {
        try lock.withLock {
            guard let record = queues[handle] else { throw unknownHandle(handle, .queue) }
            return record
        }
    }
}

/// MTLDataType raw values accepted for function constants (float, half, int, uint, short, ushort,
/// char, uchar, bool, long, ulong).
let constantDataTypes: Set<UInt32> = [3, 16, 29, 33, 37, 41, 45, 49, 53, 81, 85]

/// A language version from its raw value. Swift imports MTLLanguageVersion as an open enum, so
/// `MTLLanguageVersion(rawValue:)` never fails and would hand Metal anything: check explicitly, and
/// on macOS against the OS that introduced the version.
func checkedLanguageVersion(_ raw: UInt32) throws -> MTLLanguageVersion {
    let known: Set<UInt32> = [0x30000, 0x30001, 0x30002, 0x40000]
    guard known.contains(raw), let version = MTLLanguageVersion(rawValue: UInt(raw)) else {
        throw RuntimeError(
            "unknown Metal language version 0x\(String(raw, radix: 16)) "
                + "(known: 0x30000, 0x30001, 0x30002, 0x40000; 0 for the default)")
    }
    #if canImport(Metal)
    if raw == 0x30002, #unavailable(macOS 15.0) { throw RuntimeError("Metal language version 3.2 needs macOS 15") }
    if raw == 0x40000, #unavailable(macOS 26.0) { throw RuntimeError("Metal language version 4.0 needs macOS 26") }
    #endif
    return version
}

/// The macro that asks the simulator for checked mode (see Simulator.swift).
let checkedModeMacro = "MG_SIM_CHECK"

func describeError(_ error: any Error) -> String {
    if let error = error as? RuntimeError { return error.message }
    return (error as NSError).localizedDescription
}

/// MLX's choice: `mathMode` where it exists (macOS 15; the MTLMathMode type too), else fast math
/// off unless relaxed or fast was asked for. `mode` is 0 safe, 1 relaxed, 2 fast (validated).
private func setMathMode(_ options: MTLCompileOptions, _ mode: Int32) {
    if #available(macOS 15.0, *) {
        options.mathMode = MTLMathMode(rawValue: Int(mode)) ?? .safe
    } else {
        options.fastMathEnabled = mode != 0
    }
}
