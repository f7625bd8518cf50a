// Command queues, command buffers, compute encoders and shared events on the simulator.
//
// Like a GPU, a queue executes committed command buffers asynchronously and in commit order, here on
// one background thread per queue. Dispatches of a concurrent encoder run one after another, which
// is one of the orders a GPU may choose; every dispatch goes to mgsim_dispatch_run.
import Foundation
import MSLSim

/// A pthread mutex plus condition variable (works on every platform the shim builds for).
final class ShimLock: @unchecked Sendable {
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

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits on the condition; call with the lock held (inside withLock).
    func wait() {
        pthread_cond_wait(cond, mutex)
    }

    /// Waits until `deadline` (monotonic seconds); returns false on timeout. Lock held.
    func wait(untilUptime deadline: Double) -> Bool {
        let now = ProcessInfo.processInfo.systemUptime
        if now >= deadline { return false }
        // pthread_cond_timedwait takes wall-clock time; convert the remaining interval.
        var wall = timespec()
        clock_gettime(CLOCK_REALTIME, &wall)
        let remaining = deadline - now
        var seconds = wall.tv_sec + Int(remaining)
        var nanos = wall.tv_nsec + Int((remaining - Double(Int(remaining))) * 1e9)
        if nanos >= 1_000_000_000 {
            seconds += 1
            nanos -= 1_000_000_000
        }
        var target = timespec(tv_sec: seconds, tv_nsec: nanos)
        return pthread_cond_timedwait(cond, mutex, &target) == 0
            || ProcessInfo.processInfo.systemUptime < deadline
    }

    func broadcast() {
        pthread_cond_broadcast(cond)
    }
}

/// Seconds on the host's monotonic clock, the time base of gpuStartTime / gpuEndTime.
func hostTime() -> CFTimeInterval {
    ProcessInfo.processInfo.systemUptime
}

final class SimCommandQueue: NSObject, MTLCommandQueue, @unchecked Sendable {
    let worker: QueueWorker

    init(maxCommandBufferCount: Int) {
        worker = QueueWorker(maxCommandBufferCount: maxCommandBufferCount)
        super.init()
        let worker = self.worker
        let thread = Thread { worker.run() }
        thread.name = "metalgrad-sim-queue"
        thread.start()
    }

    deinit {
        worker.stop()
    }

    func makeCommandBuffer() -> (any MTLCommandBuffer)? {
        worker.reserveSlot()
        return SimCommandBuffer(worker: worker, retainsReferences: true)
    }

    func makeCommandBufferWithUnretainedReferences() -> (any MTLCommandBuffer)? {
        worker.reserveSlot()
        return SimCommandBuffer(worker: worker, retainsReferences: false)
    }
}

/// The queue's execution thread: committed command buffers in commit order.
final class QueueWorker: @unchecked Sendable {
    private let lock = ShimLock()
    private var pending: [SimCommandBuffer] = []
    private var stopping = false
    /// Command buffers made and not yet completed; makeCommandBuffer blocks at the maximum, as on Metal.
    private var outstanding = 0
    private let maxOutstanding: Int

    init(maxCommandBufferCount: Int) {
        maxOutstanding = maxCommandBufferCount
    }

    func reserveSlot() {
        lock.withLock {
            while outstanding >= maxOutstanding { lock.wait() }
            outstanding += 1
        }
    }

    func releaseSlot() {
        lock.withLock {
            outstanding -= 1
            lock.broadcast()
        }
    }

    func enqueue(_ buffer: SimCommandBuffer) {
        lock.withLock {
            pending.append(buffer)
            lock.broadcast()
        }
    }

    func stop() {
        lock.withLock {
            stopping = true
            lock.broadcast()
        }
    }

    func run() {
        while true {
            let next: SimCommandBuffer? = lock.withLock {
                while pending.isEmpty && !stopping { lock.wait() }
                return pending.isEmpty ? nil : pending.removeFirst()
            }
            guard let next else { return }
            next.execute()
        }
    }
}

/// One encoded command, in encoding order.
enum SimCommand {
    case dispatch(SimDispatch)
    case barrier
    case signal(SimSharedEvent, UInt64)
    case wait(SimSharedEvent, UInt64)
}

/// One dispatch as the simulator will receive it, with the memory it needs kept alive.
final class SimDispatch {
    var description = mgsim_dispatch()
    let pipeline: SimPipelineState
    /// Retained buffers (only for command buffers that retain references) and inline-byte copies.
    var retained: [AnyObject] = []
    var inlineCopies: [UnsafeMutableRawPointer] = []

    init(pipeline: SimPipelineState) {
        self.pipeline = pipeline
        description.function = pipeline.function.handle
    }

    deinit {
        inlineCopies.forEach { free($0) }
    }
}

final class SimCommandBuffer: NSObject, MTLCommandBuffer, @unchecked Sendable {
    private let worker: QueueWorker
    let retainsReferences: Bool
    private let lock = ShimLock()
    private var commands: [SimCommand] = []
    private var handlers: [MTLCommandBufferHandler] = []
    private var currentStatus: MTLCommandBufferStatus = .notEnqueued
    private var currentError: NSError?
    private var startTime: CFTimeInterval = 0
    private var endTime: CFTimeInterval = 0
    private var encoderOpen = false

    /// How long a wait for a shared event may block the queue before the command buffer fails
    /// (a GPU would also time out rather than wait forever).
    static let eventTimeout: Double = {
        let env = ProcessInfo.processInfo.environment["MG_SIM_EVENT_TIMEOUT"].flatMap(Double.init)
        return env ?? 60
    }()

    init(worker: QueueWorker, retainsReferences: Bool) {
        self.worker = worker
        self.retainsReferences = retainsReferences
        super.init()
    }

    func append(_ command: SimCommand) {
        lock.withLock { commands.append(command) }
    }

    func encoderEnded() {
        lock.withLock { encoderOpen = false }
    }

    func makeComputeCommandEncoder() -> (any MTLComputeCommandEncoder)? {
        makeComputeCommandEncoder(dispatchType: .serial)
    }

    func makeComputeCommandEncoder(dispatchType: MTLDispatchType) -> (any MTLComputeCommandEncoder)? {
        let allowed = lock.withLock { () -> Bool in
            guard currentStatus == .notEnqueued, !encoderOpen else { return false }
            encoderOpen = true
            return true
        }
        return allowed ? SimComputeEncoder(commandBuffer: self) : nil
    }

    func commit() {
        let first = lock.withLock { () -> Bool in
            guard currentStatus == .notEnqueued else { return false }
            currentStatus = .committed
            return true
        }
        if first { worker.enqueue(self) }
    }

    func waitUntilCompleted() {
        lock.withLock {
            while currentStatus != .completed && currentStatus != .error { lock.wait() }
        }
    }

    func addCompletedHandler(_ block: @escaping MTLCommandBufferHandler) {
        let finished = lock.withLock { () -> Bool in
            if currentStatus == .completed || currentStatus == .error { return true }
            handlers.append(block)
            return false
        }
        if finished { block(self) }
    }

    var status: MTLCommandBufferStatus { lock.withLock { currentStatus } }
    var error: (any Error)? { lock.withLock { currentError } }
    var gpuStartTime: CFTimeInterval { lock.withLock { startTime } }
    var gpuEndTime: CFTimeInterval { lock.withLock { endTime } }

    func encodeSignalEvent(_ event: any MTLEvent, value: UInt64) {
        if let event = event as? SimSharedEvent { append(.signal(event, value)) }
    }

    func encodeWaitForEvent(_ event: any MTLEvent, value: UInt64) {
        if let event = event as? SimSharedEvent { append(.wait(event, value)) }
    }

    /// Runs on the queue's thread.
    func execute() {
        let work: [SimCommand] = lock.withLock {
            currentStatus = .scheduled
            startTime = hostTime()
            return commands
        }
        var failure: String?
        // A failed dispatch does not stop the ones after it: the runtime knows which buffers each
        // dispatch reads and writes, and fails exactly the outputs that depend on the failure
        // (shimFailedDispatchesKey lists the failed dispatches by their order in this buffer).
        var failedDispatches: [(Int, String)] = []
        var ordinal = 0
        for command in work {
            switch command {
            case .dispatch(let dispatch):
                var message: UnsafeMutablePointer<CChar>?
                let status = withUnsafePointer(to: &dispatch.description) { mgsim_dispatch_run($0, &message) }
                if status != 0 {
                    let text = takeSimMessage(message, orElse: "[mgsim dispatch] dispatch failed with status \(status)")
                    failedDispatches.append((ordinal, text))
                    if failure == nil { failure = text }
                }
                ordinal += 1
            case .barrier:
                break  // dispatches already run one after another
            case .signal(let event, let value):
                event.signaledValue = value
            case .wait(let event, let value):
                if !event.wait(untilSignaledValue: value, timeoutMS: UInt64(Self.eventTimeout * 1000)) {
                    failure = "[MTLCommandBuffer] timed out after \(Self.eventTimeout) s waiting for a shared event to reach \(value)"
                    failedDispatches = []  // nothing after the wait ran: the whole buffer failed
                }
            }
            if failure != nil && failedDispatches.isEmpty { break }
        }
        let toCall: [MTLCommandBufferHandler] = lock.withLock {
            endTime = hostTime()
            if let failure {
                let error = simError(domain: "MTLCommandBufferErrorDomain", code: 1, failure)
                if failedDispatches.isEmpty {
                    currentError = error
                } else {
                    var info = error.userInfo
                    info[shimFailedDispatchesKey] = failedDispatches.map { [$0.0, $0.1] as [Any] }
                    currentError = NSError(domain: error.domain, code: error.code, userInfo: info)
                }
                currentStatus = .error
            } else {
                currentStatus = .completed
            }
            commands.removeAll()  // drops retained buffers and inline copies
            defer { handlers.removeAll() }
            return handlers
        }
        worker.releaseSlot()
        for handler in toCall { handler(self) }
        lock.withLock { lock.broadcast() }
    }
}

final class SimComputeEncoder: NSObject, MTLComputeCommandEncoder, @unchecked Sendable {
    private static let slots = Int(MGSIM_MAX_BINDINGS)
    private let commandBuffer: SimCommandBuffer
    private var pipeline: SimPipelineState?
    // The argument table as the simulator reads it, kept in plain memory: a dispatch copies it
    // whole, and setting an argument is a store (arrays and dictionaries here were a good part of
    // encoding a batch: callgrind, mg_batch_submit).
    private let table = UnsafeMutablePointer<mgsim_binding>.allocate(capacity: slots)
    private let threadgroupMemory = UnsafeMutablePointer<UInt64>.allocate(capacity: slots)
    /// setBytes data the encoder owns (it persists until that index is bound again, as on Metal);
    /// bit i of `inlineMask`: index i holds such bytes (the table's entry points at them).
    private let inlineData = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: slots)
    private var inlineMask: UInt32 = 0
    /// Bound buffers, kept only for command buffers that retain what they bind.
    private var owners: [AnyObject?] = []
    private var ended = false
    var label: String?

    /// The command buffer retains bound buffers (makeCommandBuffer, not ...WithUnretainedReferences).
    private let retains: Bool

    init(commandBuffer: SimCommandBuffer) {
        self.commandBuffer = commandBuffer
        retains = commandBuffer.retainsReferences
        table.initialize(repeating: mgsim_binding(data: nil, length: 0), count: Self.slots)
        threadgroupMemory.initialize(repeating: 0, count: Self.slots)
        inlineData.initialize(repeating: nil, count: Self.slots)
        if retains { owners = [AnyObject?](repeating: nil, count: Self.slots) }
        super.init()
    }

    deinit {
        for index in 0..<Self.slots { free(inlineData[index]) }
        table.deallocate()
        threadgroupMemory.deallocate()
        inlineData.deallocate()
    }

    func endEncoding() {
        guard !ended else { return }
        ended = true
        commandBuffer.encoderEnded()
    }

    func setComputePipelineState(_ state: any MTLComputePipelineState) {
        pipeline = state as? SimPipelineState
    }

    private func dropInline(_ index: Int) {
        guard inlineMask & (1 << UInt32(index)) != 0 else { return }
        free(inlineData[index])
        inlineData[index] = nil
        inlineMask &= ~(1 << UInt32(index))
    }

    func setBuffer(_ buffer: (any MTLBuffer)?, offset: Int, index: Int) {
        guard index >= 0, index < Self.slots else { return }
        dropInline(index)
        if let buffer, offset >= 0, offset <= buffer.length {
            table[index] = mgsim_binding(data: buffer.contents() + offset, length: UInt64(buffer.length - offset))
            if retains { owners[index] = buffer }
        } else {
            table[index] = mgsim_binding(data: nil, length: 0)
            if retains { owners[index] = nil }
        }
    }

    func setBytes(_ bytes: UnsafeRawPointer, length: Int, index: Int) {
        guard index >= 0, index < Self.slots, length >= 0 else { return }
        dropInline(index)
        let copy = malloc(max(length, 1))!
        copy.copyMemory(from: bytes, byteCount: length)
        inlineData[index] = copy
        inlineMask |= 1 << UInt32(index)
        table[index] = mgsim_binding(data: copy, length: UInt64(length))
        if retains { owners[index] = nil }
    }

    func setThreadgroupMemoryLength(_ length: Int, index: Int) {
        guard index >= 0, index < Self.slots else { return }
        threadgroupMemory[index] = UInt64(max(length, 0))
    }

    func dispatchThreads(_ threadsPerGrid: MTLSize, threadsPerThreadgroup: MTLSize) {
        encodeDispatch(grid: threadsPerGrid, threadgroup: threadsPerThreadgroup, threads: true)
    }

    func dispatchThreadgroups(_ threadgroupsPerGrid: MTLSize, threadsPerThreadgroup: MTLSize) {
        encodeDispatch(grid: threadgroupsPerGrid, threadgroup: threadsPerThreadgroup, threads: false)
    }

    func memoryBarrier(scope: MTLBarrierScope) {
        commandBuffer.append(.barrier)
    }

    func useResource(_ resource: any MTLResource, usage: MTLResourceUsage) {}

    private func encodeDispatch(grid: MTLSize, threadgroup: MTLSize, threads: Bool) {
        // The runtime's per-dispatch hints (checked-mode view lengths, must-write mask).
        var annotation = mgsim_annotation()
        let annotated = mgsim_take_annotation(&annotation) != 0
        guard let pipeline else { return }  // Metal ignores a dispatch without a pipeline
        let dispatch = SimDispatch(pipeline: pipeline)
        let slots = Self.slots
        withUnsafeMutableBytes(of: &dispatch.description.buffers) { raw in
            let bindings = raw.baseAddress!.assumingMemoryBound(to: mgsim_binding.self)
            bindings.update(from: table, count: slots)
            if annotated {
                withUnsafeBytes(of: annotation.view_length) { viewRaw in
                    let views = viewRaw.bindMemory(to: UInt64.self)
                    for index in 0..<slots where views[index] > 0 && bindings[index].data != nil {
                        bindings[index].length = min(views[index], bindings[index].length)
                    }
                }
            }
            // Each dispatch gets its own copy of the inline bytes: the encoder's may change after it.
            var mask = inlineMask
            while mask != 0 {
                let index = mask.trailingZeroBitCount
                mask &= mask - 1
                let length = Int(table[index].length)
                let copy = malloc(max(length, 1))!
                copy.copyMemory(from: inlineData[index]!, byteCount: length)
                dispatch.inlineCopies.append(copy)
                bindings[index] = mgsim_binding(data: copy, length: UInt64(length))
            }
            if retains {
                for index in 0..<slots { if let owner = owners[index] { dispatch.retained.append(owner) } }
            }
        }
        withUnsafeMutableBytes(of: &dispatch.description.threadgroup_memory_length) { raw in
            raw.baseAddress!.assumingMemoryBound(to: UInt64.self).update(from: threadgroupMemory, count: slots)
        }
        dispatch.description.grid = (UInt32(clamping: grid.width), UInt32(clamping: grid.height), UInt32(clamping: grid.depth))
        dispatch.description.threads_per_threadgroup = (
            UInt32(clamping: threadgroup.width), UInt32(clamping: threadgroup.height), UInt32(clamping: threadgroup.depth)
        )
        dispatch.description.dispatch_threads = threads ? 1 : 0
        dispatch.description.must_write_mask = annotated ? annotation.must_write_mask : 0
        commandBuffer.append(.dispatch(dispatch))
    }
}

final class SimSharedEvent: NSObject, MTLSharedEvent, @unchecked Sendable {
    private let lock = ShimLock()
    private var value: UInt64 = 0

    var signaledValue: UInt64 {
        get { lock.withLock { value } }
        set {
            lock.withLock {
                value = newValue
                lock.broadcast()
            }
        }
    }

    func wait(untilSignaledValue target: UInt64, timeoutMS milliseconds: UInt64) -> Bool {
        let deadline = hostTime() + Double(milliseconds) / 1000
        return lock.withLock {
            while value < target {
                if !lock.wait(untilUptime: deadline) && value < target { return false }
            }
            return true
        }
    }
}
