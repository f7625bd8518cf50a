// The concrete classes and free functions of the Metal API subset. Their public surface is exactly
// the subset's; everything else in this module is internal.
import Foundation

public func MTLCreateSystemDefaultDevice() -> (any MTLDevice)? {
    SimDevice.shared
}

public func MTLCopyAllDevices() -> [any MTLDevice] {
    [SimDevice.shared]
}

public class MTLArchitecture: NSObject, NSCopying {
    public let name: String
    init(name: String) {
        self.name = name
    }
    public func copy(with zone: NSZone? = nil) -> Any {
        MTLArchitecture(name: name)
    }
}

open class MTLCompileOptions: NSObject, NSCopying {
    /// Metal's own default is fast math; callers that want IEEE behaviour must ask for `.safe`.
    open var mathMode: MTLMathMode = .fast
    open var mathFloatingPointFunctions: MTLMathFloatingPointFunctions = .fast
    /// The newest version the simulator's SDK generation knows (macOS 26: Metal 4.0).
    open var languageVersion: MTLLanguageVersion = .version4_0
    /// Values are NSString or NSNumber, as with Metal.
    open var preprocessorMacros: [String: NSObject]?

    @available(macOS, deprecated: 15.0, message: "Use mathMode instead")
    open var fastMathEnabled: Bool {
        get { mathMode == .fast }
        set { mathMode = newValue ? .fast : .safe }
    }

    public override init() {
        super.init()
    }

    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = MTLCompileOptions()
        copy.mathMode = mathMode
        copy.mathFloatingPointFunctions = mathFloatingPointFunctions
        copy.languageVersion = languageVersion
        copy.preprocessorMacros = preprocessorMacros
        return copy
    }
}

open class MTLFunctionConstantValues: NSObject, NSCopying {
    /// One recorded value: by index (name nil) or by name.
    struct Entry {
        var index: Int
        var name: String?
        var type: MTLDataType
        var bytes: [UInt8]
    }
    var entries: [Entry] = []

    public override init() {
        super.init()
    }

    open func setConstantValue(_ value: UnsafeRawPointer, type: MTLDataType, index: Int) {
        entries.removeAll { $0.name == nil && $0.index == index }
        entries.append(Entry(index: index, name: nil, type: type, bytes: Self.copyValue(value, type)))
    }

    open func setConstantValue(_ value: UnsafeRawPointer, type: MTLDataType, withName name: String) {
        entries.removeAll { $0.name == name }
        entries.append(Entry(index: -1, name: name, type: type, bytes: Self.copyValue(value, type)))
    }

    open func copy(with zone: NSZone? = nil) -> Any {
        let copy = MTLFunctionConstantValues()
        copy.entries = entries
        return copy
    }

    /// 0 for a type outside the API subset (Metal's behaviour there is undefined; nothing is copied).
    static func size(of type: MTLDataType) -> Int {
        switch type {
        case .char, .uchar, .bool: return 1
        case .half, .short, .ushort: return 2
        case .float, .int, .uint: return 4
        case .long, .ulong: return 8
        default: return 0
        }
    }

    private static func copyValue(_ value: UnsafeRawPointer, _ type: MTLDataType) -> [UInt8] {
        Array(UnsafeRawBufferPointer(start: value, count: size(of: type)))
    }
}

open class MTLCaptureDescriptor: NSObject {
    open var captureObject: Any?
    open var destination: MTLCaptureDestination = .developerTools
    open var outputURL: URL?
    public override init() {
        super.init()
    }
}

/// The simulator has no GPU to capture: every destination is unsupported and starting a capture
/// throws an error that says so.
open class MTLCaptureManager: NSObject {
    // Not Sendable in the SDK either; the one instance holds no state.
    nonisolated(unsafe) private static let sharedManager = MTLCaptureManager()

    open class func shared() -> MTLCaptureManager {
        sharedManager
    }

    open var isCapturing: Bool { false }

    open func supportsDestination(_ destination: MTLCaptureDestination) -> Bool {
        false
    }

    open func startCapture(with descriptor: MTLCaptureDescriptor) throws {
        throw simError(
            domain: "MTLCaptureErrorDomain", code: 1,
            "[MTLCaptureManager] GPU capture is not supported on the Metal simulator")
    }

    open func stopCapture() {}
}

/// Simulator-only userInfo key of a failed command buffer's error: `[[ordinal, message]]`, the
/// dispatches that failed, numbered in encoding order within the command buffer (the others ran).
public let shimFailedDispatchesKey = "MGSimFailedDispatches"

func simError(domain: String, code: Int, _ message: String) -> NSError {
    NSError(domain: domain, code: code, userInfo: [NSLocalizedDescriptionKey: message])
}
