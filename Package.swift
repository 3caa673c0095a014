// swift-tools-version: 6.0
import PackageDescription

/// One system-library target per C library, each found through pkg-config
/// and installable from Debian's -dev package.
func systemLibrary(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, path: "Sources/\(name)", pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
    name: "RoomAudio",
    platforms: [.macOS(.v13)],
    products: [
        .executable(name: "scenectl", targets: ["scenectl"]),
        .executable(name: "roombench", targets: ["roombench"]),
        .executable(name: "roomd", targets: ["roomd"]),
        .library(name: "Engine", targets: ["Engine"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-protobuf", from: "1.39.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
    ],
    targets: [
        systemLibrary("COpenAL", pkgConfig: "openal", apt: ["libopenal-dev", "libopenal-data"]),
        systemLibrary("CPulse", pkgConfig: "libpulse", apt: ["libpulse-dev"]),
        systemLibrary("CSpeexDSP", pkgConfig: "speexdsp", apt: ["libspeexdsp-dev"]),
        systemLibrary("CSndFile", pkgConfig: "sndfile", apt: ["libsndfile1-dev"]),
        systemLibrary("COpus", pkgConfig: "opus", apt: ["libopus-dev"]),

        .target(name: "AudioCore"),
        /// Counts the process's heap allocations, for the benchmarks' real-time checks.
        .target(name: "CAllocationCounter"),
        /// The crowd's and the field's innermost loops, compiled for AVX2 where the processor has it.
        .target(name: "CMixKernels"),
        .target(name: "Spatial", dependencies: ["COpenAL", "AudioCore"]),
        .target(name: "Devices", dependencies: ["CPulse", "CSndFile", "CSpeexDSP", "AudioCore"]),
        .target(name: "Scene", dependencies: ["AudioCore", .product(name: "Yams", package: "Yams")]),
        .target(name: "Voice", dependencies: ["CSpeexDSP", "AudioCore"]),
        .target(name: "Engine", dependencies: ["AudioCore", "Spatial", "Devices", "Scene", "Voice", "CMixKernels"]),
        .target(name: "Control", dependencies: ["Engine",
                                                .product(name: "NIOCore", package: "swift-nio"),
                                                .product(name: "NIOPosix", package: "swift-nio")],
                // The protocol's reference, kept beside the code that speaks it.
                exclude: ["protocol.schema.json", "PROTOCOL.md"]),
        /// The room as a Mumble client: the TLS control channel, voice in its
        /// tunnel, Opus, and remote players as talkers of the live session.
        .target(name: "Network", dependencies: ["Engine", "Scene", "AudioCore", "COpus", "CSpeexDSP",
                                                .product(name: "NIOCore", package: "swift-nio"),
                                                .product(name: "NIOPosix", package: "swift-nio"),
                                                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                                                .product(name: "SwiftProtobuf", package: "swift-protobuf"),
                                                .product(name: "Crypto", package: "swift-crypto")],
                // The messages' source; Tools/generate-mumble-proto.sh makes Mumble.pb.swift from it.
                exclude: ["Mumble.proto"]),
        .executableTarget(
            name: "roomd",
            dependencies: [
                "Control", "Engine", "Devices", "Network",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        .executableTarget(
            name: "scenectl",
            dependencies: [
                "Engine", "Control",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "roombench",
            dependencies: ["Engine", "Voice", "Control", "Network", "CAllocationCounter", "AudioMeasurements",
                           .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),

        .target(name: "AudioMeasurements", dependencies: ["AudioCore"], path: "Tests/AudioMeasurements"),
        .testTarget(name: "AudioCoreTests", dependencies: ["AudioCore", "AudioMeasurements"]),
        .testTarget(name: "DevicesTests", dependencies: ["Devices", "AudioMeasurements"]),
        .testTarget(name: "SceneTests", dependencies: ["Scene", "Engine"]),
        .testTarget(name: "VoiceTests", dependencies: ["Voice", "Devices", "AudioMeasurements"]),
        .testTarget(name: "EngineTests", dependencies: ["Engine", "Devices", "Voice", "AudioMeasurements"]),
        .testTarget(name: "ScenectlTests", dependencies: ["scenectl", "AudioMeasurements", "Devices"]),
        .testTarget(name: "NetworkTests", dependencies: ["Network", "Engine", "AudioMeasurements"]),
        .testTarget(name: "RoomdTests", dependencies: ["roomd", "scenectl", "Control", "AudioMeasurements", "Devices"]),
    ]
)
