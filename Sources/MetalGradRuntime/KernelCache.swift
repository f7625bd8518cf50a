// Libraries and pipelines, with a bounded number of each kept built (issue 20: a long-running
// process that fuses many distinct kernels grew without bound). A record stays valid for the life
// of its handle and keeps what it takes to rebuild itself (its source and options, or its library,
// name and constants); the built MTLLibrary / MTLComputePipelineState is dropped least recently
// used first beyond the limits and rebuilt when used again — on the simulator that is a dlopen of
// the cached object, on Metal a compile. Handles never dangle, so TypeScript keeps its own caches.
//
// Limits: MG_KERNEL_CACHE_PIPELINES (default 1024 built pipeline states) and
// MG_KERNEL_CACHE_LIBRARIES (default 256 built libraries), or mg_kernel_cache_limits.
#if canImport(Metal)
import Metal
#else
import MetalShim
#endif
import Foundation

struct KernelCacheLimits {
    var pipelines: Int
    var libraries: Int

    static func fromEnvironment() -> KernelCacheLimits {
        let env = ProcessInfo.processInfo.environment
        func limit(_ name: String, _ fallback: Int) -> Int {
            guard let text = env[name], let value = Int(text), value >= 1 else { return fallback }
            return value
        }
        return KernelCacheLimits(pipelines: limit("MG_KERNEL_CACHE_PIPELINES", 1024),
                                 libraries: limit("MG_KERNEL_CACHE_LIBRARIES", 256))
    }
}

/// How a library is built: from source (with its compile options), or from a .metallib file.
enum LibraryRecipe {
    case source(String, mathMode: Int32, version: MTLLanguageVersion?, macros: [(String, String)])
    case file(String)
}

final class LibraryRecord {
    let id: UInt64
    let recipe: LibraryRecipe
    let functionNames: [String]
    /// Nil once evicted; rebuilt from the recipe when a pipeline needs it.
    var library: (any MTLLibrary)?
    var lastUse: UInt64 = 0
    init(id: UInt64, recipe: LibraryRecipe, library: any MTLLibrary) {
        self.id = id
        self.recipe = recipe
        self.library = library
        functionNames = library.functionNames.sorted()
    }
}

final class PipelineRecord {
    let id: UInt64
    let name: String
    let libraryID: UInt64
    let constants: [UInt32]
    /// Nil once evicted; rebuilt before a batch that uses it is encoded.
    var state: (any MTLComputePipelineState)?
    var lastUse: UInt64 = 0
    let maxTotalThreadsPerThreadgroup: Int
    let threadExecutionWidth: Int
    let staticThreadgroupMemoryLength: Int
    init(id: UInt64, name: String, libraryID: UInt64, constants: [UInt32], state: any MTLComputePipelineState) {
        self.id = id
        self.name = name
        self.libraryID = libraryID
        self.constants = constants
        self.state = state
        maxTotalThreadsPerThreadgroup = state.maxTotalThreadsPerThreadgroup
        threadExecutionWidth = state.threadExecutionWidth
        staticThreadgroupMemoryLength = state.staticThreadgroupMemoryLength
    }
}

struct LibraryKey: Hashable {
    let source: String
    let mathMode: Int32
    let languageVersion: UInt32
    let macros: [String]
    let checked: Int32
}

struct PipelineKey: Hashable {
    let library: UInt64
    let name: String
    let constants: [UInt32]
}

extension Runtime {
    // MARK: Building (no registry lock held: compiling may take long)

    func buildLibrary(_ recipe: LibraryRecipe) throws -> any MTLLibrary {
        switch recipe {
        case .source(let source, let mathMode, let version, let macros):
            let options = MTLCompileOptions()
            setMathMode(options, mathMode)
            if let version { options.languageVersion = version }
            if !macros.isEmpty {
                var table: [String: NSObject] = [:]
                for (name, value) in macros { table[name] = NSString(string: value) }
                options.preprocessorMacros = table
            }
            do {
                return try device.device.makeLibrary(source: source, options: options)
            } catch {
                throw RuntimeError("the library failed to compile: \(describeError(error))\(device.missingFeatureHint(source: source))")
            }
        case .file(let path):
            guard FileManager.default.fileExists(atPath: path) else { throw RuntimeError("\(path) does not exist") }
            do {
                return try device.device.makeLibrary(URL: URL(fileURLWithPath: path))
            } catch {
                throw RuntimeError("\(path) could not be loaded: \(describeError(error))")
            }
        }
    }

    /// `constants`: 4 words each — index, MTLDataType raw value, value low word, value high word.
    func buildPipelineState(_ library: any MTLLibrary, name: String, constants: [UInt32]) throws -> any MTLComputePipelineState {
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
        do {
            return try device.device.makeComputePipelineState(function: function)
        } catch {
            throw RuntimeError("pipeline for '\(name)' could not be built: \(describeError(error))")
        }
    }

    // MARK: The C ABI's operations

    func library(source: String, macros: [(String, String)], mathMode: Int32, languageVersion: UInt32,
                 checked: Int32) throws -> UInt64 {
        guard (0...2).contains(mathMode) else {
            throw RuntimeError("math mode must be 0 (safe), 1 (relaxed) or 2 (fast), got \(mathMode)")
        }
        guard (0...2).contains(checked) else { throw RuntimeError("checked must be 0, 1 or 2, got \(checked)") }
        let version = languageVersion == 0 ? nil : try checkedLanguageVersion(languageVersion)
        var allMacros = macros
        if checked != 0 { allMacros.append((checkedModeMacro, checked == 2 ? "writes" : "1")) }
        let key = LibraryKey(
            source: source, mathMode: mathMode, languageVersion: languageVersion,
            macros: allMacros.map { "\($0.0)=\($0.1)" }.sorted(), checked: checked)
        return try compileLock.withLock {
            if let cached = lock.withLock({ libraryCache[key] }) { return cached }
            let recipe = LibraryRecipe.source(source, mathMode: mathMode, version: version, macros: allMacros)
            let library = try buildLibrary(recipe)
            return lock.withLock {
                let id = addLibrary(recipe, library)
                libraryCache[key] = id
                counters.librariesCompiled += 1
                return id
            }
        }
    }

    func library(contentsOf path: String) throws -> UInt64 {
        try compileLock.withLock {
            if let cached = lock.withLock({ fileLibraryCache[path] }) { return cached }
            let recipe = LibraryRecipe.file(path)
            let library = try buildLibrary(recipe)
            return lock.withLock {
                let id = addLibrary(recipe, library)
                fileLibraryCache[path] = id
                return id
            }
        }
    }

    /// A built library under a new handle, most recently used (call with `lock` held).
    private func addLibrary(_ recipe: LibraryRecipe, _ library: any MTLLibrary) -> UInt64 {
        let id = newID(.library)
        let record = LibraryRecord(id: id, recipe: recipe, library: library)
        libraries[id] = record
        libraryUses.live += 1
        touch(record)
        evictKernels()
        return id
    }

    func functionNames(library handle: UInt64) throws -> [String] {
        try lock.withLock {
            guard let record = libraries[handle] else { throw unknownHandle(handle, .library) }
            return record.functionNames
        }
    }

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
            let state = try buildPipelineState(try builtLibrary(libraryRecord), name: name, constants: constants)
            return lock.withLock {
                let id = newID(.pipeline)
                let record = PipelineRecord(id: id, name: name, libraryID: handle, constants: constants, state: state)
                pipelines[id] = record
                pipelineUses.live += 1
                pipelineCache[key] = id
                counters.pipelinesCreated += 1
                touch(record)
                evictKernels()
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

    /// The built states of a batch's pipelines, rebuilding any that were evicted; the batch encodes
    /// with these (an eviction meanwhile cannot take them away). Call without the registry lock.
    func pipelineStates(_ records: [PipelineRecord]) throws -> [UInt64: any MTLComputePipelineState] {
        var states: [UInt64: any MTLComputePipelineState] = [:]
        var missing: [PipelineRecord] = []
        lock.withLock {
            for record in records {
                touch(record)
                if let state = record.state { states[record.id] = state } else { missing.append(record) }
            }
        }
        if missing.isEmpty { return states }
        try compileLock.withLock {
            for record in missing {
                if let state = lock.withLock({ record.state }) {
                    states[record.id] = state
                    continue
                }
                let libraryRecord = try lock.withLock { () throws -> LibraryRecord in
                    guard let found = libraries[record.libraryID] else { throw unknownHandle(record.libraryID, .library) }
                    return found
                }
                let state = try buildPipelineState(try builtLibrary(libraryRecord), name: record.name, constants: record.constants)
                states[record.id] = state
                lock.withLock {
                    if record.state == nil { pipelineUses.live += 1 }
                    record.state = state
                    counters.pipelinesRebuilt += 1
                    touch(record)
                    evictKernels()
                }
            }
        }
        return states
    }

    /// The record's built library, rebuilt if it was evicted. Call with compileLock held.
    private func builtLibrary(_ record: LibraryRecord) throws -> any MTLLibrary {
        if let library = lock.withLock({ () -> (any MTLLibrary)? in
            touch(record)
            return record.library
        }) {
            return library
        }
        let library = try buildLibrary(record.recipe)
        lock.withLock {
            if record.library == nil { libraryUses.live += 1 }
            record.library = library
            counters.librariesRebuilt += 1
            touch(record)
            evictKernels()
        }
        return library
    }

    // MARK: Use clock and eviction (registry lock held)

    func touch(_ record: LibraryRecord) {
        kernelClock += 1
        record.lastUse = kernelClock
        if record.library != nil { libraryUses.push(record.id, kernelClock) }
        if libraryUses.pending > 4 * libraryUses.live + 1024 {
            libraryUses.compact { self.libraries[$0]?.lastUse == $1 }
        }
    }

    func touch(_ record: PipelineRecord) {
        kernelClock += 1
        record.lastUse = kernelClock
        if record.state != nil { pipelineUses.push(record.id, kernelClock) }
        if pipelineUses.pending > 4 * pipelineUses.live + 1024 {
            pipelineUses.compact { self.pipelines[$0]?.lastUse == $1 }
        }
    }

    /// Drops the least recently used built states and libraries beyond the limits. A pipeline
    /// state holds what it needs of its library, so either can go independently.
    func evictKernels() {
        while pipelineUses.live > kernelLimits.pipelines, let (id, tick) = pipelineUses.popOldest() {
            guard let record = pipelines[id], record.lastUse == tick, record.state != nil else { continue }
            record.state = nil
            pipelineUses.live -= 1
            counters.kernelsEvicted += 1
        }
        while libraryUses.live > kernelLimits.libraries, let (id, tick) = libraryUses.popOldest() {
            guard let record = libraries[id], record.lastUse == tick, record.library != nil else { continue }
            record.library = nil
            libraryUses.live -= 1
            counters.kernelsEvicted += 1
        }
    }

    /// Sets the limits (a value below 1 keeps the current one); returns the previous limits and
    /// how many pipelines and libraries are built now.
    func setKernelLimits(pipelines pipelineLimit: Int, libraries libraryLimit: Int) -> (KernelCacheLimits, Int, Int) {
        lock.withLock {
            let previous = kernelLimits
            if pipelineLimit >= 1 { kernelLimits.pipelines = pipelineLimit }
            if libraryLimit >= 1 { kernelLimits.libraries = libraryLimit }
            evictKernels()
            return (previous, pipelineUses.live, libraryUses.live)
        }
    }
}

/// Least-recently-used order of built kernel objects: touches append (id, tick); the oldest entry
/// whose tick is still its record's last use is the one to evict. Stale entries are skipped, and
/// the queue is compacted when they dominate, so each operation is amortised O(1).
struct UseQueue {
    private var entries: [(id: UInt64, tick: UInt64)] = []
    private var head = 0
    /// Built objects (maintained by the runtime as it builds and evicts them).
    var live = 0

    /// Entries waiting in the queue (stale ones included).
    var pending: Int { entries.count - head }

    mutating func push(_ id: UInt64, _ tick: UInt64) {
        entries.append((id, tick))
    }

    /// Keeps only the entries `current` says are still their record's last use.
    mutating func compact(_ current: (UInt64, UInt64) -> Bool) {
        entries = entries[head...].filter { current($0.id, $0.tick) }
        head = 0
    }

    mutating func popOldest() -> (UInt64, UInt64)? {
        guard head < entries.count else { return nil }
        defer { head += 1 }
        return entries[head]
    }
}
