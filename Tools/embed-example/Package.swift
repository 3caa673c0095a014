// swift-tools-version: 6.0
import Foundation
import PackageDescription

// The engine by path (the checkout this folder is in), or by version as a
// packager takes it: ENGINE_URL names its git repository and ENGINE_VERSION
// the release to build against. SwiftPM names a dependency after its
// folder or the URL's last component, which differ between clones.
let environment = ProcessInfo.processInfo.environment
let engine: Package.Dependency
let engineName: String
if let url = environment["ENGINE_URL"], let version = environment["ENGINE_VERSION"] {
    engine = .package(url: url, from: Version(stringLiteral: version))
    engineName = URL(fileURLWithPath: url).deletingPathExtension().lastPathComponent.lowercased()
} else {
    let checkout = URL(fileURLWithPath: Context.packageDirectory).appendingPathComponent("../..").standardizedFileURL
    engine = .package(path: checkout.path)
    engineName = checkout.lastPathComponent.lowercased()
}

let package = Package(
    name: "EmbedExample",
    dependencies: [engine],
    targets: [
        .executableTarget(name: "EmbedExample", dependencies: [.product(name: "Engine", package: engineName)]),
    ]
)
