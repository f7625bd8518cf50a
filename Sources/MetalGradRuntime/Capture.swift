// GPU capture to a .gputrace document (Xcode opens it). Metal only allows it when the process runs
// with MTL_CAPTURE_ENABLED=1; the simulator has no GPU to capture.
#if canImport(Metal)
import Metal
#else
import MetalShim
#endif
import Foundation

extension Runtime {
    func startCapture(path: String) throws {
        guard !runningOnSimulator else {
            throw RuntimeError("GPU capture is not supported on the Metal simulator (it needs a Mac with Metal)")
        }
        guard path.hasSuffix(".gputrace") else {
            throw RuntimeError("the capture path must end in .gputrace, got '\(path)'")
        }
        let manager = MTLCaptureManager.shared()
        guard !manager.isCapturing else { throw RuntimeError("a GPU capture is already running") }
        guard manager.supportsDestination(.gpuTraceDocument) else {
            throw RuntimeError("capturing to a .gputrace document is disabled: run the process with MTL_CAPTURE_ENABLED=1")
        }
        guard !FileManager.default.fileExists(atPath: path) else {
            throw RuntimeError("'\(path)' already exists; Metal will not overwrite a capture")
        }
        let descriptor = MTLCaptureDescriptor()
        descriptor.captureObject = device.device
        descriptor.destination = .gpuTraceDocument
        descriptor.outputURL = URL(fileURLWithPath: path)
        do {
            try manager.startCapture(with: descriptor)
        } catch {
            throw RuntimeError("Metal refused to start the capture: \(describeError(error))")
        }
    }

    func stopCapture() throws {
        guard !runningOnSimulator else {
            throw RuntimeError("GPU capture is not supported on the Metal simulator (it needs a Mac with Metal)")
        }
        let manager = MTLCaptureManager.shared()
        guard manager.isCapturing else { throw RuntimeError("no GPU capture is running") }
        manager.stopCapture()
    }
}
