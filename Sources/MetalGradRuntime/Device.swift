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

    init() throws {
        guard let device = MTLCreateSystemDefaultDevice() else {
            throw RuntimeError("no Metal device is available")
        }
        self.device = device
        let environment = ProcessInfo.processInfo.environment
        let override = environment["MG_GPU_ARCH"] ?? ""
        arch = ArchitectureFacts(name: override.isEmpty ? device.architecture.name : override, environment: environment)
        maxThreadsPerThreadgroup = device.maxThreadsPerThreadgroup
        recommendedMaxWorkingSetSize = device.recommendedMaxWorkingSetSize
        maxBufferLength = device.maxBufferLength
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
            maxThreadgroupMemoryLength: maxThreadgroupMemoryLength
        )
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        infoJSON = String(decoding: try encoder.encode(info), as: UTF8.self)
    }
}
