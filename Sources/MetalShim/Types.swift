// Value types, enums and option sets of the Metal API subset (../shared/reference/
// metal-swift-api-subset.md), spelled as the macOS 26 SDK imports them into Swift. Imported C
// structs and NS_ENUM / NS_OPTIONS types are Sendable there, so they are declared Sendable here.
import Foundation

/// CoreFoundation's `typealias CFTimeInterval = Double`. Apple platforms get it from
/// CoreFoundation through `import Metal`; Linux Foundation does not export it, and the Metal
/// command-buffer timestamps are typed with it.
public typealias CFTimeInterval = Double

public struct MTLSize: Sendable {
    public var width: Int
    public var height: Int
    public var depth: Int
    public init(width: Int, height: Int, depth: Int) {
        self.width = width
        self.height = height
        self.depth = depth
    }
}

public struct MTLResourceOptions: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let storageModeShared = MTLResourceOptions([])
    public static let cpuCacheModeWriteCombined = MTLResourceOptions(rawValue: 1)
    public static let storageModeManaged = MTLResourceOptions(rawValue: 16)
    public static let storageModePrivate = MTLResourceOptions(rawValue: 32)
    public static let hazardTrackingModeUntracked = MTLResourceOptions(rawValue: 256)
    public static let hazardTrackingModeTracked = MTLResourceOptions(rawValue: 512)
}

public struct MTLBarrierScope: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let buffers = MTLBarrierScope(rawValue: 1)
    public static let textures = MTLBarrierScope(rawValue: 2)
    public static let renderTargets = MTLBarrierScope(rawValue: 4)
}

public struct MTLResourceUsage: OptionSet, Sendable {
    public let rawValue: UInt
    public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let read = MTLResourceUsage(rawValue: 1)
    public static let write = MTLResourceUsage(rawValue: 2)
}

public enum MTLGPUFamily: Int, Sendable {
    case apple1 = 1001, apple2 = 1002, apple3 = 1003, apple4 = 1004, apple5 = 1005
    case apple6 = 1006, apple7 = 1007, apple8 = 1008, apple9 = 1009, apple10 = 1010
    case mac2 = 2002
    case common1 = 3001, common2 = 3002, common3 = 3003
    case metal3 = 5001
    case metal4 = 5002
}

public enum MTLMathMode: Int, Sendable {
    case safe = 0
    case relaxed = 1
    case fast = 2
}

public enum MTLMathFloatingPointFunctions: Int, Sendable {
    case fast = 0
    case precise = 1
}

public enum MTLLanguageVersion: UInt, Sendable {
    case version3_0 = 0x30000
    case version3_1 = 0x30001
    case version3_2 = 0x30002
    case version4_0 = 0x40000
}

public enum MTLDataType: UInt, Sendable {
    case float = 3
    case half = 16
    case int = 29
    case uint = 33
    case short = 37
    case ushort = 41
    case char = 45
    case uchar = 49
    case bool = 53
    case long = 81
    case ulong = 85
}

public enum MTLDispatchType: UInt, Sendable {
    case serial = 0
    case concurrent = 1
}

public enum MTLCommandBufferStatus: UInt, Sendable {
    case notEnqueued = 0
    case enqueued = 1
    case committed = 2
    case scheduled = 3
    case completed = 4
    case error = 5
}

public enum MTLCaptureDestination: Int, Sendable {
    case developerTools = 1
    case gpuTraceDocument = 2
}

public typealias MTLCommandBufferHandler = @Sendable (any MTLCommandBuffer) -> Void
