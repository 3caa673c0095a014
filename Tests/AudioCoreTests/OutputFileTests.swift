import AudioCore
import Foundation
import Testing

@Suite struct OutputFileTests {
    static func folder() throws -> String {
        let path = NSTemporaryDirectory() + "output-file-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A new file asked for is not written over one another writer made
    /// under its name while it was being written; forced, it is.
    @Test func aNewFileLeavesOneMadeMeanwhile() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/room.yaml"
        let mine = try OutputFile(path, policy: .document(force: false))
        try mine.write("mine")
        try "theirs".write(toFile: path, atomically: false, encoding: .utf8)
        #expect(throws: OutputFileError.self) { try mine.commit() }
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "theirs")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["room.yaml"], "no temporary file left")

        let forced = try OutputFile(path, policy: .document(force: true))
        try forced.write("mine")
        try forced.commit()
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "mine")
    }

    /// A name of 255 bytes, the longest a file may have, is written: the
    /// temporary name beside it is cut short, not refused as too long.
    @Test func theLongestNameIsWritten() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let name = String(repeating: "é", count: 124) + "xy.yaml"
        #expect(name.utf8.count == 256 - 1)
        let file = try OutputFile(folder + "/" + name, policy: .document(force: false))
        try file.write("version: 1\n")
        try file.commit()
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == [name])
    }
}
