import ArgumentParser
import Devices
import Engine
import Foundation
import Logging
import Scene
import Spatial

@main
struct Scenectl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenectl",
        abstract: "Load, check and render voice-room scenes.",
        subcommands: [Render.self]
    )

    /// Runs the command; usage errors exit with 2, like scene validation errors.
    static func main() {
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                FileHandle.standardError.write(Data((fullMessage(for: error) + "\n").utf8))
                Foundation.exit(ExitStatus.usage)
            }
            exit(withError: error)
        }
    }
}

enum ExitStatus {
    /// A usage error, or a scene that failed validation.
    static let usage: Int32 = 2
}

extension OutputRoute: ExpressibleByArgument {}
extension AudioFileFormat: ExpressibleByArgument {}
