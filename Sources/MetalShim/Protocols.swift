// The protocols of the Metal API subset with exactly the requirements the subset lists. Default
// arguments cannot live on protocol requirements, so the SDK's defaulted forms are short overloads
// in extensions (as are the Swift-overlay methods such as memoryBarrier(resources:)).
import Foundation

public protocol MTLDevice: NSObjectProtocol, Sendable {
    var name: String { get }
    var registryID: UInt64 { get }
    var architecture: MTLArchitecture { get }
    var maxThreadsPerThreadgroup: MTLSize { get }
    var recommendedMaxWorkingSetSize: UInt64 { get }
    var currentAllocatedSize: Int { get }
    var hasUnifiedMemory: Bool { get }
    var maxBufferLength: Int { get }
    func supportsFamily(_ gpuFamily: MTLGPUFamily) -> Bool
    func makeBuffer(length: Int, options: MTLResourceOptions) -> (any MTLBuffer)?
    func makeBuffer(bytes pointer: UnsafeRawPointer, length: Int, options: MTLResourceOptions) -> (any MTLBuffer)?
    func makeBuffer(
        bytesNoCopy pointer: UnsafeMutableRawPointer, length: Int, options: MTLResourceOptions,
        deallocator: (@Sendable (UnsafeMutableRawPointer, Int) -> Void)?
    ) -> (any MTLBuffer)?
    func makeLibrary(source: String, options: MTLCompileOptions?) throws -> any MTLLibrary
    func makeLibrary(URL url: URL) throws -> any MTLLibrary
    func makeComputePipelineState(function computeFunction: any MTLFunction) throws -> any MTLComputePipelineState
    func makeCommandQueue() -> (any MTLCommandQueue)?
    func makeCommandQueue(maxCommandBufferCount: Int) -> (any MTLCommandQueue)?
    func makeSharedEvent() -> (any MTLSharedEvent)?
}

extension MTLDevice {
    public func makeBuffer(length: Int) -> (any MTLBuffer)? {
        makeBuffer(length: length, options: [])
    }
    public func makeBuffer(bytes pointer: UnsafeRawPointer, length: Int) -> (any MTLBuffer)? {
        makeBuffer(bytes: pointer, length: length, options: [])
    }
    public func makeBuffer(bytesNoCopy pointer: UnsafeMutableRawPointer, length: Int) -> (any MTLBuffer)? {
        makeBuffer(bytesNoCopy: pointer, length: length, options: [], deallocator: nil)
    }
    public func makeBuffer(
        bytesNoCopy pointer: UnsafeMutableRawPointer, length: Int, options: MTLResourceOptions
    ) -> (any MTLBuffer)? {
        makeBuffer(bytesNoCopy: pointer, length: length, options: options, deallocator: nil)
    }
    public func makeBuffer(
        bytesNoCopy pointer: UnsafeMutableRawPointer, length: Int,
        deallocator: (@Sendable (UnsafeMutableRawPointer, Int) -> Void)?
    ) -> (any MTLBuffer)? {
        makeBuffer(bytesNoCopy: pointer, length: length, options: [], deallocator: deallocator)
    }
}

public protocol MTLResource: NSObjectProtocol {
    var label: String? { get set }
}

public protocol MTLBuffer: MTLResource {
    func contents() -> UnsafeMutableRawPointer
    var length: Int { get }
}

public protocol MTLFunction: NSObjectProtocol {}

public protocol MTLLibrary: NSObjectProtocol, Sendable {
    func makeFunction(name functionName: String) -> (any MTLFunction)?
    func makeFunction(name: String, constantValues: MTLFunctionConstantValues) throws -> any MTLFunction
    var functionNames: [String] { get }
}

public protocol MTLComputePipelineState: NSObjectProtocol, Sendable {
    var maxTotalThreadsPerThreadgroup: Int { get }
    var threadExecutionWidth: Int { get }
    var staticThreadgroupMemoryLength: Int { get }
}

public protocol MTLCommandQueue: NSObjectProtocol {
    func makeCommandBuffer() -> (any MTLCommandBuffer)?
    func makeCommandBufferWithUnretainedReferences() -> (any MTLCommandBuffer)?
}

public protocol MTLCommandBuffer: NSObjectProtocol {
    func makeComputeCommandEncoder() -> (any MTLComputeCommandEncoder)?
    func makeComputeCommandEncoder(dispatchType: MTLDispatchType) -> (any MTLComputeCommandEncoder)?
    func commit()
    func waitUntilCompleted()
    func addCompletedHandler(_ block: @escaping MTLCommandBufferHandler)
    var status: MTLCommandBufferStatus { get }
    var error: (any Error)? { get }
    var gpuStartTime: CFTimeInterval { get }
    var gpuEndTime: CFTimeInterval { get }
    func encodeSignalEvent(_ event: any MTLEvent, value: UInt64)
    func encodeWaitForEvent(_ event: any MTLEvent, value: UInt64)
}

public protocol MTLCommandEncoder: NSObjectProtocol {
    func endEncoding()
    var label: String? { get set }
}

public protocol MTLComputeCommandEncoder: MTLCommandEncoder {
    func setComputePipelineState(_ state: any MTLComputePipelineState)
    func setBuffer(_ buffer: (any MTLBuffer)?, offset: Int, index: Int)
    func setBytes(_ bytes: UnsafeRawPointer, length: Int, index: Int)
    func setThreadgroupMemoryLength(_ length: Int, index: Int)
    func dispatchThreads(_ threadsPerGrid: MTLSize, threadsPerThreadgroup: MTLSize)
    func dispatchThreadgroups(_ threadgroupsPerGrid: MTLSize, threadsPerThreadgroup: MTLSize)
    func memoryBarrier(scope: MTLBarrierScope)
    func useResource(_ resource: any MTLResource, usage: MTLResourceUsage)
}

extension MTLComputeCommandEncoder {
    /// The Swift overlay's array form. A barrier over specific resources is at least as strong as
    /// the resources it names, and the simulator runs dispatches in order, so it is a buffer barrier.
    public func memoryBarrier(resources: [any MTLResource]) {
        memoryBarrier(scope: .buffers)
    }
}

public protocol MTLEvent: NSObjectProtocol {}

public protocol MTLSharedEvent: MTLEvent {
    var signaledValue: UInt64 { get set }
    func wait(untilSignaledValue value: UInt64, timeoutMS milliseconds: UInt64) -> Bool
}
