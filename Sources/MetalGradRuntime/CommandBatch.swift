// Command batches: many dispatches packed by TypeScript into one u32 array and submitted in one
// FFI call (format in docs/ARCHITECTURE.md, "Command batches"). The whole batch is validated before
// anything is encoded, so a bad batch leaves no partial work behind.
//
// Memory barriers. Dispatches share a concurrent encoder, so the GPU may overlap them. A barrier
// (memoryBarrier(scope: .buffers)) goes before a dispatch that reads or writes a buffer an earlier
// dispatch in the same encoder wrote, and also before one that writes a buffer an earlier dispatch
// read (an in-place update must not overtake the reader). Otherwise dispatches run unordered.
#if canImport(Metal)
import Metal
#else
import MetalShim
#endif
import Foundation

enum BatchFormat {
    static let magic: UInt32 = 0x3142_474D  // "MGB1"
    static let dispatchOpcode: UInt32 = 1
    static let dispatchHeaderWords = 15
    static let bindingWords = 8
    static let threadgroupMemoryWords = 2
    /// setBytes is for small data: Metal documents it for under 4 KB.
    static let maxInlineBytes = 4096
    static let accessRead: UInt32 = 1
    static let accessWrite: UInt32 = 2
    static let flagDispatchThreads: UInt32 = 1
    /// Per-output dependency masks follow the threadgroup memory entries.
    static let flagDependencies: UInt32 = 2
}

struct ResolvedBinding {
    let index: Int
    /// Unowned: ParsedBatch.heldBuffers keeps every bound record alive while the batch is parsed
    /// and encoded, and copying bindings then costs no reference counting.
    unowned(unsafe) let record: BufferRecord
    /// The record's position in ParsedBatch.heldBuffers: encode tracks hazards by it, no hashing.
    let slot: Int
    /// The buffer has memory (zero-byte buffers have none: no hazards).
    let hasMemory: Bool
    let offset: Int
    /// Bytes from offset that the dispatch may touch (the logical length, or to the end of the
    /// logical size); also the simulator's checked-mode bound.
    let extent: Int
    let access: UInt32
}

struct InlineBytes {
    let index: Int
    let wordOffset: Int
    let byteLength: Int
}

struct ParsedDispatch {
    /// Unowned: pipeline records live as long as the runtime.
    unowned(unsafe) let pipeline: PipelineRecord
    let pipelineID: UInt64
    let dispatchThreads: Bool
    let grid: (Int, Int, Int)
    let threadgroup: (Int, Int, Int)
    let bindings: Range<Int>
    let inlineBytes: Range<Int>
    let threadgroupMemory: Range<Int>
    let mustWrite: UInt64
    /// (written binding index, mask of the binding indices its values are computed from); a
    /// written binding not listed depends on every binding the dispatch reads.
    let dependencies: Range<Int>
}

struct ParsedBatch {
    var dispatches: [ParsedDispatch] = []
    var bindings: [ResolvedBinding] = []
    var inlineBytes: [InlineBytes] = []
    var threadgroupMemory: [(index: Int, length: Int)] = []
    var dependencies: [(index: Int, mask: UInt32)] = []
    /// Each buffer bound anywhere in the batch, once: these are held in flight.
    var heldBuffers: [BufferRecord] = []
}

/// One submitted batch: may span several command buffers; completes when all of them have.
///
/// Failure isolation: when a dispatch fails, exactly the buffers it writes, and those written by
/// dispatches that read them (in this batch or, through BufferRecord.failure, a later one), are
/// marked failed when the batch completes; everything else the batch computed is valid. The
/// simulator reports which dispatches of a command buffer failed and runs the rest; on Metal a
/// command buffer fails as a whole, so all its dispatches count as failed.
final class BatchRecord: @unchecked Sendable {
    let id: UInt64
    private let runtime: Runtime
    private let lock = RuntimeLock()
    private var outstanding = 1  // the encoding itself holds one count until it finishes
    private var failure: String?
    private var gpuStart = Double.infinity
    private var gpuEnd = 0.0
    private var finished = false
    private var held: [BufferRecord]
    let dispatchCount: Int
    /// The dispatches' bindings (kept until completion, to find what a failure reaches).
    private var parsed: ParsedBatch?
    /// The batch dispatch indices each command buffer holds, by tracking order.
    private var commandBufferRanges: [Range<Int>] = []
    /// Failed dispatches (batch index → message).
    private var failedDispatches: [Int: String] = [:]

    init(id: UInt64, runtime: Runtime, held: [BufferRecord], dispatchCount: Int, parsed: ParsedBatch) {
        self.id = id
        self.runtime = runtime
        self.held = held
        self.dispatchCount = dispatchCount
        self.parsed = parsed
    }

    /// Tracks a command buffer holding dispatches from `first` on; `setLastDispatch` closes its range.
    func track(_ commandBuffer: any MTLCommandBuffer, firstDispatch first: Int) {
        let slot = lock.withLock { () -> Int in
            outstanding += 1
            commandBufferRanges.append(first..<first)
            return commandBufferRanges.count - 1
        }
        commandBuffer.addCompletedHandler { [self] completed in
            let message: String?
            if completed.status == .error || completed.error != nil {
                message = completed.error.map(describeError) ?? "the command buffer failed"
                let ordinals = completed.error.flatMap(failedDispatchOrdinals)
                lock.withLock {
                    let range = commandBufferRanges[slot]
                    if let ordinals {
                        for (ordinal, text) in ordinals where ordinal < range.count { failedDispatches[range.lowerBound + ordinal] = text }
                    } else {
                        for index in range { failedDispatches[index] = message }
                    }
                }
            } else {
                message = nil
            }
            self.partDone(start: completed.gpuStartTime, end: completed.gpuEndTime, failure: message)
        }
    }

    /// The most recently tracked command buffer holds dispatches up to `end` (exclusive).
    func setDispatchEnd(_ end: Int) {
        lock.withLock {
            if let last = commandBufferRanges.indices.last {
                commandBufferRanges[last] = commandBufferRanges[last].lowerBound..<end
            }
        }
    }

    /// Encoding stopped before dispatch `first`: it and every later dispatch never run.
    func encodingFailed(_ message: String, fromDispatch first: Int) {
        lock.withLock {
            if failure == nil { failure = message }
            for index in first..<dispatchCount { failedDispatches[index] = message }
        }
    }

    func encodingFinished() {
        partDone(start: nil, end: nil, failure: nil)
    }

    private func partDone(start: Double?, end: Double?, failure message: String?) {
        let last: Bool = lock.withLock {
            if let start, start > 0 { gpuStart = min(gpuStart, start) }
            if let end { gpuEnd = max(gpuEnd, end) }
            if let message, failure == nil { failure = message }
            outstanding -= 1
            return outstanding == 0
        }
        guard last else { return }
        // Release the in-flight holds before waking waiters, so a waiter sees the memory settled.
        let (failed, batch) = lock.withLock { (failedDispatches, parsed) }
        let reached = batch.flatMap { runtime.propagateFailures($0, failed: failed) }
        let anyFailure = lock.withLock { () -> Bool in
            if failure == nil, let reached { failure = reached }
            parsed = nil
            return failure != nil
        }
        runtime.releaseInflight(held, failed: anyFailure)
        lock.withLock {
            held = []
            finished = true
            lock.broadcast()
        }
    }

    enum Outcome { case pending, completed, failed(String) }

    var outcome: Outcome {
        lock.withLock {
            guard finished else { return .pending }
            if let failure { return .failed(failure) }
            return .completed
        }
    }

    /// Blocks until the batch completes or `timeout` seconds pass; returns false on timeout.
    func wait(timeout: Double) -> Bool {
        let deadline = timeout.isFinite ? monotonicSeconds() + max(timeout, 0) : .infinity
        return lock.withLock {
            while !finished {
                if deadline.isInfinite {
                    lock.wait()
                } else {
                    let remaining = deadline - monotonicSeconds()
                    if remaining <= 0 { return false }
                    lock.wait(seconds: remaining)
                }
            }
            return true
        }
    }

    var gpuTimes: (start: Double, end: Double)? {
        lock.withLock {
            guard finished else { return nil }
            return (gpuStart.isFinite ? gpuStart : 0, gpuEnd)
        }
    }
}

extension Runtime {
    /// Marks the buffers a completed batch wrote from a failed dispatch, or from one that read a
    /// failed buffer, as failed (and clears those it wrote cleanly). Returns the first failure
    /// that reached a written buffer, nil if none did.
    func propagateFailures(_ batch: ParsedBatch, failed: [Int: String]) -> String? {
        lock.withLock {
            if failed.isEmpty && !batch.heldBuffers.contains(where: { $0.failure != nil }) { return nil }
            var written: [ObjectIdentifier: (record: BufferRecord, failure: String?)] = [:]
            func failureOf(_ record: BufferRecord) -> String? {
                if let entry = written[ObjectIdentifier(record)] { return entry.failure }
                return record.failure
            }
            var first: String?
            for (index, dispatch) in batch.dispatches.enumerated() {
                let bindings = batch.bindings[dispatch.bindings]
                let failedHere = failed[index]
                // The first failed input among the reads selected by `mask` (all reads: ~0).
                func upstream(_ mask: UInt32) -> String? {
                    for binding in bindings where binding.access & BatchFormat.accessRead != 0 && binding.record.allocation != nil
                        && mask & (1 << UInt32(binding.index)) != 0 {
                        if let failure = failureOf(binding.record) {
                            return failure.hasPrefix(Runtime.dependencyPrefix) ? failure : Runtime.dependencyPrefix + failure
                        }
                    }
                    return nil
                }
                let anyRead = failedHere == nil ? upstream(~0) : nil
                var causes: [(record: BufferRecord, cause: String?)] = []
                for binding in bindings where binding.access & BatchFormat.accessWrite != 0 && binding.record.allocation != nil {
                    var cause = failedHere ?? anyRead
                    if failedHere == nil, anyRead != nil,
                       let entry = batch.dependencies[dispatch.dependencies].first(where: { $0.index == binding.index }) {
                        cause = upstream(entry.mask)
                    }
                    causes.append((binding.record, cause))
                }
                // Reads see the state before this dispatch; record its writes afterwards.
                for (record, cause) in causes {
                    written[ObjectIdentifier(record)] = (record, cause)
                    if let cause, first == nil { first = cause }
                }
            }
            for (record, failure) in written.values { record.failure = failure }
            return first
        }
    }

    static let dependencyPrefix = "[gpu] computed from an array whose kernel failed: "

    func releaseInflight(_ records: [BufferRecord], failed: Bool) {
        lock.withLock {
            for record in records {
                record.inflight -= 1
                settle(record)
            }
            if failed { counters.batchesFailed += 1 }
        }
    }

    /// Parses, validates and encodes a batch; returns the batch handle.
    func submit(queue queueHandle: UInt64, words: UnsafePointer<UInt32>, count: Int) throws -> UInt64 {
        let queue = try queueRecord(queueHandle)
        let parsed = try lock.withLock { try parse(words: words, count: count) }
        // Pipeline states the kernel cache dropped are rebuilt before anything is held or encoded.
        var used: [PipelineRecord] = []
        var seen = Set<UInt64>()
        for dispatch in parsed.dispatches where seen.insert(dispatch.pipeline.id).inserted { used.append(dispatch.pipeline) }
        let states = try pipelineStates(used)
        let batch = lock.withLock { () -> BatchRecord in
            for record in parsed.heldBuffers { record.inflight += 1 }
            let batch = BatchRecord(id: newID(.batch), runtime: self, held: parsed.heldBuffers,
                                    dispatchCount: parsed.dispatches.count, parsed: parsed)
            batches[batch.id] = batch
            counters.batchesSubmitted += 1
            counters.dispatchesEncoded += parsed.dispatches.count
            return batch
        }
        let (committed, barriers) = encode(parsed, words: words, queue: queue, batch: batch, states: states)
        lock.withLock {
            counters.commandBuffersCommitted += committed
            counters.memoryBarriers += barriers
        }
        batch.encodingFinished()
        return batch.id
    }

    func batchRecord(_ handle: UInt64) throws -> BatchRecord {
        try lock.withLock {
            guard let record = batches[handle] else { throw unknownHandle(handle, .batch) }
            return record
        }
    }

    func releaseBatch(_ handle: UInt64) throws {
        try lock.withLock {
            if batches.removeValue(forKey: handle) == nil && !wasIssued(handle, .batch) {
                throw unknownHandle(handle, .batch)
            }
        }
    }

    // MARK: Parsing and validation (registry lock held)

    private func parse(words: UnsafePointer<UInt32>, count: Int) throws -> ParsedBatch {
        guard count >= 2 else { throw RuntimeError("a batch needs at least its 2 header words, got \(count)") }
        guard words[0] == BatchFormat.magic else {
            throw RuntimeError("the batch does not start with the magic word 0x3142474D (got 0x\(String(words[0], radix: 16)))")
        }
        let commandCount = Int(words[1])
        var batch = ParsedBatch()
        // Room without regrowing (most dispatches bind two or three buffers), bounded by what the
        // words can hold: the count itself is not trusted yet.
        batch.dispatches.reserveCapacity(min(commandCount, count / BatchFormat.dispatchHeaderWords))
        batch.bindings.reserveCapacity(min(commandCount * 3, count / BatchFormat.bindingWords))
        // A record bound earlier in this batch carries this batch's mark (no set of IDs).
        batchMarks &+= 1
        let mark = batchMarks
        var position = 2
        let maxThreads = device.maxThreadsPerThreadgroup
        var lastPipeline: PipelineRecord?

        func need(_ wordCount: Int, _ what: String, _ command: Int) throws {
            guard position + wordCount <= count else {
                throw RuntimeError("dispatch \(command): the batch ends inside its \(what) (\(count) words in total)")
            }
        }

        for command in 0..<commandCount {
            try need(1, "opcode", command)
            guard words[position] == BatchFormat.dispatchOpcode else {
                throw RuntimeError("command \(command) has unknown opcode \(words[position]) at word \(position)")
            }
            try need(BatchFormat.dispatchHeaderWords, "header", command)
            let header = words + position
            position += BatchFormat.dispatchHeaderWords
            let pipelineHandle = UInt64(header[1]) | UInt64(header[2]) << 32
            let pipeline: PipelineRecord
            if let lastPipeline, lastPipeline.id == pipelineHandle {
                pipeline = lastPipeline
            } else {
                guard let found = pipelines[pipelineHandle] else {
                    throw RuntimeError("dispatch \(command): \(unknownHandle(pipelineHandle, .pipeline).message)")
                }
                pipeline = found
                lastPipeline = found
            }
            // Built only when an error needs it: string formatting per dispatch would dominate.
            func context() -> String { "dispatch \(command) (kernel '\(pipeline.name)')" }
            let flags = header[3]
            guard flags & ~(BatchFormat.flagDispatchThreads | BatchFormat.flagDependencies) == 0 else {
                throw RuntimeError("\(context()): unknown flag bits 0x\(String(flags, radix: 16))")
            }
            let grid = (Int(header[4]), Int(header[5]), Int(header[6]))
            let group = (Int(header[7]), Int(header[8]), Int(header[9]))
            guard grid.0 > 0, grid.1 > 0, grid.2 > 0 else {
                throw RuntimeError("\(context()): grid (\(grid.0), \(grid.1), \(grid.2)) has a zero dimension")
            }
            guard group.0 > 0, group.1 > 0, group.2 > 0 else {
                throw RuntimeError("\(context()): threadgroup (\(group.0), \(group.1), \(group.2)) has a zero dimension")
            }
            let total = group.0 * group.1 * group.2
            guard total <= pipeline.maxTotalThreadsPerThreadgroup else {
                throw RuntimeError(
                    "\(context()): threadgroup (\(group.0), \(group.1), \(group.2)) has \(total) threads, more than the "
                        + "pipeline's maxTotalThreadsPerThreadgroup of \(pipeline.maxTotalThreadsPerThreadgroup) "
                        + "(Metal would silently drop this launch)")
            }
            guard group.0 <= maxThreads.width, group.1 <= maxThreads.height, group.2 <= maxThreads.depth else {
                throw RuntimeError(
                    "\(context()): threadgroup (\(group.0), \(group.1), \(group.2)) exceeds the device's per-dimension "
                        + "maximum (\(maxThreads.width), \(maxThreads.height), \(maxThreads.depth))")
            }
            let bufferCount = Int(header[10])
            let bytesCount = Int(header[11])
            let memoryCount = Int(header[12])
            let mustWrite = UInt64(header[13]) | UInt64(header[14]) << 32
            guard bufferCount + bytesCount <= maxBindings, memoryCount <= maxBindings else {
                throw RuntimeError(
                    "\(context()): \(bufferCount) buffers + \(bytesCount) inline bytes, \(memoryCount) threadgroup memory "
                        + "bindings: at most \(maxBindings) of each kind")
            }
            var usedIndices: UInt32 = 0
            func claim(_ index: Int, _ kind: String) throws {
                guard index < maxBindings else {
                    throw RuntimeError("\(context()): \(kind) index \(index) is out of range (0..<\(maxBindings))")
                }
                guard usedIndices & (1 << UInt32(index)) == 0 else {
                    throw RuntimeError("\(context()): buffer index \(index) is bound twice")
                }
                usedIndices |= 1 << UInt32(index)
            }

            let bindingStart = batch.bindings.count
            try need(bufferCount * BatchFormat.bindingWords, "buffer bindings", command)
            var boundBuffers: UInt64 = 0
            for _ in 0..<bufferCount {
                let entry = words + position
                position += BatchFormat.bindingWords
                let index = Int(entry[0])
                try claim(index, "buffer")
                let handle = UInt64(entry[1]) | UInt64(entry[2]) << 32
                let offset = Int(UInt64(entry[3]) | UInt64(entry[4]) << 32)
                let length = UInt64(entry[5]) | UInt64(entry[6]) << 32
                let access = entry[7]
                guard let record = buffers[handle], record.ownerHeld else {
                    throw RuntimeError("\(context()): buffer(\(index)): \(unknownHandle(handle, .buffer).message)")
                }
                // Parked memory counts as cache: binding it would use memory the counters call free.
                guard !record.parked else {
                    throw RuntimeError("\(context()): buffer(\(index)): buffer \(Handle.describe(handle)) was released (parked for reuse)")
                }
                guard access >= 1 && access <= 3 else {
                    throw RuntimeError("\(context()): buffer(\(index)) has access \(access); use 1 read, 2 write or 3 read-write")
                }
                let end = length == 0 ? offset : offset + Int(clamping: length)
                guard offset <= record.size, end <= record.size, length <= UInt64(Int.max) else {
                    throw RuntimeError(
                        "\(context()): buffer(\(index)) binding [\(offset), \(offset) + \(length)) runs past the end of the "
                            + "\(record.size)-byte buffer \(Handle.describe(handle))")
                }
                let extent = length == 0 ? record.size - offset : Int(length)
                if record.batchMark != mark {
                    record.batchMark = mark
                    record.batchSlot = batch.heldBuffers.count
                    batch.heldBuffers.append(record)
                }
                batch.bindings.append(ResolvedBinding(
                    index: index, record: record, slot: record.batchSlot, hasMemory: record.buffer != nil, offset: offset,
                    extent: extent, access: access))
                boundBuffers |= 1 << UInt64(index)
            }
            let bytesStart = batch.inlineBytes.count
            for _ in 0..<bytesCount {
                try need(2, "inline bytes", command)
                let index = Int(words[position])
                let byteLength = Int(words[position + 1])
                try claim(index, "inline bytes")
                guard byteLength > 0 else { throw RuntimeError("\(context()): inline bytes at index \(index) are empty") }
                guard byteLength < BatchFormat.maxInlineBytes else {
                    throw RuntimeError(
                        "\(context()): inline bytes at index \(index) are \(byteLength) bytes; setBytes takes under "
                            + "\(BatchFormat.maxInlineBytes) bytes, so pass larger data in a buffer")
                }
                let dataWords = (byteLength + 3) / 4
                try need(2 + dataWords, "inline bytes", command)
                batch.inlineBytes.append(InlineBytes(index: index, wordOffset: position + 2, byteLength: byteLength))
                position += 2 + dataWords
            }
            let memoryStart = batch.threadgroupMemory.count
            try need(memoryCount * BatchFormat.threadgroupMemoryWords, "threadgroup memory", command)
            var memoryIndices: UInt32 = 0
            var memoryTotal = pipeline.staticThreadgroupMemoryLength
            for _ in 0..<memoryCount {
                let index = Int(words[position])
                let length = Int(words[position + 1])
                position += BatchFormat.threadgroupMemoryWords
                guard index < maxBindings, memoryIndices & (1 << UInt32(index)) == 0 else {
                    throw RuntimeError("\(context()): threadgroup memory index \(index) is out of range or bound twice")
                }
                memoryIndices |= 1 << UInt32(index)
                guard length > 0, length % 16 == 0 else {
                    throw RuntimeError("\(context()): threadgroup memory length \(length) at index \(index) must be a positive multiple of 16")
                }
                memoryTotal += length
                batch.threadgroupMemory.append((index, length))
            }
            guard memoryTotal <= maxThreadgroupMemoryLength else {
                throw RuntimeError(
                    "\(context()): \(memoryTotal) bytes of threadgroup memory (including \(pipeline.staticThreadgroupMemoryLength) "
                        + "static) exceed the \(maxThreadgroupMemoryLength)-byte limit")
            }
            guard mustWrite & ~boundBuffers == 0 else {
                throw RuntimeError(
                    "\(context()): the must-write mask 0x\(String(mustWrite, radix: 16)) names indices with no buffer bound")
            }
            let dependenciesStart = batch.dependencies.count
            if flags & BatchFormat.flagDependencies != 0 {
                try need(1, "dependency count", command)
                let entries = Int(words[position])
                position += 1
                try need(entries * 2, "dependencies", command)
                for _ in 0..<entries {
                    let index = Int(words[position])
                    let mask = words[position + 1]
                    position += 2
                    guard index < maxBindings, boundBuffers & (1 << UInt64(index)) != 0,
                          UInt64(mask) & ~boundBuffers == 0 else {
                        throw RuntimeError("\(context()): dependency entry for buffer(\(index)) names a buffer that is not bound")
                    }
                    batch.dependencies.append((index, mask))
                }
            }
            batch.dispatches.append(ParsedDispatch(
                pipeline: pipeline, pipelineID: pipeline.id, dispatchThreads: flags & BatchFormat.flagDispatchThreads != 0, grid: grid, threadgroup: group,
                bindings: bindingStart..<batch.bindings.count, inlineBytes: bytesStart..<batch.inlineBytes.count,
                threadgroupMemory: memoryStart..<batch.threadgroupMemory.count, mustWrite: mustWrite,
                dependencies: dependenciesStart..<batch.dependencies.count))
        }
        guard position == count else {
            throw RuntimeError("the batch has \(count - position) words after its \(commandCount) commands")
        }
        return batch
    }

    // MARK: Encoding (no registry lock: completion handlers need it)

    /// Returns (command buffers committed, barriers inserted).
    private func encode(_ batch: ParsedBatch, words: UnsafePointer<UInt32>, queue: QueueRecord,
                        batch record: BatchRecord, states: [UInt64: any MTLComputePipelineState]) -> (Int, Int) {
        let maxOps = device.arch.maxOpsPerCommandBuffer
        let maxBytes = device.arch.maxMBPerCommandBuffer << 20
        var committed = 0
        var barriers = 0
        // This loop runs per dispatch of batches of thousands: it reads the parsed batch through
        // buffer pointers (bindings hold unowned records) and tracks hazards by slot, so a
        // dispatch costs no hashing and almost no reference counting.
        // Hazards per held buffer: the segment — a run of dispatches with no barrier between them
        // in one encoder — in which it was last written / read. A new encoder or a barrier starts
        // a new segment, which forgets them all at once.
        let held = batch.heldBuffers.count
        let writtenIn = UnsafeMutableBufferPointer<Int>.allocate(capacity: max(held, 1))
        let readIn = UnsafeMutableBufferPointer<Int>.allocate(capacity: max(held, 1))
        let viewLengths = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: maxBindings)
        writtenIn.initialize(repeating: 0)
        readIn.initialize(repeating: 0)
        viewLengths.initialize(repeating: 0)
        defer {
            writtenIn.deallocate()
            readIn.deallocate()
            viewLengths.deallocate()
        }
        // The Metal buffer of each held record (nil for an empty buffer), once per batch.
        let metalBuffers: [(any MTLBuffer)?] = batch.heldBuffers.map { $0.buffer }
        var segment = 0
        queue.submitLock.withLock {
            batch.bindings.withUnsafeBufferPointer { bindings in
                metalBuffers.withUnsafeBufferPointer { metal in
                    let dispatches = batch.dispatches
                    var next = 0
                    // One command buffer (and encoder) per pass, closed after MLX's per-size-class
                    // limits of operations and bytes.
                    while next < dispatches.count {
                        guard let commandBuffer = queue.queue.makeCommandBufferWithUnretainedReferences() else {
                            record.encodingFailed("the queue could not create a command buffer", fromDispatch: next)
                            break
                        }
                        guard let encoder = commandBuffer.makeComputeCommandEncoder(dispatchType: .concurrent) else {
                            record.encodingFailed("the command buffer could not create a compute encoder", fromDispatch: next)
                            break
                        }
                        // The dispatches [first, end) of each command buffer: a failed one fails them alone.
                        record.track(commandBuffer, firstDispatch: next)
                        segment += 1
                        var ops = 0
                        var bytes = 0
                        var currentPipeline: UInt64 = 0
                        while next < dispatches.count {
                            let dispatch = dispatches[next]
                            next += 1
                            let range = dispatch.bindings
                            var hazard = false
                            for k in range {
                                let binding = bindings[k]
                                if binding.hasMemory && (writtenIn[binding.slot] == segment
                                    || (binding.access & BatchFormat.accessWrite != 0 && readIn[binding.slot] == segment)) {
                                    hazard = true
                                    break
                                }
                            }
                            if hazard {
                                encoder.memoryBarrier(scope: .buffers)
                                barriers += 1
                                segment += 1
                            }
                            if currentPipeline != dispatch.pipelineID {
                                encoder.setComputePipelineState(states[dispatch.pipelineID]!)
                                currentPipeline = dispatch.pipelineID
                            }
                            for index in 0..<maxBindings { viewLengths[index] = 0 }
                            for k in range {
                                let binding = bindings[k]
                                // a zero-byte buffer binds a placeholder: Metal has no zero-length buffers
                                encoder.setBuffer(metal[binding.slot] ?? emptyPlaceholder, offset: binding.offset, index: binding.index)
                                // The logical extent, not the allocation's rounded length: checked mode must
                                // catch an access past the bytes the caller asked for.
                                viewLengths[binding.index] = UInt64(binding.extent)
                                bytes += binding.extent
                                if binding.hasMemory {
                                    if binding.access & BatchFormat.accessWrite != 0 { writtenIn[binding.slot] = segment }
                                    if binding.access & BatchFormat.accessRead != 0 { readIn[binding.slot] = segment }
                                }
                            }
                            for k in dispatch.inlineBytes {
                                let inline = batch.inlineBytes[k]
                                encoder.setBytes(UnsafeRawPointer(words + inline.wordOffset), length: inline.byteLength, index: inline.index)
                            }
                            for k in dispatch.threadgroupMemory {
                                let memory = batch.threadgroupMemory[k]
                                encoder.setThreadgroupMemoryLength(memory.length, index: memory.index)
                            }
                            annotateNextDispatch(viewLengths: UnsafePointer(viewLengths.baseAddress!), mustWrite: dispatch.mustWrite)
                            let grid = MTLSize(width: dispatch.grid.0, height: dispatch.grid.1, depth: dispatch.grid.2)
                            let group = MTLSize(width: dispatch.threadgroup.0, height: dispatch.threadgroup.1, depth: dispatch.threadgroup.2)
                            if dispatch.dispatchThreads {
                                encoder.dispatchThreads(grid, threadsPerThreadgroup: group)
                            } else {
                                encoder.dispatchThreadgroups(grid, threadsPerThreadgroup: group)
                            }
                            ops += 1
                            if ops >= maxOps || bytes >= maxBytes { break }
                        }
                        encoder.endEncoding()
                        record.setDispatchEnd(next)
                        commandBuffer.commit()
                        committed += 1
                    }
                }
            }
        }
        return (committed, barriers)
    }
}
