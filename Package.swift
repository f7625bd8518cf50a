// swift-tools-version:6.0
// metalgrad's native runtime: a C-ABI dynamic library over Metal.
//
// On macOS the runtime imports Metal. On Linux (where no Apple GPU exists) it imports MetalShim,
// which declares the same Metal API subset (docs/metal-swift-api-subset in ../shared/reference)
// and executes kernels on the MSL CPU simulator (MSLSim).
import PackageDescription

#if os(macOS)
var products: [Product] = [
    .library(name: "MetalGradRuntime", type: .dynamic, targets: ["MetalGradRuntime"]),
]
#else
// MGCpu joins the dylib through the product, not as a dependency of MetalGradRuntime: no Swift code
// imports it (TypeScript calls mg_cpu_* directly), and a target dependency made the runtime's Swift
// compile wait for every MGCpu unit (the two ISA units are the longest), serialising the build's end.
var products: [Product] = [
    .library(name: "MetalGradRuntime", type: .dynamic, targets: ["MetalGradRuntime", "MGCpu"]),
]
#endif
var dependencies: [Package.Dependency] = []
var targets: [Target] = []

// The native CPU kernels (C++, C ABI mg_cpu_*), linked into the runtime dylib and called from
// TypeScript through bun:ffi. No -march: AVX2/FMA kernels are a separate TU with target attributes,
// chosen at run time. Contraction stays explicit (FMA only where the kernels ask for it) so results
// do not depend on the compiler's choices; buffers are dtype-erased memory (no strict aliasing); only
// the mg_cpu_* entry points are exported.
let cpuKernels: Target = .target(
    name: "MGCpu",
    path: "Sources/MGCpu",
    cxxSettings: [
        .headerSearchPath("."),
        .unsafeFlags(["-ffp-contract=off", "-fno-math-errno", "-fno-strict-aliasing", "-fvisibility=hidden", "-Wall", "-Wextra",
                      "-Wno-psabi"]),
    ]
)

// Release builds check exclusive access statically only: the dynamic checks on class properties
// were a fifth of the instructions of submitting a batch (callgrind, mg_batch_submit; every buffer
// call pays them too). Debug builds keep them.
let releaseExclusivity: SwiftSetting = .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release))

#if os(macOS)
// The command-line tool needs swift-argument-parser, which only machines with network access can
// fetch; Linux machines here cannot, and the library itself depends on nothing outside the toolchain.
// Pinned exactly instead of by a committed Package.resolved: the Linux manifest has no dependencies,
// and SwiftPM deletes a Package.resolved it does not need there.
dependencies.append(.package(url: "https://github.com/apple/swift-argument-parser", exact: "1.5.0"))
targets.append(cpuKernels)
targets.append(
    .target(
        name: "MetalGradRuntime",
        dependencies: ["MGCpu"],
        path: "Sources/MetalGradRuntime",
        swiftSettings: [.swiftLanguageMode(.v6), releaseExclusivity],
        // CoreGraphics: MTLCreateSystemDefaultDevice returns nil in command-line processes without it.
        // Accelerate: the CPU device's BLAS (MGCpu's cblas_sgemm/dgemm).
        linkerSettings: [
            .linkedFramework("Metal"), .linkedFramework("Foundation"), .linkedFramework("CoreGraphics"),
            .linkedFramework("Accelerate"),
        ]
    )
)
targets.append(
    .executableTarget(
        name: "metalgrad-tool",
        dependencies: [
            "MetalGradRuntime",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ],
        path: "Sources/metalgrad-tool",
        swiftSettings: [.swiftLanguageMode(.v6)]
    )
)
products.append(.executable(name: "metalgrad-tool", targets: ["metalgrad-tool"]))
#else
// Link the Swift runtime and Foundation statically so the dylib loads into Bun without the
// toolchain's shared libraries on the library path. lld is used because GNU ld prints a
// warning for glibc's mktemp reference inside the static Foundation archive.
let staticSwift: [LinkerSetting] = [
    .unsafeFlags(["-static-stdlib", "-use-ld=lld", "-Xlinker", "--exclude-libs", "-Xlinker", "ALL"]),
    .linkedLibrary("CoreFoundation"),
    .linkedLibrary("_FoundationICU"),
    .linkedLibrary("_FoundationCShims"),
    .linkedLibrary("_FoundationCollections"),
    .linkedLibrary("FoundationEssentials"),
    .linkedLibrary("FoundationInternationalization"),
    .linkedLibrary("swiftSynchronization"),
    .linkedLibrary("dl"),
]
targets.append(contentsOf: [
    cpuKernels,
    // The MSL CPU simulator: translator, compiler driver, on-disk cache, dispatcher and prelude.
    .target(
        name: "MSLSim",
        path: "Sources/MSLSim",
        exclude: ["prelude"],
        cSettings: [.headerSearchPath(".")],
        cxxSettings: [.headerSearchPath(".")]
    ),
    // The Metal API subset, executing on MSLSim.
    .target(
        name: "MetalShim",
        dependencies: ["MSLSim"],
        path: "Sources/MetalShim",
        swiftSettings: [.swiftLanguageMode(.v6), releaseExclusivity]
    ),
    .target(
        name: "MetalGradRuntime",
        dependencies: ["MetalShim", "MSLSim"],
        path: "Sources/MetalGradRuntime",
        swiftSettings: [.swiftLanguageMode(.v6), releaseExclusivity],
        linkerSettings: staticSwift
    ),
])
#endif

let package = Package(
    name: "metalgrad",
    platforms: [.macOS(.v14)],
    products: products,
    dependencies: dependencies,
    targets: targets,
    cLanguageStandard: .c2x,
    cxxLanguageStandard: .cxx20
)
