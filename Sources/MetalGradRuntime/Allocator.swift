// Buffers, their holders, and the caching allocator (docs/ARCHITECTURE.md, "Buffers and ownership").
//
// Rounding. A request of n bytes allocates
//     0                            when n == 0 (no memory at all; the handle is still valid),
//     n rounded up to 256 B        when 0 < n < 16 KiB,
//     n rounded up to 16 KiB       when n >= 16 KiB (Apple silicon's page size).
// The counters (active, peak, cache) are sums of these allocated lengths, so they are exact and
// predictable: a 1000-byte buffer counts 1024, a 20000-byte buffer counts 32768.
//
// Reuse. A request whose allocated length is L takes, from the cache, the allocation with the
// smallest length C such that  L <= C <= min(2·L, L + 1 MiB);  among equal lengths the most
// recently cached one (its pages are warm). Anything larger is left for a better fit, so a small
// request never pins a big block.
//
// Limits. An allocation that is not served from the cache and would take active + cache + view-held
// bytes past the memory limit first empties the cache; if active + view-held + L still exceeds the
// limit it fails with an error. Whenever the cache grows past the cache limit, the oldest cached
// allocations are freed first. Defaults: memory limit 1.5 × recommendedMaxWorkingSetSize (MLX's),
// cache limit = the memory limit.
//
// View pins. Each non-empty buffer hands JavaScript one ArrayBuffer over its memory. That view pins
// the allocation's mapping, not the buffer: a released buffer's allocation enters the cache and may
// be reused while an old view still exists, but clearCache / eviction never unmap pinned memory; it
// moves to "view-held" and is freed when the last view's deallocator runs.
//
// Parking. TypeScript keeps buffers it released for reuse by the same size without the allocator
// (ts/backend/runtime.ts, BufferPool); it parks and unparks them by handle, and the record is marked
// parked. Parked memory counts as cache, not active, and its buffers are not live — exactly as if
// released; taking one back counts it active again (and may raise the peak). A parked buffer whose
// owner goes without being taken back (released, or its view collected when the pool itself became
// garbage, e.g. a test file's module registry under `bun test --isolate`) leaves the parked bytes,
// not the active ones: knowing that per record is what keeps `active` exact. Parking never takes
// the cache past the cache limit (it is declined), and the memory limit counts parked bytes,
// which only TypeScript can free (it drains its pool and retries when an allocation fails on the
// limit). TypeScript parks only buffers no submitted batch may still use.
//
// Wired limit. Stored and reported only: wiring memory needs residency sets, which are outside the
// Metal API subset this runtime compiles against (and the simulator has nothing to wire).
#if canImport(Metal)
import Metal
#else
import MetalShim
#endif
import Foundation

/// One block of device memory.
final class Allocation {
    enum State { case active, cached, viewHeld, freed }
    let buffer: any MTLBuffer
    let length: Int
    var state: State = .active
    /// Live JavaScript views pointing into this memory.
    var viewPins = 0
    /// Position in the cache's age order (valid while cached).
    var cacheSequence: UInt64 = 0

    init(buffer: any MTLBuffer, length: Int) {
        self.buffer = buffer
        self.length = length
    }
}

/// The record behind a buffer handle.
final class BufferRecord {
    let id: UInt64
    /// The logical size the caller asked for; bindings are checked against it.
    let size: Int
    let allocation: Allocation?
    /// allocation?.buffer, kept here too: encoding a batch reads it for every binding, and this
    /// record is already in cache from validating the binding (the allocation object is not).
    let buffer: (any MTLBuffer)?
    var ownerHeld = true
    var inflight = 0
    var viewPinned: Bool
    /// TypeScript's pool holds it for reuse (Runtime.parkBuffer): its bytes count as cache, not
    /// active, until it is taken back or its owner goes (release, or its view's collection).
    var parked = false
    /// Set once the allocation has gone back to the cache.
    var retired = false
    /// Why the contents are not valid: the last GPU write came from a dispatch that failed or read
    /// such a buffer (set when its batch completes; a clean write clears it).
    var failure: String?
    /// The last batch parse that bound it (Runtime.batchMarks) and its slot there (CommandBatch.swift).
    var batchMark: UInt64 = 0
    var batchSlot = 0

    init(id: UInt64, size: Int, allocation: Allocation?) {
        self.id = id
        self.size = size
        self.allocation = allocation
        buffer = allocation?.buffer
        viewPinned = allocation != nil
    }
}

struct MemoryStats {
    var active = 0
    var peak = 0
    var cache = 0
    var viewHeld = 0
    var memoryLimit = 0
    var cacheLimit = 0
    var wiredLimit = 0
    var liveBuffers = 0
}

/// The allocator. Not thread-safe by itself: the runtime calls it under its registry lock.
final class Allocator {
    static let smallAlignment = 256
    static let pageSize = 16384
    static let maxReuseSlack = 1 << 20

    private let device: any MTLDevice
    private let maxBufferLength: Int
    private(set) var stats = MemoryStats()
    /// Cached allocations of a page or more by length; each list is in caching order (last = most
    /// recent).
    private var cacheByLength: [Int: [Allocation]] = [:]
    /// The distinct cached lengths of a page or more, ascending, for the smallest-fit search.
    private var cachedLengths: [Int] = []
    /// Cached allocations below a page (lengths 256·k, k < 64) by k, in caching order, and bit k set
    /// when list k is not empty: a small request (most of them) finds its fit with a mask, no hashing.
    private var smallLists = [[Allocation]](repeating: [], count: 64)
    private var smallMask: UInt64 = 0
    /// Cached allocations in caching order, for eviction; entries that left the cache are skipped.
    private var cacheAge: [(allocation: Allocation, sequence: UInt64)] = []
    private var cacheAgeHead = 0
    private var cachedCount = 0
    private var nextSequence: UInt64 = 0
    /// Evicted allocations that a view still points into.
    private var viewHeld: [ObjectIdentifier: Allocation] = [:]
    /// Parked allocations (TypeScript holds them for reuse): their bytes count in stats.cache.
    private(set) var parkedBytes = 0
    private(set) var parkedCount = 0

    init(device: any MTLDevice, recommendedMaxWorkingSetSize: UInt64, maxBufferLength: Int) {
        self.device = device
        self.maxBufferLength = maxBufferLength
        let limit = Int(clamping: recommendedMaxWorkingSetSize / 2 * 3)
        stats.memoryLimit = limit
        stats.cacheLimit = limit
    }

    static func roundedLength(_ size: Int) -> Int {
        if size == 0 { return 0 }
        if size < pageSize { return (size + smallAlignment - 1) / smallAlignment * smallAlignment }
        return (size + pageSize - 1) / pageSize * pageSize
    }

    func allocate(size: Int) throws -> Allocation? {
        guard size >= 0 else { throw RuntimeError("a buffer cannot have a negative size (\(size))") }
        if size == 0 { return nil }
        guard size <= maxBufferLength else {
            throw RuntimeError("\(size) bytes exceeds the device's maximum buffer length of \(maxBufferLength) bytes")
        }
        let length = Allocator.roundedLength(size)
        if let reused = takeFromCache(length: length) {
            reused.state = .active
            noteActive(reused.length)
            return reused
        }
        if stats.active + stats.cache + stats.viewHeld + length > stats.memoryLimit {
            clearCache()
        }
        if stats.active + parkedBytes + stats.viewHeld + length > stats.memoryLimit {
            let parked = parkedBytes > 0 ? " + \(parkedBytes) parked for reuse" : ""
            throw RuntimeError(
                "allocating \(size) bytes (\(length) allocated) would exceed the memory limit: "
                    + "\(stats.active) bytes active + \(stats.viewHeld) held by views\(parked) + \(length) > limit \(stats.memoryLimit); "
                    + "release buffers or raise the limit (mg_memory_set_limit)")
        }
        var made = device.makeBuffer(length: length, options: [.storageModeShared, .hazardTrackingModeUntracked])
        if made == nil {
            clearCache()
            made = device.makeBuffer(length: length, options: [.storageModeShared, .hazardTrackingModeUntracked])
        }
        guard let buffer = made else {
            throw RuntimeError("the device could not allocate \(length) bytes (\(stats.active) bytes active)")
        }
        let allocation = Allocation(buffer: buffer, length: length)
        noteActive(length)
        return allocation
    }

    private func noteActive(_ length: Int) {
        stats.active += length
        stats.peak = max(stats.peak, stats.active)
    }

    private func takeFromCache(length: Int) -> Allocation? {
        let upper = min(2 * length, length + Allocator.maxReuseSlack)
        if length < Allocator.pageSize {
            // Small lengths first (all smaller than any page-sized one): classes length/256 …
            // min(upper, a page - 1)/256.
            let first = length / Allocator.smallAlignment
            let last = min(upper, Allocator.pageSize - 1) / Allocator.smallAlignment
            let window = smallMask & (~UInt64(0) << UInt64(first)) & (~UInt64(0) >> UInt64(63 - last))
            if window != 0 {
                let k = window.trailingZeroBitCount
                let allocation = smallLists[k].removeLast()
                if smallLists[k].isEmpty { smallMask &= ~(1 << UInt64(k)) }
                stats.cache -= allocation.length
                cachedCount -= 1
                return allocation
            }
            if upper < Allocator.pageSize { return nil }
        }
        // Smallest cached length >= length.
        var low = 0
        var high = cachedLengths.count
        while low < high {
            let mid = (low + high) / 2
            if cachedLengths[mid] < length { low = mid + 1 } else { high = mid }
        }
        guard low < cachedLengths.count, cachedLengths[low] <= upper else { return nil }
        let found = cachedLengths[low]
        // Mutate the list in place: copying it out of the dictionary would copy it (O(n)) on write.
        let allocation = cacheByLength[found]!.removeLast()
        if cacheByLength[found]!.isEmpty {
            cacheByLength[found] = nil
            cachedLengths.remove(at: low)
        }
        stats.cache -= allocation.length
        cachedCount -= 1
        return allocation
    }

    /// An active allocation of `bytes` is kept by TypeScript for reuse (Runtime.parkBuffer): it counts
    /// as cache. False (nothing changed) when that would take the cache past its limit.
    func park(bytes: Int) throws -> Bool {
        guard bytes <= stats.active else {
            throw RuntimeError("parking \(bytes) bytes, but \(stats.active) bytes are active (the memory counters are inconsistent)")
        }
        guard stats.cache + bytes <= stats.cacheLimit else { return false }
        stats.active -= bytes
        stats.cache += bytes
        parkedBytes += bytes
        parkedCount += 1
        return true
    }

    /// A parked allocation is in use again (`release`: it is about to be retired, so it was never in
    /// use in between and the peak is left alone). The caller checked it is parked (its record).
    func unpark(bytes: Int, release: Bool) {
        precondition(bytes <= parkedBytes && parkedCount > 0 && bytes <= stats.cache,
                     "unparking \(bytes) bytes, but \(parkedBytes) bytes in \(parkedCount) buffers are parked")
        stats.cache -= bytes
        parkedBytes -= bytes
        parkedCount -= 1
        if release { stats.active += bytes } else { noteActive(bytes) }
    }

    /// A buffer's owner and in-flight batches are gone: its memory becomes reusable.
    func retire(_ allocation: Allocation) {
        // Every allocation counts in `active` from its allocation to here (parked ones are unparked
        // first). Not checked against `active` here: this runs on GC threads too, where a trap would
        // take the user's process down; park() reports inconsistent counters as an error instead.
        precondition(allocation.state == .active)
        stats.active -= allocation.length
        allocation.state = .cached
        nextSequence += 1
        allocation.cacheSequence = nextSequence
        if allocation.length < Allocator.pageSize {
            let k = allocation.length / Allocator.smallAlignment
            smallLists[k].append(allocation)
            smallMask |= 1 << UInt64(k)
        } else if cacheByLength[allocation.length] == nil {
            var low = 0
            var high = cachedLengths.count
            while low < high {
                let mid = (low + high) / 2
                if cachedLengths[mid] < allocation.length { low = mid + 1 } else { high = mid }
            }
            cachedLengths.insert(allocation.length, at: low)
            cacheByLength[allocation.length] = [allocation]
        } else {
            cacheByLength[allocation.length]!.append(allocation)
        }
        cacheAge.append((allocation, nextSequence))
        stats.cache += allocation.length
        cachedCount += 1
        enforceCacheLimit()
    }

    private func enforceCacheLimit() {
        while stats.cache > stats.cacheLimit, let oldest = popOldestCached() {
            evict(oldest)
        }
        compactAgeQueue()
    }

    private func popOldestCached() -> Allocation? {
        while cacheAgeHead < cacheAge.count {
            let (candidate, sequence) = cacheAge[cacheAgeHead]
            cacheAgeHead += 1
            // An allocation can be cached, reused and cached again: only its newest entry counts.
            if candidate.state == .cached && candidate.cacheSequence == sequence {
                removeFromLengthIndex(candidate)
                return candidate
            }
        }
        return nil
    }

    private func compactAgeQueue() {
        // Entries for allocations that were reused stay until they reach the head; compact when
        // they dominate, so the queue stays proportional to the cache's population.
        if cacheAge.count - cacheAgeHead > 2 * cachedCount + 1024 {
            cacheAge = cacheAge[cacheAgeHead...].filter { $0.allocation.state == .cached && $0.allocation.cacheSequence == $0.sequence }
            cacheAgeHead = 0
        } else if cacheAgeHead > 1024 && cacheAgeHead * 2 > cacheAge.count {
            cacheAge.removeFirst(cacheAgeHead)
            cacheAgeHead = 0
        }
    }

    private func removeFromLengthIndex(_ allocation: Allocation) {
        if allocation.length < Allocator.pageSize {
            let k = allocation.length / Allocator.smallAlignment
            guard let position = smallLists[k].firstIndex(where: { $0 === allocation }) else { return }
            smallLists[k].remove(at: position)
            if smallLists[k].isEmpty { smallMask &= ~(1 << UInt64(k)) }
            stats.cache -= allocation.length
            cachedCount -= 1
            return
        }
        guard let position = cacheByLength[allocation.length]?.firstIndex(where: { $0 === allocation }) else { return }
        cacheByLength[allocation.length]!.remove(at: position)
        if cacheByLength[allocation.length]!.isEmpty {
            cacheByLength[allocation.length] = nil
            if let index = cachedLengths.firstIndex(of: allocation.length) { cachedLengths.remove(at: index) }
        }
        stats.cache -= allocation.length
        cachedCount -= 1
    }

    /// Takes a cached allocation out of the cache: freed, or kept mapped for a live view.
    private func evict(_ allocation: Allocation) {
        if allocation.viewPins > 0 {
            allocation.state = .viewHeld
            stats.viewHeld += allocation.length
            viewHeld[ObjectIdentifier(allocation)] = allocation
        } else {
            allocation.state = .freed  // the last reference goes with the caller's
        }
    }

    func clearCache() {
        releaseSimulatorCheckMemory()  // checked mode's idle record memory goes with the cache
        for list in smallLists where !list.isEmpty {
            for allocation in list {
                stats.cache -= allocation.length
                evict(allocation)
            }
        }
        smallLists = [[Allocation]](repeating: [], count: 64)
        smallMask = 0
        for list in cacheByLength.values {
            for allocation in list {
                stats.cache -= allocation.length
                evict(allocation)
            }
        }
        cacheByLength.removeAll()
        cachedLengths.removeAll()
        cacheAge.removeAll()
        cacheAgeHead = 0
        cachedCount = 0
    }

    /// A JavaScript view of `allocation` was collected.
    func dropViewPin(_ allocation: Allocation) {
        allocation.viewPins -= 1
        if allocation.viewPins == 0 && allocation.state == .viewHeld {
            stats.viewHeld -= allocation.length
            allocation.state = .freed
            viewHeld[ObjectIdentifier(allocation)] = nil
        }
    }

    func resetPeak() {
        stats.peak = stats.active
    }

    func setMemoryLimit(_ bytes: Int) -> Int {
        defer { stats.memoryLimit = bytes }
        return stats.memoryLimit
    }

    func setCacheLimit(_ bytes: Int) -> Int {
        let previous = stats.cacheLimit
        stats.cacheLimit = bytes
        enforceCacheLimit()
        return previous
    }

    func setWiredLimit(_ bytes: Int) -> Int {
        defer { stats.wiredLimit = bytes }
        return stats.wiredLimit
    }

    func setLiveBuffers(_ count: Int) {
        stats.liveBuffers = count
    }
}
