import ArgumentParser
import Foundation

/// Mouth-to-ear latency over Mumble on loopback, both ways, measured by
/// `Tools/network-latency.py`: a release roomd on a private PulseAudio
/// with null sinks and an independent pymumble peer in one channel of a
/// private murmurd. It needs a real sound server, server and peer, so it is
/// a script that starts them, and this runs it.
struct NetworkLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "network-latency",
        abstract: "Mouth-to-ear latency from roomd's microphone to a pymumble peer on loopback, and from the peer to roomd's output.",
        discussion: """
            Runs Tools/network-latency.py, which starts PulseAudio with null sinks, murmurd and the pymumble peer \
            (Tools/mumble-peer-setup.sh makes its venv), plays markers into roomd's microphone and from the peer, and \
            times their onsets by the sinks' clocks. Targets: the uplink within 60 ms, the downlink within 60 ms plus \
            the talker's jitter-buffer delay. Build roomd and scenectl in release first.
            """
    )

    @Option(help: "Markers each way.")
    var trials = 10

    @Option(help: "Where roomd and scenectl are.")
    var build = ".build/release"

    @Option(help: "Also write the JSON result to this file (a new file: an existing one is not replaced).")
    var json: String?

    func validate() throws {
        guard (1...100).contains(trials) else { throw ValidationError("--trials must be between 1 and 100") }
        guard FileManager.default.isExecutableFile(atPath: Self.script) else {
            throw ValidationError("\(Self.script): not here; run roombench from the repository's top folder")
        }
        for tool in ["roomd", "scenectl"] where !FileManager.default.isExecutableFile(atPath: build + "/" + tool) {
            throw ValidationError("--build \(build): no \(tool) there (swift build -c release --product roomd, then --product scenectl)")
        }
        if let json, FileManager.default.fileExists(atPath: json) {
            throw ValidationError("--json \(json): the file exists; give a new one")
        }
    }

    func run() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", Self.script, "--trials", String(trials), "--build", build] + (json.map { ["--json", $0] } ?? [])
        try process.run()
        process.waitUntilExit()
        if process.terminationStatus != 0 { throw ExitCode(process.terminationStatus) }
    }

    static let script = "Tools/network-latency.py"
}
