import AudioCore
import AudioMeasurements
import Devices
import Engine
import Foundation
import Scene
import Spatial
import Testing

/// Sources and talkers that join, change and leave a playing room, heard
/// in the rendered audio of a session driven block by block.
@Suite struct JoinedSourceTests {
    typealias Driver = LiveSessionTests.Driver

    /// A folder with a mono noise file in it, gone when the test ends.
    final class Folder {
        let url: URL
        var path: String { url.path }

        init() throws {
            url = FileManager.default.temporaryDirectory.appendingPathComponent("joined-\(getpid())-\(UInt64.random(in: 0...UInt64.max))")
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            try write("noise.wav", channels: 1, LiveSessionTests.noise(seed: 11))
        }

        /// Writes `interleaved` samples of `channels` channels at 48 kHz as the WAV file `name` in the folder.
        func write(_ name: String, channels: Int, _ interleaved: [Float]) throws {
            let writer = try AudioFileWriter(path: url.appendingPathComponent(name).path, format: .wavFloat, channelCount: channels,
                                             sampleRate: 48_000)
            try interleaved.withUnsafeBufferPointer { try writer.write(interleaved: $0) }
            try writer.close()
        }

        deinit { try? FileManager.default.removeItem(at: url) }
    }

    /// A quiet room: one source far ahead, stopped.
    static func quietRoom() -> Room {
        Fixture.room([Fixture.point(LiveSessionTests.noise(), at: .fixed(Fixture.position(azimuth: 0)), id: "idle", loop: true,
                                    playing: false)], route: .headphones)
    }

    static func level(_ ears: [[Float]]) -> Double { Measure.rmsDecibels(ears[0] + ears[1]) }

    @Test func anAddedSourceIsHeardWhereItIsWithinTwoBlocksAndGoesWithinTwo() throws {
        let folder = try Folder()
        let driver = try Driver(Self.quietRoom())
        driver.render(blocks: 10)
        #expect(Self.level(driver.render(blocks: 5)) < -90)

        let id = try driver.session.add(entry: "{id: bell, file: noise.wav, position: [2, 0, 0], loop: true}", relativeTo: folder.path)
        #expect(id == "bell")
        let heard = (1...5).first { _ in driver.levelDifference(blocks: 1) > 6 }
        print("an added source first heard on the right in block \(heard.map(String.init) ?? "none") after the answer")
        #expect(heard ?? .max <= 2)
        #expect(driver.levelDifference(blocks: 10) > 10)

        try driver.session.remove("bell")
        let gone = (1...5).first { _ in Self.level(driver.render(blocks: 1)) < -90 }
        print("a removed source silent from block \(gone.map(String.init) ?? "none") after the answer")
        #expect(gone ?? .max <= 2)
        #expect(Self.level(driver.render(blocks: 10)) < -90)
        #expect(driver.session.status()["renderersMade"] as? Int == 0)
        let ids = (driver.session.status()["sources"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(ids == ["idle"])
    }

    @Test func anAddedSourceMovesAndTakesGainsLikeAnyOther() throws {
        let folder = try Folder()
        let driver = try Driver(Self.quietRoom())
        try driver.session.add(entry: "{id: bell, file: noise.wav, position: [-2, 0, 0], loop: true}", relativeTo: folder.path)
        try driver.expectLeftToRight { try driver.session.move("bell", to: Position(2, 0, 0), overMilliseconds: 0) }
        let before = Self.level(driver.render(blocks: 10))
        try driver.session.setGain("bell", decibels: -20)
        driver.render(blocks: 2)
        let drop = before - Self.level(driver.render(blocks: 10))
        #expect(abs(drop - 20) < 1.5, "\(drop) dB quieter after -20 dB")
    }

    /// A stream plays what was pushed, where it was put; when the app stops
    /// pushing, the source is silent rather than replaying what it had.
    @Test func aStreamPlaysWhatWasPushedAndAnUnderrunIsSilence() throws {
        let driver = try Driver(Self.quietRoom())
        let stream = try driver.session.addStream(id: "alice", at: Position(-2, 0, 0))
        let tone = Signals.sine(frequency: 2_000, frames: 48_000, amplitude: 0.3)
        var pushed = 0
        var ears: [[Float]] = [[], []]
        // Half a second pushed a block at a time, as a network would deliver it.
        for _ in 0..<50 {
            pushed += stream.push(Array(tone[pushed..<(pushed + LiveSessionTests.block)]))
            let block = driver.render(blocks: 1)
            ears[0] += block[0]
            ears[1] += block[1]
        }
        let left = Array(ears[0].suffix(9_600)), right = Array(ears[1].suffix(9_600))
        #expect(abs(Measure.frequency(left) - 2_000) < 20, "the stream played \(Measure.frequency(left)) Hz")
        #expect(Measure.rmsDecibels(left) > -30)
        #expect(Measure.levelDifference(left: left, right: right) < -6, "a talker at the left")
        #expect(Measure.largestStep(left) < 0.1, "a glitch of \(Measure.largestStep(left)) in a 2 kHz tone")
        // Pushing stopped: within two blocks the source is silent, and stays so.
        driver.render(blocks: 2)
        #expect(Self.level(driver.render(blocks: 20)) < -90)
        // More pushed: it plays again.
        for _ in 0..<10 {
            pushed += stream.push(Array(tone[pushed..<(pushed + LiveSessionTests.block)]))
            driver.render(blocks: 1)
        }
        #expect(stream.queuedFrames == 0)
        #expect(Measure.rmsDecibels(Array(driver.output[0].suffix(2_400))) > -30)
    }

    /// A place a darkened source left gives the next source its own paths:
    /// nothing of the last source stays on the voice.
    @Test func aSourceThatJoinsAfterAnotherLeftHasItsOwnPaths() throws {
        let folder = try Folder()
        let driver = try Driver(Self.quietRoom())
        /// How far below the whole band the noise above 8 kHz is, in dB.
        func brightness() -> Double {
            let ears = driver.render(blocks: 20)
            return Measure.rmsDecibels(Biquad.highPassed(ears[1], cutoff: 8_000)) - Measure.rmsDecibels(ears[1])
        }
        try driver.session.add(entry: "{id: first, file: noise.wav, position: [2, 0, 0], loop: true, obstruction: -40}",
                               relativeTo: folder.path)
        let dark = brightness()
        try driver.session.remove("first")
        driver.render(blocks: 5)
        try driver.session.add(entry: "{id: second, file: noise.wav, position: [2, 0, 0], loop: true}", relativeTo: folder.path)
        let bright = brightness()
        print("above 8 kHz: \(dark) dB under the band obstructed, \(bright) dB after")
        #expect(bright > dark + 15)
    }

    /// A source of the scene file removed is silent within two blocks, is
    /// gone from `status` and `save`, and stays gone when a route change
    /// makes new renderers; its id can join again.
    @Test func aSceneSourceRemovedIsGoneForGood() throws {
        let folder = try Folder()
        let driver = try Driver(LiveSessionTests.room(azimuth: 30))
        driver.render(blocks: 20)
        try driver.session.remove("noise")
        driver.render(blocks: 2)
        #expect(Self.level(driver.render(blocks: 5)) < -90)
        try driver.session.forceRoute(.speakers)
        driver.render(blocks: 60)
        #expect(Self.level(driver.render(blocks: 10)) < -90)
        #expect((driver.session.status()["sources"] as? [[String: Any]])?.isEmpty == true)
        #expect(driver.session.scene().sources.isEmpty)
        try driver.session.add(entry: "{id: noise, file: noise.wav, position: [-2, 0, 0], loop: true}", relativeTo: folder.path)
        driver.render(blocks: 2)
        #expect(driver.levelDifference(blocks: 10) < -6, "the new noise at the left, on speakers")
        let saved = driver.session.scene().sources.map(\.id)
        #expect(saved == ["noise"])
    }

    /// `set` changes a source's paths in place: an obstruction darkens it within two blocks.
    @Test func setObstructionDarkensASourceInPlace() throws {
        let driver = try Driver(LiveSessionTests.room(azimuth: 30))
        let before = driver.render(blocks: 30)
        try driver.session.set("noise", key: "obstruction", value: "-40")
        driver.render(blocks: 2)
        let after = driver.render(blocks: 20)
        let high = { (ears: [[Float]]) in Measure.rmsDecibels(Biquad.highPassed(ears[0], cutoff: 8_000)) }
        let darker = high([Array(before[0].suffix(9_600))]) - high(after)
        #expect(darker > 20, "\(darker) dB less above 8 kHz after obstruction -40 dB")
        #expect(driver.session.status()["renderersMade"] as? Int == 0)
        #expect(driver.session.scene().sources.first?.paths.obstruction == -40, "save keeps what was set")

        // A gain set twice, the second time back to the entry's own, is heard both times.
        let level = Measure.rmsDecibels(driver.render(blocks: 10)[0])
        try driver.session.setGain("noise", decibels: -20)
        driver.render(blocks: 2)
        let quiet = Measure.rmsDecibels(driver.render(blocks: 10)[0])
        try driver.session.set("noise", key: "gain", value: "0")
        driver.render(blocks: 2)
        let back = Measure.rmsDecibels(driver.render(blocks: 10)[0])
        #expect(abs(level - quiet - 20) < 2.5 && abs(back - level) < 2.5, "\(level), \(quiet), \(back) dBFS")
    }

    /// Interaural time difference of a block, below 1.5 kHz where HRTF's is clear.
    static func timeDifference(_ ears: [[Float]]) -> Double {
        Measure.timeDifference(left: Biquad.lowPassed(ears[0], cutoff: 1_500), right: Biquad.lowPassed(ears[1], cutoff: 1_500))
    }

    /// HRTF delays the far ear by over half a millisecond at 90 degrees;
    /// panning delays neither. A point switched between them, a scene
    /// source or one that joined, is heard the new way within two blocks,
    /// without a gap and without new renderers.
    @Test func setAlgorithmMovesAPointBetweenHRTFAndPanningWithinTwoBlocks() throws {
        let folder = try Folder()
        let driver = try Driver(LiveSessionTests.room(azimuth: 90))
        try driver.session.add(entry: "{id: bell, file: noise.wav, position: [2, 0, 0], loop: true, gain: -60}", relativeTo: folder.path)
        driver.render(blocks: 10)
        #expect(Self.timeDifference(driver.render(blocks: 10)) > 500e-6)
        let steady = Self.level(driver.render(blocks: 10))

        func switched(_ id: String, to algorithm: String, panned: Bool) throws {
            try driver.session.set(id, key: "algorithm", value: algorithm)
            var levels: [Double] = []
            let heard = (1...5).first { _ in
                let ears = driver.render(blocks: 1)
                levels.append(Self.level(ears))
                // Panned hard right, the left ear is all but silent; through HRTF it hears the source late.
                let difference = Measure.levelDifference(left: ears[0], right: ears[1])
                return panned ? difference > 35 : difference < 30 && Self.timeDifference(ears) > 400e-6
            }
            print("\(id) as \(algorithm) heard in block \(heard.map(String.init) ?? "none") after the answer; levels \(levels)")
            #expect(heard ?? .max <= 2, "\(id) as \(algorithm): \(String(describing: heard))")
            #expect(levels.allSatisfy { abs($0 - steady) < 4 }, "a gap or a bump while switching: \(levels) against \(steady) dBFS")
            let after = driver.render(blocks: 10)
            let difference = Measure.levelDifference(left: after[0], right: after[1]), delay = Self.timeDifference(after)
            #expect(panned ? difference > 35 : difference < 30 && delay > 500e-6, "\(difference) dB, \(delay * 1e6) µs")
        }
        // A scene source moves into a place of its own, then back to the route's algorithm.
        try switched("noise", to: "panning", panned: true)
        try switched("noise", to: "auto", panned: false)
        try driver.session.setGain("noise", decibels: -60)
        try driver.session.setGain("bell", decibels: 0)
        driver.render(blocks: 10)
        try switched("bell", to: "panning", panned: true)
        #expect(driver.session.status()["renderersMade"] as? Int == 0)
        let sources = driver.session.status()["sources"] as? [[String: Any]] ?? []
        let algorithms = Dictionary(uniqueKeysWithValues: sources.compactMap { entry in
            (entry["id"] as? String).map { ($0, entry["algorithm"] as? String) }
        })
        #expect(algorithms == ["noise": "hrtf", "bell": "panning"])
    }

    /// A source added on keyframes follows them from when it joined.
    @Test func anAddedSourceFollowsItsKeyframesFromWhenItJoined() throws {
        let folder = try Folder()
        let driver = try Driver(Self.quietRoom())
        driver.render(blocks: 50)
        try driver.session.add(entry: "{id: bell, file: noise.wav, loop: true, algorithm: panning, "
                               + "motion: {keyframes: [{time: 0, position: [-2, 0, 0]}, {time: 0.5, position: [-2, 0, 0]}, "
                               + "{time: 0.6, position: [2, 0, 0]}]}}", relativeTo: folder.path)
        let left = driver.levelDifference(blocks: 40)
        driver.render(blocks: 20)
        let right = driver.levelDifference(blocks: 20)
        #expect(left < -6 && right > 6, "right minus left: \(left) dB, then \(right) dB")
        // Saved, its keyframes are on the room's timeline: it joined half a second in.
        let saved = driver.session.scene().sources.first { $0.id == "bell" }
        guard case .moving(let path)? = saved?.placement else { Issue.record("saved without its keyframes"); return }
        #expect(path.keyframes.map(\.time) == [0.5, 1.0, 1.1], "\(path.keyframes.map(\.time))")
    }

    /// Saved, a source added with a start has it on the room's timeline, as
    /// its keyframes (it was saved as starting at once), and one played again
    /// starts at once; a forced route is saved as the scene's route.
    @Test func saveKeepsAnAddedSourcesStartAndAForcedRoute() throws {
        let folder = try Folder()
        let driver = try Driver(Self.quietRoom())
        driver.render(blocks: 50)
        try driver.session.add(entry: "{id: late, file: noise.wav, loop: true, position: [2, 0, 0], start: 1}", relativeTo: folder.path)
        driver.render(blocks: 30)
        #expect(Self.level(driver.render(blocks: 10)) < -90, "nothing yet, 0.4 s into a wait of 1 s")
        // Joined 0.5 s in with a start of 1 s: it starts 1.5 s into the room, as its keyframes would count.
        let waiting = driver.session.scene().sources.first { $0.id == "late" }
        #expect(abs((waiting?.start ?? -1) - 1.5) < 1e-9, "saved to start at \(String(describing: waiting?.start)) s")
        driver.render(blocks: 60)
        #expect(Self.level(driver.render(blocks: 10)) > -40, "heard once its wait is over")
        try driver.session.stop("late")
        try driver.session.play("late")
        #expect(driver.session.scene().sources.first { $0.id == "late" }?.start == 0, "played again: from the saved room's start")

        #expect(driver.session.scene().route == .headphones)
        try driver.session.forceRoute(.speakers)
        #expect(driver.session.scene().route == .speakers)
        try driver.session.forceRoute(nil)
        #expect(driver.session.scene().route == .headphones)
    }

    /// What OpenAL does not render (the sound field, a file played as it
    /// is) takes over a point within two blocks, without a gap and without
    /// new renderers, for a scene source and for one that joined.
    @Test func setToTheFieldOrAsItIsIsHeardWithinTwoBlocks() throws {
        let folder = try Folder()
        let driver = try Driver(LiveSessionTests.room(azimuth: -90))
        driver.render(blocks: 10)
        let steady = Self.level(driver.render(blocks: 10))

        /// Sets `key` and returns the first block after the answer that `heard` accepts, and every block's level.
        func set(_ id: String, _ key: String, _ value: String, heard: ([[Float]]) -> Bool) throws -> (Int?, [Double]) {
            try driver.session.set(id, key: key, value: value)
            var levels: [Double] = []
            let block = (1...5).first { _ in
                let ears = driver.render(blocks: 1)
                levels.append(Self.level(ears))
                return heard(ears)
            }
            print("\(id) \(key) \(value) heard in block \(block.map(String.init) ?? "none") after the answer; levels \(levels)")
            return (block, levels)
        }
        func leftOf(_ ears: [[Float]]) -> Double { Measure.levelDifference(left: ears[0], right: ears[1]) }

        // Into the field, still on the left; then moved, heard on the right.
        let (intoField, fieldLevels) = try set("noise", "algorithm", "soundField") { leftOf($0) < -6 && Self.timeDifference($0) < -400e-6 }
        #expect(intoField ?? .max <= 2)
        #expect(fieldLevels.allSatisfy { abs($0 - steady) < 4 }, "a gap or a bump: \(fieldLevels) against \(steady) dBFS")
        try driver.expectLeftToRight { try driver.session.move("noise", to: Position(2, 0, 0), overMilliseconds: 0) }

        // As it is: a mono file reaches both ears alike, at its own level.
        let (asIs, asIsLevels) = try set("noise", "algorithm", "passthrough") { abs(leftOf($0)) < 0.5 }
        #expect(asIs ?? .max <= 2)
        #expect(asIsLevels.allSatisfy { $0 > steady - 6 }, "a gap while switching: \(asIsLevels)")
        let centred = driver.render(blocks: 10)
        #expect(zip(centred[0], centred[1]).allSatisfy { $0 == $1 }, "played as it is, both ears get the same samples")
        // Placed again, it stands where it was when it left the world: on the right.
        let (placed, _) = try set("noise", "algorithm", "auto") { leftOf($0) > 6 && Self.timeDifference($0) > 400e-6 }
        #expect(placed ?? .max <= 2)
        _ = try set("noise", "algorithm", "passthrough") { abs(leftOf($0)) < 0.5 }

        // An added source goes the same ways.
        try driver.session.setGain("noise", decibels: -80)
        try driver.session.add(entry: "{id: bell, file: noise.wav, position: [2, 0, 0], loop: true}", relativeTo: folder.path)
        driver.render(blocks: 10)
        let (bellField, _) = try set("bell", "algorithm", "soundField") { leftOf($0) > 6 && Self.timeDifference($0) > 400e-6 }
        #expect(bellField ?? .max <= 2)
        let (bellAsIs, _) = try set("bell", "mode", "bypass") { abs(leftOf($0)) < 0.5 }
        #expect(bellAsIs ?? .max <= 2)
        // A mono file is the same audio as a point and as it is: switching takes no new place, however fast.
        for index in 0..<100 { try driver.session.set("noise", key: "algorithm", value: index % 2 == 0 ? "auto" : "passthrough") }
        driver.render(blocks: 5)

        #expect(driver.session.status()["renderersMade"] as? Int == 0)
        let sources = driver.session.status()["sources"] as? [[String: Any]] ?? []
        let algorithms = Dictionary(uniqueKeysWithValues: sources.compactMap { entry in
            (entry["id"] as? String).map { ($0, entry["algorithm"] as? String) }
        })
        #expect(algorithms == ["noise": "passthrough", "bell": "passthrough"])
    }

    /// A source never moved, played as it is and then placed again, is heard
    /// where it stood, not at the listener: the position a file played as it
    /// is does not have must not become its place.
    @Test(arguments: [("mode", "bypass", "point"), ("algorithm", "passthrough", "auto")])
    func aSourcePlayedAsItIsAndPlacedAgainStandsWhereItStood(_ change: (key: String, away: String, back: String)) throws {
        let driver = try Driver(LiveSessionTests.room(azimuth: -90))
        driver.render(blocks: 10)
        func leftOf(_ ears: [[Float]]) -> Double { Measure.levelDifference(left: ears[0], right: ears[1]) }
        try driver.session.set("noise", key: change.key, value: change.away)
        driver.render(blocks: 5)
        let asIs = driver.render(blocks: 5)
        #expect(abs(leftOf(asIs)) < 0.5, "played as it is: \(leftOf(asIs)) dB")
        try driver.session.set("noise", key: change.key, value: change.back)
        driver.render(blocks: 5)
        let placed = driver.render(blocks: 10)
        print("\(change.key) \(change.away) -> \(change.back): ILD \(leftOf(placed)) dB, ITD \(Self.timeDifference(placed) * 1e6) us")
        #expect(leftOf(placed) < -6 && Self.timeDifference(placed) < -400e-6, "back on the left where it stood")
    }

    /// A point joined in the field and a file joined as it is reach the
    /// room's reverb as the same entries in a scene file do: a second after
    /// they stop, the hall's tail is as loud as the scene's.
    @Test(arguments: ["algorithm: soundField, position: [2, 0, -1]", "algorithm: passthrough"])
    func aSourceJoinedInTheFieldOrAsItIsReachesTheReverbAsASceneSourceDoes(_ kind: String) throws {
        let folder = try Folder()
        let entry = "{id: bell, file: noise.wav, loop: true, reverbBlend: 0.7, \(kind)}"
        func tail(_ sources: String, joining: String?) throws -> (playing: Double, tail: Double) {
            let scene = folder.path + "/hall.yaml"
            try """
                version: 1
                name: Hall
                reverb: { preset: largeHall }
                sources:
                  - { id: idle, file: noise.wav, position: [0, 0, -2], loop: true, playing: false }
                \(sources)
                """.write(toFile: scene, atomically: true, encoding: .utf8)
            let driver = try Driver(try Room.load(path: scene))
            driver.render(blocks: 5)
            if let joining { try driver.session.add(entry: joining, relativeTo: folder.path) }
            driver.render(blocks: 100)
            let playing = Self.level(driver.render(blocks: 20))
            try driver.session.stop("bell")
            driver.render(blocks: 30)
            return (playing, Self.level(driver.render(blocks: 40)))
        }
        let inScene = try tail("  - \(entry)", joining: nil), joined = try tail("", joining: entry)
        print("\(kind): playing \(joined.playing) dBFS joined, \(inScene.playing) in the scene; "
              + "0.3 s after it stopped \(joined.tail) dBFS joined, \(inScene.tail) in the scene")
        #expect(inScene.tail > inScene.playing - 40, "the hall rings on in the scene")
        #expect(abs(joined.playing - inScene.playing) < 1.5)
        #expect(abs(joined.tail - inScene.tail) < 1.5, "the joined source's reverb")
    }

    /// A file of two channels added as it is plays each channel on its own
    /// side; set to a point, it is heard as one, downmixed, within two blocks.
    @Test func aStereoFileAddedAsItIsKeepsItsChannelsAndBecomesAPoint() throws {
        let folder = try Folder()
        let left = LiveSessionTests.noise(seed: 5)
        try folder.write("left.wav", channels: 2, left.flatMap { [$0, Float(0)] })
        let driver = try Driver(Self.quietRoom())
        driver.render(blocks: 5)
        try driver.session.add(entry: "{id: duet, file: left.wav, position: [0, 0, -1], loop: true}", relativeTo: folder.path)
        let heard = (1...5).first { _ in Self.level(driver.render(blocks: 1)) > -40 }
        #expect(heard ?? .max <= 2)
        let asIs = driver.render(blocks: 20)
        let separation = Measure.rmsDecibels(asIs[0]) - Measure.rmsDecibels(asIs[1])
        print("a stereo file's left channel alone: right ear \(separation) dB under the left")
        #expect(separation > 100, "the right channel is silent: \(separation) dB")

        try driver.session.set("duet", key: "mode", value: "point")
        try driver.session.move("duet", to: Position(2, 0, 0), overMilliseconds: 0)
        let point = (1...5).first { _ in
            let ears = driver.render(blocks: 1)
            return Measure.levelDifference(left: ears[0], right: ears[1]) > 6 && Self.timeDifference(ears) > 400e-6
        }
        #expect(point ?? .max <= 2, "heard as a point on the right: \(String(describing: point))")
        #expect(driver.session.status()["renderersMade"] as? Int == 0)
    }

    /// An added point that bypasses the room inside the head is its own
    /// file there, on both ears alike; outside, the room renders it again.
    @Test func anAddedPointInsideTheHeadBypassesTheRoom() throws {
        let folder = try Folder()
        let driver = try Driver(Self.quietRoom())
        try driver.session.add(entry: "{id: voice, file: noise.wav, position: [0, 0, 0], loop: true, inHead: bypass}",
                               relativeTo: folder.path)
        driver.render(blocks: 5)
        let inside = driver.render(blocks: 10)
        #expect(zip(inside[0], inside[1]).allSatisfy { $0 == $1 }, "inside the head, both ears get the file as it is")
        #expect(Self.level(inside) > -40)
        try driver.session.move("voice", to: Position(2, 0, 0), overMilliseconds: 0)
        // The crossfade takes 150 ms.
        driver.render(blocks: 20)
        let outside = driver.render(blocks: 10)
        #expect(Measure.levelDifference(left: outside[0], right: outside[1]) > 6 && Self.timeDifference(outside) > 400e-6)
    }

    /// A rate other than 1 on an added file plays it faster and higher:
    /// a 500 Hz tone at rate 2 is heard at 1 kHz.
    @Test func anAddedSourcePlaysAtItsRate() throws {
        let folder = try Folder()
        let tone = (0..<48_000).map { Float(0.5 * sin(2 * Double.pi * 500 * Double($0) / 48_000)) }
        try folder.write("tone.wav", channels: 1, tone)
        let driver = try Driver(Self.quietRoom())
        try driver.session.add(entry: "{id: tone, file: tone.wav, position: [0, 0, -1], loop: true, rate: 2}", relativeTo: folder.path)
        driver.render(blocks: 5)
        func frequency(_ samples: [Float]) -> Double {
            let crossings = zip(samples, samples.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
            return Double(crossings) * 48_000 / Double(samples.count)
        }
        let fast = frequency(driver.render(blocks: 50)[0])
        try driver.session.set("tone", key: "rate", value: "1")
        driver.render(blocks: 2)
        let plain = frequency(driver.render(blocks: 50)[0])
        print("a 500 Hz tone at rate 2: \(fast) Hz; at rate 1: \(plain) Hz")
        #expect(abs(fast - 1_000) < 20 && abs(plain - 500) < 10)
    }

    /// A first-order bed added while the room plays is panned into the
    /// field: its sound from the right is heard on the right within two
    /// blocks, turns with the listener, and is gone within two of its removal.
    @Test func anAddedBedIsHeardAroundTheListenerAndTurnsWithIt() throws {
        let folder = try Folder()
        // AmbiX (ACN, SN3D): a sound from the right has W = s, Y = -s.
        let noise = LiveSessionTests.noise(seed: 7)
        try folder.write("right.wav", channels: 4, noise.flatMap { [$0, -$0, Float(0), Float(0)] })
        let driver = try Driver(Self.quietRoom())
        driver.render(blocks: 5)
        try driver.session.add(entry: "{id: wind, file: right.wav, mode: bed, loop: true}", relativeTo: folder.path)
        let heard = (1...5).first { _ in
            let ears = driver.render(blocks: 1)
            return Measure.levelDifference(left: ears[0], right: ears[1]) > 6 && Self.timeDifference(ears) > 300e-6
        }
        print("an added bed heard from the right in block \(heard.map(String.init) ?? "none") after the answer")
        #expect(heard ?? .max <= 2)
        try driver.session.setListener(position: nil, yaw: 180, pitch: nil, roll: nil)
        let turned = (1...5).first { _ in driver.levelDifference(blocks: 1) < -6 }
        #expect(turned ?? .max <= 2, "turned away, the bed's right is on the left: \(String(describing: turned))")
        let moved = { () -> String in
            do { try driver.session.move("wind", to: Position(1, 0, 0), overMilliseconds: 0); return "accepted" } catch { return "\(error)" }
        }()
        #expect(moved.contains("a bed") && moved.contains("no position"), "\(moved)")
        let entry = (driver.session.status()["sources"] as? [[String: Any]] ?? []).first { $0["id"] as? String == "wind" }
        #expect(entry?["algorithm"] as? String == "soundField" && entry?["position"] == nil)
        try driver.session.remove("wind")
        let gone = (1...5).first { _ in Self.level(driver.render(blocks: 1)) < -90 }
        #expect(gone ?? .max <= 2, "silent after removal: \(String(describing: gone))")
        #expect(driver.session.status()["renderersMade"] as? Int == 0)
    }

    /// A talker of the scene's voice session set to the field takes a place
    /// of its own: heard from the next blocks on, no new renderers, and its
    /// voice activity still reported.
    @Test func aTalkerOfTheVoiceSessionChangesHowItRendersAndKeepsItsVoiceActivity() throws {
        let talk = VoiceRoom.talk(try VoiceRoom.speech("barkeep"), after: 1, total: 6)
        let driver = try Driver(VoiceRoom.room(scene: [], participants: [VoiceRoom.participant("anna", talk.signal)]))
        driver.render(blocks: 30)
        try driver.session.set("anna", key: "algorithm", value: "soundField")
        var levels: [Double] = [], talkingBlocks = 0
        for _ in 0..<300 {
            levels.append(Self.level(driver.render(blocks: 1)))
            if driver.session.status()["talking"] as? [String] == ["anna"] { talkingBlocks += 1 }
        }
        print("a talker in the field: loudest block \(levels.max()!) dBFS, talking in \(talkingBlocks) of 300 blocks")
        #expect(levels.max()! > -40)
        #expect(talkingBlocks > 50, "its voice activity is still reported")
        let entry = (driver.session.status()["sources"] as? [[String: Any]] ?? []).first { $0["id"] as? String == "anna" }
        #expect(entry?["algorithm"] as? String == "soundField")
        #expect(driver.session.status()["renderersMade"] as? Int == 0)
        // New renderers for another route still find its audio to listen to.
        try driver.session.forceRoute(.speakers)
        driver.render(blocks: 60)
        #expect(driver.session.status()["renderersMade"] as? Int == 1)
        try driver.session.remove("anna")
        driver.render(blocks: 5)
        #expect(Self.level(driver.render(blocks: 10)) < -90)
    }

    /// Bad input names the field, the value and the reason, and changes nothing.
    @Test func badInputIsRefusedAndLeavesTheRoomAsItWas() throws {
        let folder = try Folder()
        let driver = try Driver(LiveSessionTests.room(azimuth: 30))
        func message(_ call: () throws -> Void) -> String {
            do { try call(); return "accepted" } catch { return "\(error)" }
        }
        let outOfRange = message { _ = try driver.session.add(entry: "{id: bell, file: noise.wav, position: [2, 0, 0], gain: 90}",
                                                              relativeTo: folder.path) }
        #expect(outOfRange.contains("source.gain") && outOfRange.contains("90"), "\(outOfRange)")
        let missing = message { _ = try driver.session.add(entry: "{id: bell, file: nothing.wav, position: [2, 0, 0]}", relativeTo: folder.path) }
        #expect(missing.contains("not found"), "\(missing)")
        let taken = message { _ = try driver.session.add(entry: "{id: noise, file: noise.wav, position: [2, 0, 0]}", relativeTo: folder.path) }
        #expect(taken.contains("already used"), "\(taken)")
        let unknown = message { try driver.session.set("nobody", key: "rate", value: "1") }
        #expect(unknown.contains("no source \"nobody\""), "\(unknown)")
        let badRate = message { try driver.session.set("noise", key: "rate", value: "3") }
        #expect(badRate.contains("noise.rate") && badRate.contains("\"3\""), "\(badRate)")
        let badKey = message { try driver.session.set("noise", key: "colour", value: "red") }
        #expect(badKey.contains("colour"), "\(badKey)")
        let ids = (driver.session.status()["sources"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? String }
        #expect(ids == ["noise"])
        #expect(driver.session.status()["renderersMade"] as? Int == 0)
    }
}
