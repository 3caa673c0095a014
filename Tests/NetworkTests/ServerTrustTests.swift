import Foundation
import Network
import Testing

/// Trust on first use: the first certificate is remembered in a file only
/// its owner reads, a different one later is refused naming both, and a
/// pinned fingerprint overrides what is remembered.
@Suite struct ServerTrustTests {
    let folder = NSTemporaryDirectory() + "trust-" + UUID().uuidString.prefix(8)
    var trust: ServerTrust { ServerTrust(storePath: folder + "/roomd/known_servers") }
    let first = String(repeating: "a1", count: 32), second = String(repeating: "b2", count: 32)

    @Test func theFirstIsRememberedAndAChangeIsRefusedNamingBoth() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(throws: Never.self) { try trust.check(first, server: "voice.example.org:64738", pinned: nil).get() }
        #expect(throws: Never.self) { try trust.check(second, server: "other.example.org:64738", pinned: nil).get() }
        #expect(throws: Never.self) { try trust.check(first, server: "voice.example.org:64738", pinned: nil).get() }
        let refusal = try #require(trust.check(second, server: "voice.example.org:64738", pinned: nil).failure)
        print(refusal)
        #expect(refusal.description.hasPrefix("voice.example.org:64738: the server's certificate changed"))
        #expect(refusal.description.contains("was SHA-256 \(first)") && refusal.description.contains("it is \(second) now"))
        #expect(refusal.description.contains(trust.storePath))

        let text = try String(contentsOfFile: trust.storePath, encoding: .utf8)
        #expect(text == "other.example.org:64738 \(second)\nvoice.example.org:64738 \(first)\n")
        let file = try FileManager.default.attributesOfItem(atPath: trust.storePath)
        let dir = try FileManager.default.attributesOfItem(atPath: folder + "/roomd")
        #expect(file[.posixPermissions] as? Int == 0o600 && dir[.posixPermissions] as? Int == 0o700)
    }

    @Test func aPinnedFingerprintDecidesAlone() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(throws: Never.self) { try trust.check(first, server: "h:1", pinned: first).get() }
        let refusal = try #require(trust.check(second, server: "h:1", pinned: first).failure)
        #expect(refusal.description == "h:1: its certificate's SHA-256 is \(second), not the pinned \(first)")
        #expect(!FileManager.default.fileExists(atPath: trust.storePath), "a pinned server is not remembered")
    }

    @Test func aStoreThatCannotBeWrittenRefusesWithTheReason() throws {
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        // A file where the folder should be.
        FileManager.default.createFile(atPath: folder + "/roomd", contents: Data())
        let refusal = try #require(trust.check(first, server: "h:1", pinned: nil).failure)
        #expect(refusal.description.hasPrefix("h:1: cannot keep its certificate's fingerprint in \(trust.storePath)"))
    }

    @Test func theFingerprintIsTheSHA256OfTheCertificatesBytes() {
        // SHA-256 of the three bytes "abc", the standard's own example.
        #expect(ServerTrust.fingerprint(ofDER: Array("abc".utf8)) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }
}

private extension Result {
    var failure: Failure? { if case .failure(let failure) = self { failure } else { nil } }
}
