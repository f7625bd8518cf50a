// The device and the facts the rest of metalgrad plans with.
#if canImport(Metal)
import Metal
#else
import MetalShim
#endif
import Foundation

/// What a GPU architecture string says, parsed as MLX does (mlx/backend/metal/device.cpp):
/// "applegpu_g15s" → generation 15 (the two digits before the last character) and size class "s"
/// (the last character). The size class sets how much work goes into one command buffer.
struct ArchitectureFacts: Equatable {
    let name: String
    let generation: Int
    let sizeClass: String
    let maxOpsPerCommandBuffer: Int
    let maxMBPerCommandBuffer: Int

    init(name: String, environment: [String: String]) {
        self.name = name
        let chars = Array(name)
        var generation = 0
        var sizeClass = ""
        if chars.count >= 3, let parsed = Int(String(chars[(chars.count - 3)..<(chars.count - 1)])) {
            generation = parsed
            sizeClass = String(chars[chars.count - 1])
        }
        self.generation = generation
        self.sizeClass = sizeClass
        // MLX's per-size-class limits: phone, base/pro, max, ultra; anything else like base/pro.
        let (ops, megabytes): (Int, Int)
        switch sizeClass {
        case "p": (ops, megabytes) = (20, 40)
        case "g": (ops, megabytes) = (40, 40)
        case "s", "d": (ops, megabytes) = (50, 50)
        default: (ops, megabytes) = (40, 40)
        }
        maxOpsPerCommandBuffer = environment["MG_MAX_OPS_PER_BUFFER"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } ?? ops
        maxMBPerCommandBuffer = environment["MG_MAX_MB_PER_BUFFER"].flatMap { Int($0) }.flatMap { $0 > 0 ? $0 : nil } ?? megabytes
    }
}

struct DeviceInfo: Codable {
    let name: String
    let architecture: String
    let generation: Int
    let sizeClass: String
    let maxOpsPerCommandBuffer: Int
    let maxMBPerCommandBuffer: Int
    let maxThreadsPerThreadgroup: [Int]
    let recommendedMaxWorkingSetSize: Double
    let hasUnifiedMemory: Bool
    let maxBufferLength: Double
    let registryID: String
    let isSimulator: Bool
    /// Threadgroup memory per threadgroup on every Apple GPU (the property is outside the API subset).
    let maxThreadgroupMemoryLength: Int
    /// The highest MTLGPUFamily.appleN the device reports (0: none). Hosted macOS runners' "Apple
    /// Paravirtual device" reports apple5, though real Apple silicon runs underneath.
    let appleFamily: Int
    /// Features Metal's feature tables list from apple7 on Apple GPUs: simdgroup matrices, and
    /// atomic<float> in device memory (Metal 3). False means the device does not advertise them
    /// (kernels using them may still compile there; a failure says why).
    let supportsSimdgroupMatrix: Bool
    let supportsAtomicFloat: Bool
}

/// Threadgroup memory available to one threadgroup on Apple-family GPUs.
let maxThreadgroupMemoryLength = 32768

final class Device: @unchecked Sendable {
    let device: any MTLDevice
    let arch: ArchitectureFacts
    let maxThreadsPerThreadgroup: MTLSize
    let recommendedMaxWorkingSetSize: UInt64
    let maxBufferLength: Int
    let infoJSON: String
    /// For error messages: what the device reports about features some kernels need.
    let featureFacts: (appleFamily: Int, simdgroupMatrix: Bool, atomicFloat: Bool)

    init() throws {
        // A command-line process (Bun is one) gets a default device only with CoreGraphics linked
        // (Package.swift links it); listing all devices is the fallback.
        guard let device = MTLCreateSystemDefaultDevice() ?? MTLCopyAllDevices().first else {
            throw RuntimeError("no Metal device is available (MTLCreateSystemDefaultDevice and MTLCopyAllDevices found none)")
        }
        self.device = device
        let environment = ProcessInfo.processInfo.environment
        let override = environment["MG_GPU_ARCH"] ?? ""
        arch = ArchitectureFacts(name: override.isEmpty ? device.architecture.name : override, environment: environment)
        maxThreadsPerThreadgroup = device.maxThreadsPerThreadgroup
        recommendedMaxWorkingSetSize = device.recommendedMaxWorkingSetSize
        maxBufferLength = device.maxBufferLength
        // By raw value (apple1 = 1001 …): newer families are missing from older SDKs.
        let appleFamily = (1...12).last { family in
            MTLGPUFamily(rawValue: 1000 + family).map { device.supportsFamily($0) } ?? false
        } ?? 0
        let modernFeatures = appleFamily >= 7
        let info = DeviceInfo(
            name: device.name,
            architecture: arch.name,
            generation: arch.generation,
            sizeClass: arch.sizeClass,
            maxOpsPerCommandBuffer: arch.maxOpsPerCommandBuffer,
            maxMBPerCommandBuffer: arch.maxMBPerCommandBuffer,
            maxThreadsPerThreadgroup: [
                maxThreadsPerThreadgroup.width, maxThreadsPerThreadgroup.height, maxThreadsPerThreadgroup.depth,
            ],
            recommendedMaxWorkingSetSize: Double(device.recommendedMaxWorkingSetSize),
            hasUnifiedMemory: device.hasUnifiedMemory,
            maxBufferLength: Double(device.maxBufferLength),
            registryID: String(device.registryID),
            isSimulator: runningOnSimulator,
            maxThreadgroupMemoryLength: maxThreadgroupMemoryLength,
            appleFamily: appleFamily,
            supportsSimdgroupMatrix: modernFeatures,
            supportsAtomicFloat: modernFeatures && device.supportsFamily(.metal3)
        )
        featureFacts = (appleFamily, info.supportsSimdgroupMatrix, info.supportsAtomicFloat)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        infoJSON = String(decoding: try encoder.encode(info), as: UTF8.self)
    }
}

extension Device {
    /// Why a library using simdgroup matrices or atomic<float> may have failed here, when the device
    /// does not advertise them (hosted macOS runners' paravirtual GPU reports apple5); empty otherwise.
    func missingFeatureHint(source: String) -> String {
        var missing: [String] = []
        if !featureFacts.simdgroupMatrix, source.contains("simdgroup_matrix") || source.contains("simdgroup_multiply")
            || source.contains("simdgroup_float8x8") || source.contains("simdgroup_half8x8") {
            missing.append("simdgroup matrices")
        }
        if !featureFacts.atomicFloat, source.contains("atomic_float") || source.contains("atomic<float>") {
            missing.append("atomic<float>")
        }
        if missing.isEmpty { return "" }
        return " — note: this device (\(device.name), apple\(featureFacts.appleFamily) GPU family) does not advertise "
            + missing.joined(separator: " or ") + ", which Metal lists from the apple7 family"
    }
}
