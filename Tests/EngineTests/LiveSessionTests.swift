import AudioCore
import AudioMeasurements
import Devices
import Engine
import Foundation
import Scene
import Spatial
import Synchronization
import Testing

/// A live session rendered by hand on one thread, with control calls
/// between blocks, as roomd's render and control threads would interleave
/// them. Every check is on the audio rendered after the call returned.
@Suite struct LiveSessionTests {
    static let block = RoomEngine.blockFrames

    /// Renders the session block by block, pumping its rings between blocks as roomd's event thread does.
    final class Driver {
        let session: RoomSession
        let channels: Int
        private(set) var output: [[Float]]

        init(_ room: Room, uplink: AudioSink? = nil) throws {
            session = try RoomSession(room: room, devices: (false, false), deviceRoute: nil, uplink: uplink)
            channels = session.channelLayout.channelCount
            output = Array(repeating: [], count: channels)
        }

        /// Renders `blocks` blocks; returns each channel of what they held.
        @discardableResult
        func render(blocks: Int) -> [[Float]] {
            var block = [Float](repeating: 0, count: LiveSessionTests.block * channels)
            var rendered = [[Float]](repeating: [], count: channels)
            for _ in 0..<blocks {
                block.withUnsafeMutableBufferPointer { session.live.render(into: $0, channels: channels) }
                for channel in 0..<channels {
                    rendered[channel] += stride(from: channel, to: block.count, by: channels).map { block[$0] }
                }
                session.pump()
            }
            for channel in 0..<channels { output[channel] += rendered[channel] }
            return rendered
        }

        /// Level difference right minus left over `blocks` blocks, in dB.
        func levelDifference(blocks: Int) -> Double {
            let ears = render(blocks: blocks)
            return Measure.levelDifference(left: ears[0], right: ears[1])
        }

        /// Checks that `change` takes what is heard on the left to the
        /// right by block `within` after its answer, rebuilding nothing.
        func expectLeftToRight(within: Int = 2, _ change: () throws -> Void) throws {
            #expect(levelDifference(blocks: 30) < -6)
            try change()
            let heard = (1...5).first { _ in levelDifference(blocks: 1) > 0 }
            print("heard on the right in block \(heard.map(String.init) ?? "none") after the answer")
            #expect(heard ?? .max <= within, "first block heard on the right: \(String(describing: heard))")
            let after = levelDifference(blocks: 3)
            #expect(after > 6, "right minus left \(after) dB a few blocks after the change")
            #expect(session.status()["renderersMade"] as? Int == 0)
        }
    }

    static func noise(seconds: Double = 2, seed: UInt64 = 3) -> [Float] { Fixture.noise(seconds: seconds, seed: seed) }

    /// One noise source at `azimuth`, looping, rendered as `algorithm`.
    static func room(azimuth: Double, algorithm: SourceAlgorithm = .auto, route: OutputRoute = .headphones,
                     reverb: RoomReverb? = nil) -> Room {
        Fixture.room([Fixture.point(noise(), at: .fixed(Fixture.position(azimuth: azimuth)), id: "noise", loop: true,
                                    algorithm: algorithm)], route: route, reverb: reverb)
    }

    /// A glide time no frame count can hold (NaN, or longer than the session allows) is refused, and
    /// the source stays where it plays: the next good move is heard as ever.
    @Test func aMoveWithAnImpossibleGlideIsRefusedAndMovesNothing() throws {
        let driver = try Driver(Self.room(azimuth: -90))
        for over in [Double.nan, -1, .infinity, 600_001, 1e300] {
            #expect(throws: SessionError.self) { try driver.session.move("noise", to: Fixture.position(azimuth: 90), overMilliseconds: over) }
        }
        try driver.expectLeftToRight { try driver.session.move("noise", to: Fixture.position(azimuth: 90), overMilliseconds: 0) }
    }

    @Test func aMoveRightAfterAForcedRouteChangeIsHeardOnTheNewSide() throws {
        let driver = try Driver(Self.room(azimuth: -90))
        driver.render(blocks: 20)
        try driver.session.forceRoute(.speakers)
        try driver.session.move("noise", to: Fixture.position(azimuth: 90), overMilliseconds: 0)
        // Two blocks after the answer, the old renderer already plays it on the right...
        driver.render(blocks: 2)
        #expect(driver.levelDifference(blocks: 3) > 10)
        // ...and so does the new route's, once it has taken over.
        driver.render(blocks: 40)
        let settled = driver.levelDifference(blocks: 20)
        #expect(settled > 30, "right minus left \(settled) dB on speakers")
        #expect(driver.session.status()["renderersMade"] as? Int == 1)
    }

    /// A move on an OpenAL point or a sound-field source is heard within two blocks.
    @Test(arguments: [SourceAlgorithm.soundField, .auto])
    func aMoveIsHeardWithinTwoBlocks(algorithm: SourceAlgorithm) throws {
        let driver = try Driver(Self.room(azimuth: -90, algorithm: algorithm))
        try driver.expectLeftToRight {
            try driver.session.move("noise", to: Fixture.position(azimuth: 90), overMilliseconds: 0)
        }
    }

    /// A crowd's member that plays alone, and one in the field, both follow a move.
    @Test func aCrowdMemberFollowsAMove() throws {
        // 80 quiet sources far ahead and one loud one at the left: the loud one plays alone.
        var sources = (0..<80).map { index in
            Fixture.point(Self.noise(seconds: 1, seed: UInt64(100 + index)), at: .fixed(Fixture.position(azimuth: 0, distance: 40)),
                          id: "far\(index)", gain: -30, loop: true)
        }
        sources.append(Fixture.point(Self.noise(), at: .fixed(Fixture.position(azimuth: -90)), id: "near", loop: true))
        let driver = try Driver(Fixture.room(sources))
        try driver.expectLeftToRight { try driver.session.move("near", to: Fixture.position(azimuth: 90), overMilliseconds: 0) }
    }

    /// The listener turns in place in a room with a sound field: a source at
    /// the left is at the right once the listener faces the other way.
    @Test func theListenerTurnsInPlaceInASoundFieldRoom() throws {
        let driver = try Driver(Self.room(azimuth: -90, algorithm: .soundField))
        try driver.expectLeftToRight {
            try driver.session.setListener(position: nil, yaw: 180, pitch: nil, roll: nil)
        }
    }

    @Test func aThousandMovesThenAStopIsHeardAndRebuildsNothing() throws {
        let driver = try Driver(Self.room(azimuth: -90, algorithm: .soundField))
        driver.render(blocks: 20)
        for step in 0..<1_000 {
            try driver.session.move("noise", to: Fixture.position(azimuth: Double(step % 360)), overMilliseconds: 20)
        }
        try driver.session.stop("noise")
        driver.render(blocks: 2)
        let after = driver.render(blocks: 3)
        #expect(Measure.rmsDecibels(after[0] + after[1]) < -90, "\(Measure.rmsDecibels(after[0] + after[1])) dBFS after the stop")
        #expect(driver.session.status()["renderersMade"] as? Int == 0)
    }

    /// Gains, plays and stops reach a source the engine renders itself, as
    /// they reach an OpenAL point.
    @Test(arguments: [SourceAlgorithm.soundField, .auto, .passthrough])
    func gainStopAndPlayReachEveryKindOfSource(algorithm: SourceAlgorithm) throws {
        let driver = try Driver(Self.room(azimuth: 30, algorithm: algorithm))
        let before = driver.render(blocks: 30)
        try driver.session.setGain("noise", decibels: -12)
        driver.render(blocks: 2)
        let quieter = driver.render(blocks: 10)
        let drop = Measure.rmsDecibels(before[0].suffix(4_800)) - Measure.rmsDecibels(quieter[0])
        #expect(abs(drop - 12) < 1.5, "\(drop) dB quieter after a -12 dB gain")
        try driver.session.stop("noise")
        driver.render(blocks: 2)
        #expect(Measure.rmsDecibels(driver.render(blocks: 3)[0]) < -90)
        try driver.session.play("noise")
        driver.render(blocks: 2)
        let again = Measure.rmsDecibels(driver.render(blocks: 10)[0])
        #expect(abs(again - Measure.rmsDecibels(quieter[0])) < 1.5, "\(again) dBFS after play")
    }

    /// A source that glided is saved where it is; one saved mid-glide starts
    /// where it was then and glides the rest of the way from time 0.
    @Test func saveAfterAGlideReloadsWhereTheSourceIs() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("live-session-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let audio = folder.appendingPathComponent("noise.wav").path
        let writer = try AudioFileWriter(path: audio, format: .wavFloat, channelCount: 1, sampleRate: 48_000)
        try Self.noise().withUnsafeBufferPointer { try writer.write(interleaved: $0) }
        try writer.close()
        var room = Self.room(azimuth: -90)
        room.scene.file = folder.appendingPathComponent("room.yaml").path
        room.scene.sources[0].audioPath = audio
        room.sources[0].description.audioPath = audio

        let driver = try Driver(room)
        driver.render(blocks: 10)
        try driver.session.move("noise", to: Position(3, 0, 0), overMilliseconds: 100)
        driver.render(blocks: 20)
        try driver.session.move("noise", to: Position(0, 0, 4), overMilliseconds: 1_000)
        driver.render(blocks: 50)
        let saved = folder.appendingPathComponent("saved.yaml").path
        let now = driver.session.status()["sources"] as! [[String: Any]]
        let there = (now[0]["position"] as! [Double])
        try driver.session.save(to: saved)

        let reloaded = try Room.load(path: saved).scene.sources[0].placement
        let start = reloaded.position(at: 0)
        #expect(abs(start.x - there[0]) < 0.05 && abs(start.z - there[2]) < 0.05, "reloaded at \(start), was at \(there)")
        let end = reloaded.position(at: 0.5)
        #expect(abs(end.x) < 1e-9 && abs(end.z - 4) < 1e-9, "the rest of the glide ends at \(end)")
    }

    /// Renderers that reach the render thread after their frame has played
    /// are made again further ahead: the route change they carried is heard
    /// and told once it plays, never lost. Progress is read from `status`,
    /// on this thread, so no task of the test has to be scheduled to see it.
    @Test func aRouteChangeWhoseRenderersComeLateIsMadeAgainHeardAndTold() async throws {
        let session = try RoomSession(room: Self.room(azimuth: -90), devices: (false, false), deviceRoute: nil)
        // Rendered as fast as it can, the room outruns the making of renderers.
        let renderer = PacedRenderer(session)
        session.startPumping()
        defer {
            renderer.stop()
            session.close()
        }
        func late() -> Int { session.status()["renderersLate"] as? Int ?? 0 }
        func lastSeq() -> Int { session.status()["lastEventSeq"] as? Int ?? 0 }
        func wait(_ what: String, seconds: Double = 60, until condition: () -> Bool) throws {
            let deadline = Date(timeIntervalSinceNow: seconds)
            while !condition() {
                guard Date() < deadline else { throw ConditionNotMet(description: "not \(what) within \(seconds) s") }
                Thread.sleep(forTimeInterval: 0.002)
            }
        }

        var wanted = OutputRoute.headphones, toldInTime = 0, before = 0
        for _ in 0..<10 where late() == 0 {
            wanted = wanted == .headphones ? .speakers : .headphones
            before = lastSeq()
            try session.forceRoute(wanted)
            try wait("renderers late or the route told") { late() > 0 || lastSeq() > before }
            if late() == 0 { toldInTime += 1 }
        }
        try #require(late() > 0, "every set of renderers arrived in time")

        // At the pace of a device the remade renderers arrive in time.
        renderer.realTime()
        try wait("the change to \(wanted.rawValue) told") { lastSeq() > before }
        let toldAt = renderer.frames
        try wait("0.3 s more rendered") { renderer.frames > toldAt + 14_400 }
        let heard = renderer.lastRendered(frames: 9_600)
        let itd = Measure.timeDifference(left: heard[0], right: heard[1])
        print("renderers late \(late()) times; after the late change to \(wanted.rawValue): ITD \(itd * 1e6) us")
        // HRTF delays the far (right) ear by some 700 us; panning delays neither.
        #expect(wanted == .headphones ? itd < -400e-6 : abs(itd) < 50e-6, "ITD \(itd * 1e6) us on \(wanted.rawValue)")

        // Told: each change in time once, and the late one once, last.
        let told = try session.subscribe(since: 0, only: ["routeChanged"])
        var routes: [OutputRoute] = []
        if told.replayed > 0 {
            for await event in told.events {
                if case .routeChanged(_, let to, _) = event.kind { routes.append(to) }
                if routes.count == told.replayed { break }
            }
        }
        #expect(routes.count == toldInTime + 1 && routes.last == wanted, "told \(routes), \(toldInTime) in time, then \(wanted)")
    }

    /// With the render side stalled, discrete changes wait a bounded time
    /// and then fail; `mute on` is never lost: it holds from the first block
    /// the room renders again.
    @Test func aStalledRoomRefusesWhatItCannotTakeAndStillMutes() throws {
        let uplink = CapturedUplink()
        let room = VoiceRoom.room(scene: [VoiceRoom.tone(seconds: 2)],
                                  voice: { var voice = VoiceDescription(); voice.echoCancellation = .off; return voice }())
        let driver = try Driver(room, uplink: uplink)
        let speech = Signals.whiteNoise(frames: 96_000, rms: 0.1, seed: 9)
        /// Renders a second with the microphone carrying noise; returns the uplink meanwhile.
        func talk(_ part: Int) -> [Float] {
            let first = uplink.samples.count
            for start in stride(from: part * 48_000, to: (part + 1) * 48_000, by: Self.block) {
                speech[start..<(start + Self.block)].withUnsafeBufferPointer { _ = driver.session.deviceMicrophone.push($0) }
                driver.render(blocks: 1)
            }
            return Array(uplink.samples[first...])
        }
        let unmuted = talk(0)
        #expect(Measure.rmsDecibels(Array(unmuted.suffix(24_000))) > -50, "the open uplink carried \(Measure.rmsDecibels(unmuted)) dBFS")

        var refused: SessionError?
        for step in 0..<1_000 {
            do {
                try driver.session.setDucking(level: step % 2 == 0 ? .max : .min, advanced: nil)
            } catch let error as SessionError {
                refused = error
                break
            }
        }
        guard case .notRendering(let message)? = refused else {
            Issue.record("a full command ring was acknowledged: \(String(describing: refused))")
            return
        }
        #expect(message.contains("not rendering"))
        try driver.session.setMuted(true)
        let muted = talk(1)
        #expect(muted.count == 48_000)
        #expect(muted.allSatisfy { $0 == 0 }, "the muted uplink carried \(Measure.rmsDecibels(muted)) dBFS")
    }
}

/// Keeps the uplink a session sends, on the rendering thread.
final class CapturedUplink: AudioSink, @unchecked Sendable {
    private(set) var samples: [Float] = []

    func play(_ block: UnsafeBufferPointer<Float>, channels: Int) throws { samples += block }
}

struct ConditionNotMet: Error, CustomStringConvertible {
    let description: String
}

/// Renders a session on a thread of its own, first as fast as it can, then
/// at a device's pace; keeps the last second it rendered.
final class PacedRenderer: @unchecked Sendable {
    private let session: RoomSession
    private let paced = Atomic<Bool>(false)
    private let running = Atomic<Bool>(true)
    private let rendered = Atomic<Int>(0)
    private let kept = Mutex<[[Float]]>([[], []])
    private let ended = DispatchSemaphore(value: 0)

    init(_ session: RoomSession) {
        self.session = session
        let thread = Thread { [self] in
            defer { ended.signal() }
            let frames = RoomEngine.blockFrames
            var block = [Float](repeating: 0, count: 2 * frames)
            var next = Date()
            while running.load(ordering: .relaxed) {
                block.withUnsafeMutableBufferPointer { session.live.render(into: $0, channels: 2) }
                kept.withLock { ears in
                    for ear in 0..<2 {
                        ears[ear] += stride(from: ear, to: block.count, by: 2).map { block[$0] }
                        if ears[ear].count > Room.sampleRate { ears[ear].removeFirst(ears[ear].count - Room.sampleRate) }
                    }
                }
                rendered.add(frames, ordering: .releasing)
                if paced.load(ordering: .relaxed) {
                    next += Double(frames) / Double(Room.sampleRate)
                    Thread.sleep(until: next)
                } else {
                    next = Date()
                }
            }
        }
        thread.start()
    }

    var frames: Int { rendered.load(ordering: .acquiring) }

    func realTime() { paced.store(true, ordering: .relaxed) }

    /// Each ear's last `frames` frames.
    func lastRendered(frames: Int) -> [[Float]] { kept.withLock { $0.map { Array($0.suffix(frames)) } } }

    func stop() {
        running.store(false, ordering: .relaxed)
        ended.wait()
    }
}
