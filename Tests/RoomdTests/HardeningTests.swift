import AudioMeasurements
import Devices
import Foundation
import Testing

/// roomd and scenectl against hostile and unlucky use: signals, the
/// socket's place, a second daemon, a closed standard output, huge answers.
/// Each case checks the exit status, the message, and every file involved.
struct HardeningTests {
    /// SIGTERM, SIGINT and SIGHUP each stop roomd within a second while it
    /// records: it exits 0, its socket is gone, and each WAV it wrote says
    /// in its header exactly what it holds.
    @Test(arguments: ["SIGTERM", "SIGINT", "SIGHUP"])
    func aSignalStopsRoomdCleanlyWithARecordingOpen(_ name: String) throws {
        let number = ["SIGTERM": SIGTERM, "SIGINT": SIGINT, "SIGHUP": SIGHUP][name]!
        let daemon = try RoomDaemon()
        let recording = daemon.folder + "/recording.wav"
        let answer = try RawClient(path: daemon.socket).request(#"{"v":1,"verb":"sink","args":{"record":"\#(recording)"}}"#)
        #expect(answer["ok"] as? Bool == true, "\(answer)")
        // Half a second of audio recorded, by the file's own size.
        let deadline = Date().addingTimeInterval(10)
        while (WAVFile(recording)?.bytesSeconds ?? 0) < 0.5 && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let start = Date()
        daemon.child.signal(number)
        let status = daemon.child.wait()
        let took = Date().timeIntervalSince(start)
        print("roomd stopped on \(name) in \(took * 1000) ms, status \(status)")
        #expect(status == 0)
        #expect(took < 1)
        #expect(!FileManager.default.fileExists(atPath: daemon.socket), "the socket is removed")
        for file in [recording, daemon.folder + "/room.wav"] {
            let wav = try #require(WAVFile(file), "\(file) reads as a WAV")
            #expect(wav.headerSeconds == wav.bytesSeconds && wav.headerSeconds >= 0.5, "\(file): header \(wav.headerSeconds) s, data \(wav.bytesSeconds) s")
        }
        let said = try String(contentsOfFile: daemon.folder + "/roomd.out", encoding: .utf8)
        #expect(said.contains("roomd: stopped on \(name)"), "\(said)")
    }

    /// A second roomd on the socket of a running one refuses to start and
    /// says who is there; the first plays on, reachable.
    @Test func aSecondRoomdOnTheSameSocketIsRefused() throws {
        let daemon = try RoomDaemon()
        let second = try ChildProcess.spawn(LiveRoom.product("roomd"), [daemon.scene, "--socket", daemon.socket, "--output", daemon.folder + "/second.wav"],
                                            environment: daemon.environment, errors: daemon.folder + "/second.err")
        #expect(second.wait() == 1)
        let said = try String(contentsOfFile: daemon.folder + "/second.err", encoding: .utf8)
        #expect(said.contains("roomd already runs at \(daemon.socket), pid \(daemon.child.pid)"), "\(said)")
        #expect(!FileManager.default.fileExists(atPath: daemon.folder + "/second.wav"), "it played nothing")
        #expect(try RawClient(path: daemon.socket).request(#"{"v":1,"verb":"status"}"#)["ok"] as? Bool == true)
    }

    /// A socket nobody listens on is stale and replaced; a file that is not
    /// a socket is refused and left as it was.
    @Test func aStaleSocketIsReplacedAndAnythingElseIsLeftAlone() throws {
        let folder = try Scratch()
        let scene = try LiveRoom.Scene.tone(at: [-2, 0, 0]).write(into: folder.path)
        let path = folder.path + "/roomd.sock"
        try Self.leaveStaleSocket(at: path)
        let daemon = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--socket", path, "--output", folder.path + "/room.wav"],
                                            environment: folder.environment, output: folder.path + "/roomd.out", errors: folder.path + "/roomd.err")
        let deadline = Date().addingTimeInterval(10)
        while (try? RawClient(path: path).request(#"{"v":1,"verb":"status"}"#)) == nil && daemon.isRunning && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(try RawClient(path: path).request(#"{"v":1,"verb":"status"}"#)["ok"] as? Bool == true, "roomd took the stale socket's place")
        daemon.signal(SIGTERM)
        #expect(daemon.wait() == 0)

        let precious = folder.path + "/precious"
        try "keep me".write(toFile: precious, atomically: false, encoding: .utf8)
        let refused = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--socket", precious, "--output", folder.path + "/room2.wav"],
                                             environment: folder.environment, errors: folder.path + "/refused.err")
        #expect(refused.wait() == 1)
        let said = try String(contentsOfFile: folder.path + "/refused.err", encoding: .utf8)
        #expect(said.contains("\(precious) is there and is not a socket; not replacing it"), "\(said)")
        #expect(try String(contentsOfFile: precious, encoding: .utf8) == "keep me")
    }

    /// Without a runtime folder, roomd uses /tmp/roomd-UID only if it is a
    /// real folder of the user's own that nobody else may enter. The one
    /// test that touches that folder, so that no other races it.
    @Test func theFallbackSocketFolderMustBeTheUsersOwn() throws {
        let fallback = "/tmp/roomd-\(getuid())"
        try #require(!FileManager.default.fileExists(atPath: fallback), "\(fallback) is in use; this test makes its own")
        defer { try? FileManager.default.removeItem(atPath: fallback) }
        let folder = try Scratch()
        let scene = try LiveRoom.Scene.tone(at: [-2, 0, 0]).write(into: folder.path)
        var environment = folder.environment
        environment["XDG_RUNTIME_DIR"] = nil
        func refusal() throws -> (Int32, String) {
            let child = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--output", folder.path + "/room.wav"],
                                               environment: environment, errors: folder.path + "/roomd.err")
            let status = child.wait()
            return (status, try String(contentsOfFile: folder.path + "/roomd.err", encoding: .utf8))
        }
        // Open to everyone, as another user could have made it first.
        mkdir(fallback, 0o700)
        chmod(fallback, 0o777)
        let (open, openSaid) = try refusal()
        #expect(open == 1 && openSaid.contains("refusing the socket folder \(fallback): its mode is 777"), "\(openSaid)")
        // A symlink to somewhere else.
        rmdir(fallback)
        symlink(folder.path, fallback)
        let (linked, linkedSaid) = try refusal()
        #expect(linked == 1 && linkedSaid.contains("it is not a folder"), "\(linkedSaid)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/roomd.sock"), "nothing was made through the link")
        unlink(fallback)
        // Made first by another user, private to them: refused, naming them, and nothing made in it.
        if OtherUser.canBeMade {
            let other = OtherUser()
            try other.create()
            defer { other.remove() }
            try other.run("/usr/bin/mkdir", ["-m", "700", fallback])
            let (theirs, theirsSaid) = try refusal()
            #expect(theirs == 1 && theirsSaid.contains("refusing the socket folder \(fallback): it belongs to user \(other.uid), not to you (0)"),
                    "\(theirsSaid)")
            #expect(!FileManager.default.fileExists(atPath: fallback + "/roomd.sock"), "nothing was made in their folder")
            rmdir(fallback)
        }
        // Absent: made, mode 700, and the socket in it only the user may open.
        let child = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--output", folder.path + "/room.wav"], environment: environment,
                                           output: folder.path + "/roomd.out", errors: folder.path + "/roomd.err")
        let socket = fallback + "/roomd.sock"
        let deadline = Date().addingTimeInterval(10)
        while (try? RawClient(path: socket).request(#"{"v":1,"verb":"status"}"#)) == nil && child.isRunning && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        var info = stat()
        #expect(lstat(fallback, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR && info.st_mode & 0o777 == 0o700)
        #expect(lstat(socket, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK && info.st_mode & 0o777 == 0o600,
                "socket mode \(String(info.st_mode & 0o777, radix: 8))")
        child.signal(SIGTERM)
        #expect(child.wait() == 0)
    }

    /// Another user on the box, made for the test and removed after, is
    /// told permission denied at the daemon's socket, not that no daemon runs.
    @Test(.enabled(if: OtherUser.canBeMade, "needs root and useradd"))
    func anotherUserCannotReachTheSocket() throws {
        let other = OtherUser()
        try other.create()
        defer { other.remove() }
        let folder = try Scratch()
        chmod(folder.path, 0o755)
        // The daemon's own socket, reached by the other user's client.
        let daemon = try RoomDaemon()
        chmod(daemon.folder, 0o755)
        // A copy the other user may run. Written close-on-exec: a daemon another test spawns
        // meanwhile must not inherit it open for writing, or running it fails as "text file busy".
        let client = folder.path + "/scenectl"
        let program = try [UInt8](Data(contentsOf: URL(fileURLWithPath: LiveRoom.product("scenectl"))))
        let copy = open(client, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        try #require(copy >= 0, "cannot write \(client): \(String(cString: strerror(errno)))")
        let written = program.withUnsafeBytes { write(copy, $0.baseAddress, $0.count) }
        close(copy)
        try #require(written == program.count, "wrote \(written) of \(program.count) bytes of \(client)")
        let output = folder.path + "/other.err"
        let status = try other.run(client, ["status", "--socket", daemon.socket], errors: output)
        let otherSaid = try String(contentsOfFile: output, encoding: .utf8)
        #expect(status == 1 && otherSaid.contains("permission denied: \(daemon.socket) belongs to another user"), "\(status): \(otherSaid)")
        #expect(try RawClient(path: daemon.socket).request(#"{"v":1,"verb":"status"}"#)["ok"] as? Bool == true, "the daemon's own user reaches it")
    }

    /// Its standard output closed (`roomd | head -1`), roomd plays on,
    /// answers, says once on standard error what failed, and stops cleanly.
    @Test func aClosedStandardOutputStopsNothing() throws {
        let folder = try Scratch()
        let scene = try LiveRoom.Scene.tone(at: [-2, 0, 0]).write(into: folder.path)
        let pipe = folder.path + "/stdout"
        mkfifo(pipe, 0o600)
        let reader = open(pipe, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        let socket = folder.path + "/roomd.sock"
        let child = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--socket", socket, "--output", folder.path + "/room.wav"],
                                           environment: folder.environment, output: pipe, errors: folder.path + "/roomd.err")
        // Its first line arrives, then the reader goes, as head does.
        var byte: UInt8 = 0
        let deadline = Date().addingTimeInterval(10)
        while read(reader, &byte, 1) != 1 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        close(reader)
        while (try? RawClient(path: socket).request(#"{"v":1,"verb":"status"}"#)) == nil && child.isRunning && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        for _ in 0..<3 {
            #expect(try RawClient(path: socket).request(#"{"v":1,"verb":"status"}"#)["ok"] as? Bool == true)
        }
        child.signal(SIGTERM)
        #expect(child.wait() == 0)
        let said = try String(contentsOfFile: folder.path + "/roomd.err", encoding: .utf8)
        #expect(said.components(separatedBy: "standard output failed (Broken pipe); going on without it").count == 2, "said once: \(said)")
    }

    /// scenectl reads an answer of any size: a status of 10,000 sources,
    /// about 1.5 MB on one line.
    @Test func theClientReadsAnAnswerOfAnySize() throws {
        let folder = try Scratch()
        let socket = folder.path + "/big.sock"
        let sources = (0..<10_000).map { #"{"id":"s\#($0)","mode":"point","category":"scene","gain":0,"playing":true,"algorithm":"hrtf","position":[1,0,-2]}"# }
        let answer = #"{"v":1,"ok":true,"result":{"scene":"big","sources":["# + sources.joined(separator: ",") + "]}}\n"
        let server = try OneAnswerServer(path: socket, answer: answer)
        let output = folder.path + "/status.json"
        let child = try ChildProcess.spawn(LiveRoom.product("scenectl"), ["status", "--socket", socket, "--json"], environment: folder.environment,
                                           output: output, errors: folder.path + "/scenectl.err")
        #expect(child.wait() == 0, "\((try? String(contentsOfFile: folder.path + "/scenectl.err", encoding: .utf8)) ?? "")")
        server.finish()
        let data = try Data(contentsOf: URL(fileURLWithPath: output))
        let status = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        print("an answer of \(answer.utf8.count) bytes read whole")
        #expect((status?["sources"] as? [Any])?.count == 10_000)
    }

    /// Outputs are written the one way: a device stays a device, a symlink
    /// is followed and stays, a file keeps its mode, and no output may be
    /// a file the room reads.
    @Test func renderOutputsKeepWhatTheyAre() throws {
        let folder = try Scratch()
        let scene = try LiveRoom.Scene.tone(at: [-2, 0, 0]).write(into: folder.path)
        func scenectl(_ arguments: [String]) throws -> (Int32, String) {
            let child = try ChildProcess.spawn(LiveRoom.product("scenectl"), arguments, environment: folder.environment,
                                               output: folder.path + "/scenectl.out", errors: folder.path + "/scenectl.err")
            let status = child.wait()
            return (status, try String(contentsOfFile: folder.path + "/scenectl.err", encoding: .utf8))
        }
        // A null device made here, so a mistake cannot replace the system's.
        let device = folder.path + "/null"
        try #require(mknod(device, S_IFCHR | 0o666, Self.nullDevice) == 0, "mknod: \(String(cString: strerror(errno)))")
        let real = folder.path + "/events.jsonl", link = folder.path + "/events-link"
        try "old\n".write(toFile: real, atomically: false, encoding: .utf8)
        chmod(real, 0o600)
        symlink(real, link)
        let (toDevice, _) = try scenectl(["render", scene, "--out", folder.path + "/a.wav", "--seconds", "0.5", "--events", device])
        let (throughLink, _) = try scenectl(["render", scene, "--out", folder.path + "/b.wav", "--seconds", "0.5", "--events", link])
        #expect(toDevice == 0 && throughLink == 0)
        var info = stat()
        #expect(lstat(device, &info) == 0 && info.st_mode & S_IFMT == S_IFCHR, "the device is still a device")
        #expect(lstat(link, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK, "the symlink is still a symlink")
        #expect(stat(real, &info) == 0 && info.st_mode & 0o777 == 0o600, "the file keeps its mode")
        let written = try String(contentsOfFile: real, encoding: .utf8)
        // The tone room has no events to write: what the link named was replaced by them, none.
        #expect(written.isEmpty, "the events went through the link: \(written.prefix(80))")

        // Over the room's own audio: a usage error naming both, the asset untouched.
        let asset = folder.path + "/tone.wav"
        let before = try Data(contentsOf: URL(fileURLWithPath: asset))
        let (overAsset, said) = try scenectl(["render", scene, "--out", asset, "--seconds", "0.5"])
        #expect(overAsset == 2 && said.contains(asset) && said.contains("one of the room's own inputs"), "\(said)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: asset)) == before)

        // roomd's uplink over its own scene.
        let roomd = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--socket", folder.path + "/r.sock", "--uplink", scene],
                                           environment: folder.environment, errors: folder.path + "/roomd.err")
        #expect(roomd.wait() == 2)
        let roomdSaid = try String(contentsOfFile: folder.path + "/roomd.err", encoding: .utf8)
        #expect(roomdSaid.contains("--uplink \(scene): it is one of the room's own inputs"), "\(roomdSaid)")
        #expect(try String(contentsOfFile: scene, encoding: .utf8).hasPrefix("version: 1"))

        // A recording into a FIFO would wait for a reader before the room plays: a usage error.
        let fifo = folder.path + "/fifo"
        mkfifo(fifo, 0o600)
        let piped = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--socket", folder.path + "/r.sock", "--uplink", fifo],
                                           environment: folder.environment, errors: folder.path + "/piped.err")
        #expect(piped.wait() == 2)
        let pipedSaid = try String(contentsOfFile: folder.path + "/piped.err", encoding: .utf8)
        #expect(pipedSaid.contains("--uplink \(fifo): a named pipe or a socket; a recording needs a file or a device"), "\(pipedSaid)")

        // Two recordings into one file would write over each other.
        let twice = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--socket", folder.path + "/r.sock", "--output", folder.path + "/same.wav",
                                                                      "--uplink", folder.path + "/./same.wav"],
                                           environment: folder.environment, errors: folder.path + "/twice.err")
        #expect(twice.wait() == 2)
        let twiceSaid = try String(contentsOfFile: folder.path + "/twice.err", encoding: .utf8)
        #expect(twiceSaid.contains("--uplink \(folder.path)/./same.wav is also the --output file"), "\(twiceSaid)")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/same.wav"))

        // A socket that cannot be made stops roomd before any recording replaces a file.
        let kept = folder.path + "/kept.wav"
        try "old".write(toFile: kept, atomically: false, encoding: .utf8)
        let long = folder.path + "/" + String(repeating: "s", count: 120) + ".sock"
        for (socket, said) in [(folder.path + "/no-folder/r.sock", "no-folder: No such file or directory"),
                               (long, "a socket's path holds at most 107")] {
            let refused = try ChildProcess.spawn(LiveRoom.product("roomd"), [scene, "--socket", socket, "--output", kept],
                                                 environment: folder.environment, errors: folder.path + "/socket.err")
            #expect(refused.wait() == 2)
            let refusedSaid = try String(contentsOfFile: folder.path + "/socket.err", encoding: .utf8)
            #expect(refusedSaid.contains(said) && refusedSaid.contains(socket), "\(refusedSaid)")
            #expect(try String(contentsOfFile: kept, encoding: .utf8) == "old")
        }
    }

    /// An interrupted render leaves nothing under the asked name, and no temporary file.
    @Test func anInterruptedRenderLeavesNoHalfFile() throws {
        let folder = try Scratch()
        let scene = try LiveRoom.Scene.tone(at: [-2, 0, 0]).write(into: folder.path)
        let out = folder.path + "/long.wav"
        let child = try ChildProcess.spawn(LiveRoom.product("scenectl"), ["render", scene, "--out", out, "--seconds", "3000"],
                                           environment: folder.environment, errors: folder.path + "/scenectl.err")
        // Interrupted once it has written a second of audio under its temporary name.
        let deadline = Date().addingTimeInterval(20)
        func temporaries() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasPrefix(".long.wav.") }
        }
        while (temporaries().first.map { (try? FileManager.default.attributesOfItem(atPath: folder.path + "/" + $0)[.size] as? Int) ?? 0 } ?? 0)
                < 400_000 && child.isRunning && Date() < deadline {
            Thread.sleep(forTimeInterval: 0.02)
        }
        #expect(!temporaries().isEmpty, "the render writes under a temporary name")
        child.signal(SIGINT)
        #expect(child.wait() == 128 + SIGINT)
        #expect(!FileManager.default.fileExists(atPath: out), "nothing under the asked name")
        #expect(temporaries().isEmpty, "and no temporary file left")
    }

    /// `save` and `sink record` take a new file, or an existing one with
    /// force; never a symlink, a device, or the room's own scene.
    @Test func saveAndRecordTakeOnlyFilesTheyMay() throws {
        let daemon = try RoomDaemon()
        let client = try RawClient(path: daemon.socket)
        func error(_ verb: String, _ args: String) throws -> String? {
            let reply = try client.request(#"{"v":1,"verb":"\#(verb)","args":{\#(args)}}"#)
            return reply["ok"] as? Bool == true ? nil : reply["error"] as? String ?? "refused"
        }
        let existing = daemon.folder + "/existing.yaml"
        try "keep me".write(toFile: existing, atomically: false, encoding: .utf8)
        #expect(try error("save", #""path":"\#(existing)""#)?.contains("it exists; pass --force to replace it") == true)
        #expect(try String(contentsOfFile: existing, encoding: .utf8) == "keep me")
        #expect(try error("save", #""path":"\#(existing)","force":true"#) == nil)
        #expect(try String(contentsOfFile: existing, encoding: .utf8).contains("sources:"))
        let link = daemon.folder + "/link.yaml"
        symlink(existing, link)
        #expect(try error("save", #""path":"\#(link)","force":true"#)?.contains("it is a symlink") == true)
        #expect(try error("save", #""path":"\#(daemon.scene)","force":true"#)?.contains("one of the room's own inputs") == true)
        let device = daemon.folder + "/null"
        try #require(mknod(device, S_IFCHR | 0o666, Self.nullDevice) == 0)
        #expect(try error("sink", #""record":"\#(device)""#)?.contains("a device, a FIFO or a socket") == true)
        #expect(try error("sink", #""record":"\#(existing)""#)?.contains("it exists; pass --force") == true)
        var info = stat()
        #expect(lstat(device, &info) == 0 && info.st_mode & S_IFMT == S_IFCHR)
        #expect(lstat(link, &info) == 0 && info.st_mode & S_IFMT == S_IFLNK)

        // What the room took in while it plays is its input too: a source's audio, the microphone's recording.
        let bell = daemon.folder + "/bell.wav", mic = daemon.folder + "/mic.wav"
        try FileManager.default.copyItem(atPath: daemon.folder + "/tone.wav", toPath: bell)
        try FileManager.default.copyItem(atPath: daemon.folder + "/tone.wav", toPath: mic)
        let before = try Data(contentsOf: URL(fileURLWithPath: bell))
        #expect(try error("add", #""cwd":"/","source":"{id: bell, file: \"\#(bell)\", position: [1, 0, -1]}""#) == nil)
        #expect(try error("mic", #""file":"\#(mic)""#) == nil)
        #expect(try error("sink", #""record":"\#(bell)","force":true"#)?.contains("one of the room's own inputs") == true)
        #expect(try error("save", #""path":"\#(mic)","force":true"#)?.contains("one of the room's own inputs") == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: bell)) == before && Data(contentsOf: URL(fileURLWithPath: mic)) == before)
        // And what it writes: roomd's own recording and log, and the recording under way.
        #expect(try error("sink", #""record":"\#(daemon.folder)/room.wav","force":true"#)?.contains("the room writes it already") == true)
        #expect(try error("save", #""path":"\#(daemon.folder)/protocol.log","force":true"#)?.contains("the room writes it already") == true)
        let take = daemon.folder + "/take.wav"
        #expect(try error("sink", #""record":"\#(take)""#) == nil)
        #expect(try error("save", #""path":"\#(take)","force":true"#)?.contains("the room writes it already") == true)
        #expect(try error("sink", #""record":"default""#) == nil)
        #expect(try String(contentsOfFile: daemon.folder + "/protocol.log", encoding: .utf8).contains("status"))
        // Nor may the room read what it writes, nor take a path it would read differently.
        #expect(try error("mic", #""file":"\#(daemon.folder)/room.wav""#)?.contains("the room writes it as it plays") == true)
        #expect(try error("sink", #""record":"take.wav""#)?.contains("expected an absolute path or default") == true)
        #expect(try error("save", #""path":"\#(daemon.folder)/x\u0000.yaml""#)?.contains("holds a NUL character") == true)
        #expect(!FileManager.default.fileExists(atPath: daemon.folder + "/x"))
    }

    /// `save` keeps what `route` forced and the recording `mic` took: the
    /// room loads again as it played.
    @Test func saveKeepsAForcedRouteAndTheMicrophonesRecording() throws {
        let daemon = try RoomDaemon(scene: .tone(at: [-2, 0, 0], voice: "aec: off"))
        let client = try RawClient(path: daemon.socket)
        let mic = daemon.folder + "/mic.wav", stereo = daemon.folder + "/stereo.wav"
        try FileManager.default.copyItem(atPath: daemon.folder + "/tone.wav", toPath: mic)
        let writer = try AudioFileWriter(path: stereo, format: .wavFloat, channelCount: 2, sampleRate: 48_000)
        try [Float](repeating: 0.1, count: 9_600).withUnsafeBufferPointer { try writer.write(interleaved: $0) }
        try writer.close()
        // A scene's microphone has one channel: taken live, it could not be saved.
        let refused = try client.request(#"{"v":1,"verb":"mic","args":{"file":"\#(stereo)"}}"#)
        #expect((refused["error"] as? String)?.contains("a microphone recording has one channel; this file has 2") == true, "\(refused)")
        for request in [#""verb":"mic","args":{"file":"\#(mic)"}"#, #""verb":"route","args":{"route":"speakers"}"#,
                        #""verb":"save","args":{"path":"\#(daemon.folder)/saved.yaml"}"#] {
            let reply = try client.request("{\"v\":1,\(request)}")
            #expect(reply["ok"] as? Bool == true, "\(request) -> \(reply)")
        }
        let saved = try String(contentsOfFile: daemon.folder + "/saved.yaml", encoding: .utf8)
        #expect(saved.contains("route: speakers") && saved.contains("mic.wav"), "\(saved)")
        let out = daemon.folder + "/render.txt"
        let render = try ChildProcess.spawn(LiveRoom.product("scenectl"),
                                            ["render", daemon.folder + "/saved.yaml", "--out", daemon.folder + "/out.wav", "--seconds", "0.1"],
                                            environment: daemon.environment, output: out, errors: "/dev/null")
        #expect(render.wait() == 0)
        let summary = try String(contentsOfFile: out, encoding: .utf8)
        #expect(summary.contains("route: speakers (scene output.route)") && summary.contains("mic mic.wav"), "\(summary)")
    }

    /// A recording on a disk that fills stops, says why in an event and in
    /// `status`, and the room plays on; the file keeps a header that reads.
    @Test func aFullDiskStopsTheRecordingNotTheRoom() throws {
        let daemon = try RoomDaemon()
        let disk = daemon.folder + "/small-disk"
        mkdir(disk, 0o700)
        let mount = try ChildProcess.spawn("mount", ["-t", "tmpfs", "-o", "size=256k", "tmpfs", disk], environment: daemon.environment)
        try #require(mount.wait() == 0, "a 256 KiB tmpfs to fill (needs root)")
        defer { _ = try? ChildProcess.spawn("umount", [disk], environment: daemon.environment).wait() }
        let events = try RawClient(path: daemon.socket)
        try events.send(Array(#"{"v":1,"verb":"events"}"#.utf8) + [0x0a])
        _ = events.readLine()
        let recording = disk + "/recording.wav"
        let client = try RawClient(path: daemon.socket)
        #expect(try client.request(#"{"v":1,"verb":"sink","args":{"record":"\#(recording)"}}"#)["ok"] as? Bool == true)
        #expect(Self.openFiles(of: daemon.child.pid).contains(recording), "the recording is open while it records")
        // A second of stereo float is 384 KB: the disk is full within one.
        var stoppedEvent: String?
        while stoppedEvent == nil, let line = events.readLine() {
            if line.contains("recordingStopped") { stoppedEvent = line }
        }
        print("on a full disk: \(stoppedEvent ?? "no event")")
        let event = stoppedEvent.flatMap { RawClient.object($0)?["event"] as? [String: Any] }
        #expect(event?["path"] as? String == recording && (event?["reason"] as? String)?.contains("No space left on device") == true)
        let first = try client.request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any]
        #expect((first?["recordingStopped"] as? String)?.isEmpty == false, "status says why: \(first?["recordingStopped"] ?? "nothing")")
        let later = Date().addingTimeInterval(0.3)
        while Date() < later { Thread.sleep(forTimeInterval: 0.05) }
        let second = try client.request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any]
        #expect((second?["time"] as? Double ?? 0) > (first?["time"] as? Double ?? 0) + 0.2, "the room plays on")
        #expect(daemon.child.isRunning)
        let stillOpen = Self.openFiles(of: daemon.child.pid).filter { $0.hasPrefix(disk) }
        #expect(stillOpen.isEmpty, "a stopped recording is closed, not held: \(stillOpen)")
        let wav = WAVFile(recording)
        // Stopped, it is no longer the room's to keep: it may be recorded again.
        #expect(try client.request(#"{"v":1,"verb":"sink","args":{"record":"\#(recording)","force":true}}"#)["ok"] as? Bool == true)
        #expect(wav.map { $0.headerSeconds > 0 && $0.headerSeconds <= $0.bytesSeconds } == true,
                "the header reads: \(wav.map { "\($0.headerSeconds) s of \($0.bytesSeconds) s" } ?? "no WAV")")
    }

    /// A route with other channels than a recording's ends it: the event and
    /// `status` say why, the file is closed whole, and `--output` keeps time
    /// in silence until the route has its channels again.
    @Test func aRouteWithOtherChannelsEndsTheRecording() throws {
        let daemon = try RoomDaemon()
        let events = try RawClient(path: daemon.socket)
        try events.send(Array(#"{"v":1,"verb":"events"}"#.utf8) + [0x0a])
        _ = events.readLine()
        let client = try RawClient(path: daemon.socket)
        let take = daemon.folder + "/take.wav", output = daemon.folder + "/room.wav"
        #expect(try client.request(#"{"v":1,"verb":"route","args":{"route":"headphones"}}"#)["ok"] as? Bool == true)
        #expect(try client.request(#"{"v":1,"verb":"sink","args":{"record":"\#(take)"}}"#)["ok"] as? Bool == true)
        /// Waits up to 10 s for `condition`.
        func eventually(_ condition: () -> Bool) -> Bool {
            let deadline = Date().addingTimeInterval(10)
            while !condition() && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
            return condition()
        }
        #expect(eventually { (WAVFile(take)?.bytesSeconds ?? 0) > 0.1 }, "the recording records")
        let before = try #require(WAVFile(output)).bytesSeconds
        #expect(try client.request(#"{"v":1,"verb":"route","args":{"route":"mono"}}"#)["ok"] as? Bool == true)
        var stoppedEvent: String?
        while stoppedEvent == nil, let line = events.readLine() {
            if line.contains("recordingStopped") { stoppedEvent = line }
        }
        let event = stoppedEvent.flatMap { RawClient.object($0)?["event"] as? [String: Any] }
        #expect(event?["path"] as? String == take && (event?["reason"] as? String) == "the route now has 1 channel and the recording 2 channels",
                "\(stoppedEvent ?? "no event")")
        let status = try client.request(#"{"v":1,"verb":"status"}"#)["result"] as? [String: Any]
        #expect(status?["sink"] as? String == "default" && (status?["recordingStopped"] as? String)?.contains("the route now has 1 channel") == true,
                "\(status ?? [:])")
        #expect(eventually { !Self.openFiles(of: daemon.child.pid).contains(take) }, "the recording is closed")
        let wav = try #require(WAVFile(take))
        #expect(wav.headerSeconds > 0 && wav.headerSeconds == wav.bytesSeconds, "\(wav.headerSeconds) s of \(wav.bytesSeconds) s")
        // The room's own file goes on growing in time while the route is mono.
        #expect(eventually { (WAVFile(output)?.bytesSeconds ?? 0) > before + 0.4 }, "--output grew from \(before) s")
        // A stopped recording no longer holds its name: it may be recorded again.
        #expect(try client.request(#"{"v":1,"verb":"sink","args":{"record":"\#(take)","force":true}}"#)["ok"] as? Bool == true)
    }

    /// The paths of the files process `pid` holds open.
    static func openFiles(of pid: pid_t) -> [String] {
        let folder = "/proc/\(pid)/fd"
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: folder + "/" + $0)
        }
    }

    /// The null device's number, 1:3, as Linux's makedev packs it.
    static let nullDevice = dev_t((1 << 8) | 3)

    /// Leaves a socket file at `path` that nobody listens on, as a killed daemon does.
    static func leaveStaleSocket(at path: String) throws {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(descriptor)
        guard bound == 0 else { throw PulseServerError("cannot bind \(path): \(String(cString: strerror(errno)))") }
    }
}

/// A folder of the test's own, and an environment without a sound server.
final class Scratch {
    let path: String
    var environment: [String: String]

    init() throws {
        path = "/tmp/roomd-hardening-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = "unix:\(path)/no-server"
        environment["XDG_RUNTIME_DIR"] = path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// A user of the box other than the tests', made with useradd and removed after.
final class OtherUser {
    static var canBeMade: Bool { getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/sbin/useradd") }

    let name = "roomd-other-" + UUID().uuidString.prefix(6).lowercased()
    private(set) var uid: uid_t = 0
    private(set) var gid: gid_t = 0

    func create() throws {
        let made = try ChildProcess.spawn("/usr/sbin/useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                                          environment: [:]).wait()
        try #require(made == 0, "useradd \(name) exited \(made)")
        let entry = try #require(getpwnam(name)?.pointee)
        (uid, gid) = (entry.pw_uid, entry.pw_gid)
    }

    /// Runs `tool` as this user, with no groups of the tests'; its exit status.
    @discardableResult
    func run(_ tool: String, _ arguments: [String], errors: String = "/dev/null") throws -> Int32 {
        try ChildProcess.spawn("/usr/bin/setpriv", ["--reuid=\(uid)", "--regid=\(gid)", "--clear-groups", tool] + arguments,
                               environment: ["PATH": "/usr/bin:/bin", "HOME": "/"], errors: errors).wait()
    }

    func remove() {
        _ = try? ChildProcess.spawn("/usr/sbin/userdel", [name], environment: [:]).wait()
    }
}

/// A WAV file's length as its header gives it and as its bytes hold it.
struct WAVFile {
    let headerSeconds: Double
    let bytesSeconds: Double

    init?(_ path: String) {
        guard let data = FileManager.default.contents(atPath: path), data.count >= 12 else { return nil }
        let bytes = [UInt8](data)
        func word(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24 }
        func half(_ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
        var index = 12, frameBytes = 0, rate = 0
        while index + 8 <= bytes.count {
            let id = String(decoding: bytes[index..<(index + 4)], as: UTF8.self), size = word(index + 4)
            if id == "fmt " { frameBytes = half(index + 8 + 12); rate = word(index + 8 + 4) }
            if id == "data" {
                guard frameBytes > 0, rate > 0 else { return nil }
                headerSeconds = Double(size / frameBytes) / Double(rate)
                bytesSeconds = Double((bytes.count - index - 8) / frameBytes) / Double(rate)
                return
            }
            index += 8 + size + (size & 1)
        }
        return nil
    }
}

/// A Unix socket that answers the first line it is sent with `answer`, once.
final class OneAnswerServer: @unchecked Sendable {
    private let descriptor: Int32
    private let done = DispatchSemaphore(value: 0)

    init(path: String, answer: String) throws {
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(descriptor, 1) == 0 else { throw PulseServerError("cannot listen at \(path)") }
        let listening = self.descriptor
        Thread { [done] in
            defer { done.signal() }
            let client = accept(listening, nil, nil)
            guard client >= 0 else { return }
            defer { close(client) }
            var byte: UInt8 = 0
            while read(client, &byte, 1) == 1 && byte != UInt8(ascii: "\n") {}
            var bytes = Array(answer.utf8)[...]
            while !bytes.isEmpty {
                let sent = bytes.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                guard sent > 0 else { return }
                bytes = bytes.dropFirst(sent)
            }
        }.start()
    }

    /// Waits for the answer to be sent, then closes.
    func finish() {
        done.wait()
        close(descriptor)
    }
}
