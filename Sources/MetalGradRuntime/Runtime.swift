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

/// Counters that prove how work crossed the FFI boundary.
struct RuntimeCounters: Codable {
    var batchesSubmitted = 0
    var dispatchesEncoded = 0
    var commandBuffersCommitted = 0
    var memoryBarriers = 0
    var batchesFailed = 0
    var librariesCompiled = 0
    var pipelinesCreated = 0
    /// Built libraries and pipeline states dropped beyond the kernel cache's limits (KernelCache.swift),
    /// and rebuilt when used again.
    var kernelsEvicted = 0
    var librariesRebuilt = 0
    var pipelinesRebuilt = 0
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
    /// The kernel cache's limits and its use clock (KernelCache.swift).
    var kernelLimits = KernelCacheLimits.fromEnvironment()
    var kernelClock: UInt64 = 0
    var pipelineUses = UseQueue()
    var libraryUses = UseQueue()
    /// Bound in place of a zero-byte buffer (Metal has no zero-length buffers; a kernel's buffer
    /// argument must be bound even when an empty input means it reads nothing).
    let emptyPlaceholder: (any MTLBuffer)?
    /// Numbers batch parses, for BufferRecord.batchMark (lock held).
    var batchMarks: UInt64 = 0

    private init() throws {
        device = try Device()
        emptyPlaceholder = device.device.makeBuffer(length: 16, options: [.storageModeShared, .hazardTrackingModeUntracked])
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

    func bufferFailure(_ handle: UInt64) throws -> String? {
        try lock.withLock {
            guard let record = buffers[handle] else { throw unknownHandle(handle, .buffer) }
            return record.failure
        }
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
        // Released while parked (the pool releasing it, or its view collected with the pool): its
        // bytes leave the parked cache, not `active` (they were moved there when it was parked).
        if record.parked {
            record.parked = false
            if let allocation = record.allocation { allocator.unpark(bytes: allocation.length, release: true) }
        }
        settle(record)
    }

    /// TypeScript's pool keeps this released buffer for reuse: its bytes count as cache. False
    /// (nothing changed) when the cache limit has no room or a batch still holds it (the caller
    /// releases it instead). Parking a buffer that is not live, already parked or empty is an error:
    /// the counters would go wrong.
    func parkBuffer(_ handle: UInt64) throws -> Bool {
        try lock.withLock {
            let record = try ownedBuffer(handle)
            guard !record.parked else { throw RuntimeError("buffer \(Handle.describe(handle)) is already parked") }
            guard let allocation = record.allocation else { throw RuntimeError("buffer \(Handle.describe(handle)) has no memory to park") }
            guard record.inflight == 0 else { return false }
            guard try allocator.park(bytes: allocation.length) else { return false }
            record.parked = true
            return true
        }
    }

    /// A parked buffer is taken back from TypeScript's pool: in use again.
    func unparkBuffer(_ handle: UInt64) throws {
        try lock.withLock {
            let record = try ownedBuffer(handle)
            guard record.parked, let allocation = record.allocation else {
                throw RuntimeError("buffer \(Handle.describe(handle)) is not parked")
            }
            record.parked = false
            allocator.unpark(bytes: allocation.length, release: false)
        }
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
func setMathMode(_ options: MTLCompileOptions, _ mode: Int32) {
    if #available(macOS 15.0, *) {
        options.mathMode = MTLMathMode(rawValue: Int(mode)) ?? .safe
    } else {
        options.fastMathEnabled = mode != 0
    }
}
