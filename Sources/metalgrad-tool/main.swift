// metalgrad-tool: device facts and compile checks through the runtime's own C ABI, so what it
// reports is exactly what metalgrad sees. macOS only (it needs swift-argument-parser).
import ArgumentParser
import Foundation
import MetalGradRuntime

struct ToolError: Error, CustomStringConvertible {
    let description: String
}

/// The runtime's last error on this thread.
func lastError() -> ToolError {
    ToolError(description: String(cString: mg_last_error()))
}

@main
struct MetalgradTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "metalgrad-tool",
        abstract: "Device facts and Metal compile checks for metalgrad's native runtime.",
        subcommands: [Info.self, Compile.self]
    )
}

struct Info: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the device facts as JSON.")

    func run() throws {
        guard let json = mg_device_info_json() else { throw lastError() }
        print(String(cString: json))
    }
}

struct Compile: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compile a .metal source file and list its kernels, or print the compiler's errors.")

    @Argument(help: "The Metal source file.")
    var file: String

    @Option(help: "Math mode: safe, relaxed or fast.")
    var mathMode: String = "safe"

    @Option(name: .customLong("define"), help: "A preprocessor macro, NAME or NAME=VALUE (repeatable).")
    var defines: [String] = []

    func run() throws {
        let modes: [String: Int32] = ["safe": 0, "relaxed": 1, "fast": 2]
        guard let mode = modes[mathMode] else {
            throw ValidationError("--math-mode must be safe, relaxed or fast")
        }
        let source = try String(contentsOfFile: file, encoding: .utf8)
        let macros = defines.joined(separator: "\n")
        let library = source.withCString { sourcePointer in
            macros.withCString { macroPointer in
                mg_library_new(sourcePointer, defines.isEmpty ? nil : macroPointer, mode, 0, 0)
            }
        }
        guard let library else { throw lastError() }
        guard let names = mg_library_function_names_json(library) else { throw lastError() }
        print("\(file): compiled; kernels: \(String(cString: names))")
    }
}
