import ArgumentParser
import Control
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
        abstract: "Render voice-room scenes offline, and steer a running roomd.",
        subcommands: [Render.self, ProcessVoice.self, Status.self, Load.self, Add.self, Remove.self, SetProperty.self, Move.self, Moves.self, Listener.self, Turn.self, Gain.self,
                      Play.self, Stop.self, Duck.self, Mute.self, Aec.self, Route.self, Mic.self, Sink.self, Prompt.self,
                      Events.self, Save.self, Talkers.self, Talker.self, Ptt.self]
    )

    /// Runs the command; usage errors exit with 2, like scene validation errors.
    static func main() {
        Console.start()
        do {
            var command = try parseAsRoot()
            try command.run()
        } catch {
            if exitCode(for: error) == .validationFailure {
                Console.error(fullMessage(for: error))
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

extension MemoryBudget: ExpressibleByArgument {
    public init?(argument: String) { self.init(parsing: argument) }
}

extension RouteChange: ExpressibleByArgument {
    /// `SECONDS:ROUTE`, e.g. `5:speakers`.
    public init?(argument: String) {
        let parts = argument.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, let seconds = Double(parts[0]), seconds.isFinite, seconds > 0,
              let route = OutputRoute(rawValue: parts[1]) else { return nil }
        self.init(seconds: seconds, route: route)
    }
}

extension PromptTrigger: ExpressibleByArgument {
    /// `SECONDS:ID`, e.g. `3.5:welcome`.
    public init?(argument: String) {
        let parts = argument.split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, let seconds = Double(parts[0]), seconds.isFinite, seconds >= 0, !parts[1].isEmpty else { return nil }
        self.init(seconds: seconds, id: parts[1])
    }
}
