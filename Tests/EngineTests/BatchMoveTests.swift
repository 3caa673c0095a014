import Engine
import Foundation
import Scene
import Spatial
import Testing

/// Many sources moved in one call (`moves`), in a session rendered by hand.
@Suite struct BatchMoveTests {
    typealias Driver = LiveSessionTests.Driver

    /// A source at the left and one ahead, looping noise.
    static func twoSources() -> Room {
        Fixture.room([Fixture.point(LiveSessionTests.noise(), at: .fixed(Position(-2, 0, 0)), id: "left", loop: true),
                      Fixture.point(LiveSessionTests.noise(seed: 5), at: .fixed(Position(0, 0, -4)), id: "ahead", loop: true)])
    }

    static func position(_ id: String, in session: RoomSession) -> [Double]? {
        (session.status()["sources"] as? [[String: Any]])?.first { $0["id"] as? String == id }?["position"] as? [Double]
    }

    /// Both glides start at the same frame: half their time on, each is exactly halfway.
    @Test func everyGlideStartsAtTheSameFrame() throws {
        let driver = try Driver(Self.twoSources())
        driver.render(blocks: 7)
        try driver.session.move(["left": Position(2, 0, 0), "ahead": Position(0, 0, 4)], overMilliseconds: 1_000)
        driver.render(blocks: 50)
        #expect(Self.position("left", in: driver.session) == [0, 0, 0])
        #expect(Self.position("ahead", in: driver.session) == [0, 0, 0])
    }

    /// A batch with one source that cannot move moves none, and says which
    /// (the first in id order) and how many more.
    @Test func aBatchWithABadIdMovesNothing() throws {
        let driver = try Driver(Self.twoSources())
        driver.render(blocks: 2)
        #expect {
            try driver.session.move(["left": Position(2, 0, 0), "zed": .zero, "bart": .zero], overMilliseconds: 0)
        } throws: { error in
            guard let refusal = error as? RoomSession.MovesRefusal else { return false }
            return refusal.id == "bart" && refusal.othersRefused == 1
                && "\(refusal)" == #"no source "bart" in this room; it has left, ahead (and 1 more refused); nothing moved"#
        }
        driver.render(blocks: 2)
        #expect(Self.position("left", in: driver.session) == [-2, 0, 0])
    }

    /// A source that joined on keyframes glides from where it is on them,
    /// counted from when it joined, without a jump.
    @Test func aJoinedSourceOnKeyframesGlidesFromWhereItIs() throws {
        let folder = try JoinedSourceTests.Folder()
        let driver = try Driver(JoinedSourceTests.quietRoom())
        driver.render(blocks: 50)
        try driver.session.add(entry: "{id: bell, file: noise.wav, loop: true, "
                               + "motion: {keyframes: [{time: 0, position: [-2, 0, 0]}, {time: 1, position: [2, 0, 0]}]}}",
                               relativeTo: folder.path)
        driver.render(blocks: 25)
        let before = try #require(Self.position("bell", in: driver.session))
        try driver.session.move(["bell": Position(0, 0, -3)], overMilliseconds: 500)
        #expect(before == [-1, 0, 0], "a quarter of the way, a quarter of a second after it joined")
        #expect(Self.position("bell", in: driver.session) == before)
    }
}
