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

// Metal's enums are C enums (NS_ENUM), which Swift imports as *open* enums: `init?(rawValue:)`
// returns a value for any raw value (a newer OS may add cases) and a `switch` needs a default. The
// shim declares them as structs with the same behaviour, so code that expects
// `MTLDataType(rawValue: 9999)` to be nil, or that forgets a default, fails here as on a Mac.

public struct MTLGPUFamily: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int
    /// Never nil: an imported Metal enum accepts any raw value (see the note above).
    public init?(rawValue: Int) { self.rawValue = rawValue }
    init(_ rawValue: Int) { self.rawValue = rawValue }
    public static let apple1 = MTLGPUFamily(1001)
    public static let apple2 = MTLGPUFamily(1002)
    public static let apple3 = MTLGPUFamily(1003)
    public static let apple4 = MTLGPUFamily(1004)
    public static let apple5 = MTLGPUFamily(1005)
    public static let apple6 = MTLGPUFamily(1006)
    public static let apple7 = MTLGPUFamily(1007)
    public static let apple8 = MTLGPUFamily(1008)
    public static let apple9 = MTLGPUFamily(1009)
    public static let apple10 = MTLGPUFamily(1010)
    public static let mac2 = MTLGPUFamily(2002)
    public static let common1 = MTLGPUFamily(3001)
    public static let common2 = MTLGPUFamily(3002)
    public static let common3 = MTLGPUFamily(3003)
    public static let metal3 = MTLGPUFamily(5001)
    public static let metal4 = MTLGPUFamily(5002)
}

public struct MTLMathMode: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int
    /// Never nil: an imported Metal enum accepts any raw value (see the note above).
    public init?(rawValue: Int) { self.rawValue = rawValue }
    init(_ rawValue: Int) { self.rawValue = rawValue }
    public static let safe = MTLMathMode(0)
    public static let relaxed = MTLMathMode(1)
    public static let fast = MTLMathMode(2)
}

public struct MTLMathFloatingPointFunctions: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int
    /// Never nil: an imported Metal enum accepts any raw value (see the note above).
    public init?(rawValue: Int) { self.rawValue = rawValue }
    init(_ rawValue: Int) { self.rawValue = rawValue }
    public static let fast = MTLMathFloatingPointFunctions(0)
    public static let precise = MTLMathFloatingPointFunctions(1)
}

public struct MTLLanguageVersion: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt
    /// Never nil: an imported Metal enum accepts any raw value (see the note above).
    public init?(rawValue: UInt) { self.rawValue = rawValue }
    init(_ rawValue: UInt) { self.rawValue = rawValue }
    public static let version3_0 = MTLLanguageVersion(0x30000)
    public static let version3_1 = MTLLanguageVersion(0x30001)
    public static let version3_2 = MTLLanguageVersion(0x30002)
    public static let version4_0 = MTLLanguageVersion(0x40000)
}

public struct MTLDataType: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt
    /// Never nil: an imported Metal enum accepts any raw value (see the note above).
    public init?(rawValue: UInt) { self.rawValue = rawValue }
    init(_ rawValue: UInt) { self.rawValue = rawValue }
    public static let float = MTLDataType(3)
    public static let half = MTLDataType(16)
    public static let int = MTLDataType(29)
    public static let uint = MTLDataType(33)
    public static let short = MTLDataType(37)
    public static let ushort = MTLDataType(41)
    public static let char = MTLDataType(45)
    public static let uchar = MTLDataType(49)
    public static let bool = MTLDataType(53)
    public static let long = MTLDataType(81)
    public static let ulong = MTLDataType(85)
}

public struct MTLDispatchType: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt
    /// Never nil: an imported Metal enum accepts any raw value (see the note above).
    public init?(rawValue: UInt) { self.rawValue = rawValue }
    init(_ rawValue: UInt) { self.rawValue = rawValue }
    public static let serial = MTLDispatchType(0)
    public static let concurrent = MTLDispatchType(1)
}

public struct MTLCommandBufferStatus: RawRepresentable, Hashable, Sendable {
    public let rawValue: UInt
    /// Never nil: an imported Metal enum accepts any raw value (see the note above).
    public init?(rawValue: UInt) { self.rawValue = rawValue }
    init(_ rawValue: UInt) { self.rawValue = rawValue }
    public static let notEnqueued = MTLCommandBufferStatus(0)
    public static let enqueued = MTLCommandBufferStatus(1)
    public static let committed = MTLCommandBufferStatus(2)
    public static let scheduled = MTLCommandBufferStatus(3)
    public static let completed = MTLCommandBufferStatus(4)
    public static let error = MTLCommandBufferStatus(5)
}

public struct MTLCaptureDestination: RawRepresentable, Hashable, Sendable {
    public let rawValue: Int
    /// Never nil: an imported Metal enum accepts any raw value (see the note above).
    public init?(rawValue: Int) { self.rawValue = rawValue }
    init(_ rawValue: Int) { self.rawValue = rawValue }
    public static let developerTools = MTLCaptureDestination(1)
    public static let gpuTraceDocument = MTLCaptureDestination(2)
}

public typealias MTLCommandBufferHandler = @Sendable (any MTLCommandBuffer) -> Void
