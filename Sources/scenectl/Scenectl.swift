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
        var command: ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            if exitCode(for: error) == .validationFailure {
                Console.error(fullMessage(for: error))
                Foundation.exit(ExitStatus.usage)
            }
            exit(withError: error)
        }
        do {
            try command.run()
        } catch {
            // The command line parsed, but what it names cannot be done: the
            // reason, without the root command's usage, which would mislead.
            if exitCode(for: error) == .validationFailure {
                Console.error("Error: " + message(for: error))
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

extension RouteChange {
    /// `SECONDS:ROUTE`, e.g. `5:speakers`.
    static func parse(_ argument: String) throws -> RouteChange {
        let (seconds, time, name) = try TimedArgument.split(argument, form: "SECONDS:ROUTE", example: "5:speakers")
        // A change before the second sample would be the starting route.
        guard Room.frame(atSeconds: seconds) >= 1 else {
            throw ValidationError("a route at \(time) s is the starting route: give it as --route")
        }
        guard let route = OutputRoute(rawValue: name) else {
            throw ValidationError("\"\(name)\" is not a route; the routes are \(OutputRoute.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return RouteChange(seconds: seconds, route: route)
    }
}

extension PromptTrigger {
    /// `SECONDS:ID`, e.g. `3.5:welcome`.
    static func parse(_ argument: String) throws -> PromptTrigger {
        let (seconds, _, id) = try TimedArgument.split(argument, form: "SECONDS:PROMPT", example: "3.5:welcome")
        return PromptTrigger(seconds: seconds, id: id)
    }
}

/// An option that acts at a time on the room's timeline: `SECONDS:VALUE`.
enum TimedArgument {
    /// The time, as a number and as written, and the value.
    static func split(_ argument: String, form: String, example: String) throws -> (seconds: Double, time: String, value: String) {
        let parts = argument.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 2, !parts[1].isEmpty else {
            throw ValidationError("expected \(form), such as \(example)")
        }
        guard let seconds = decimal(parts[0]), seconds >= 0 else {
            throw ValidationError("\"\(parts[0])\" is not a time: expected seconds on the room's timeline, 0 or more")
        }
        // Checked here, before any frame is counted from it: 2e14 s of frames is more than an Int holds.
        guard seconds <= SceneDescription.longestDuration else {
            throw ValidationError("\"\(parts[0])\" is later than any render reaches (\(Int(SceneDescription.longestDuration)) s)")
        }
        return (seconds, parts[0], parts[1])
    }

    /// A decimal number as a person writes one (`90`, `2.5`, `1e3`); infinite past a double's range
    /// (`1e309`), for a range check to refuse. `Double(_:)` also reads hexadecimal (`0x1p3`), `nan` and
    /// `inf`, which a refusal would then show in another form. Checked character by character, in time
    /// linear in the text's length.
    static func decimal(_ text: String) -> Double? {
        // Digits, signs, points and exponents never read as NaN.
        guard text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || "+-.eE".utf8.contains($0) }) else {
            return nil
        }
        return Double(text)
    }
}
