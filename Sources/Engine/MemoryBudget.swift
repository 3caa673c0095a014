import AudioCore
import Devices
import Scene

/// How much decoded audio a room may hold. Audio is checked against it
/// from each file's header before anything is decoded, so a small file that
/// decodes to gigabytes is refused with the sizes, not discovered by the
/// kernel's out-of-memory killer.
public struct MemoryBudget: Sendable, Equatable, CustomStringConvertible {
    /// The most decoded audio, in bytes.
    public var bytes: Int

    /// A budget of `bytes`.
    public init(bytes: Int) { self.bytes = bytes }

    /// The smallest budget a command line may give.
    public static let minimum = MemoryBudget(bytes: 1 << 20)

    /// Why a command line's budget was refused.
    public struct ParseError: Error, CustomStringConvertible {
        /// What is wrong with the size given, for the command line's refusal.
        public var description: String
    }

    /// `2G`, `512M`, `1.5GiB` or bytes, as a command line gives it; at least 1 MiB.
    public static func parse(_ text: String) throws(ParseError) -> MemoryBudget {
        switch ByteCount.parse(text) {
        case .notASize:
            throw ParseError(description: "expected a size such as 2G, 512M, 1.5GiB or a number of bytes")
        case .tooLarge:
            throw ParseError(description: "more bytes than a budget can count (\(ByteCount(Int.max)))")
        case .size(let size) where size.bytes < minimum.bytes:
            throw ParseError(description: "\(size.bytes) byte\(size.bytes == 1 ? "" : "s") is less than the smallest budget, \(minimum) (\(minimum.bytes) bytes)")
        case .size(let size):
            return MemoryBudget(bytes: size.bytes)
        }
    }

    /// 2 GiB: an hour of 48 kHz stereo takes 1.3 GiB.
    public static let standard = MemoryBudget(bytes: 2 << 30)

    /// The budget in binary units, such as `2 GiB`.
    public var description: String { "\(ByteCount(bytes))" }

    /// A file the room would decode, as its header describes it.
    struct Demand {
        var path: String
        /// Where the scene names it, for the refusal.
        var field: FieldLocation
        var channels: Int
        var sampleRate: Int
        var frames: Int

        /// nil when the header cannot be read: decoding then reports why.
        init?(path: String, field: FieldLocation) {
            guard let header = try? AudioFileReader.header(path: path) else { return nil }
            self.path = path
            self.field = field
            (channels, sampleRate, frames) = header
        }

        /// Nothing for a file whose header does not say how long it is (a
        /// FLAC written as a stream): its decoder stops at what the budget leaves.
        var bytes: Int {
            guard frames != Int(Int64.max) else { return 0 }
            return AudioFileReader.decodedBytes(channels: channels, sampleRate: sampleRate, frames: frames, engineRate: Room.sampleRate)
        }

        /// What the file is, for a refusal.
        var size: String {
            let seconds = Double(frames) / Double(sampleRate)
            let length = seconds >= 60 ? "\(Int(seconds / 60)) min \(Int(seconds) % 60) s" : "\(Int(seconds.rounded(.up))) s"
            return "\(ByteCount(bytes)) (\(length), \(channels) channel\(channels == 1 ? "" : "s") at \(sampleRate) Hz)"
        }
    }

    /// Refuses `demands` (distinct files) when with `held` bytes already
    /// decoded they would come to more than the budget, naming the largest.
    /// Returns what each may decode to, whatever its header claims.
    func admit(_ demands: [Demand], held: Int = 0) throws -> [String: Int] {
        let wanted = demands.reduce(0) { $0 + $1.bytes }
        let total = ByteCount(held + wanted)
        if held + wanted > bytes, let largest = demands.max(by: { $0.bytes < $1.bytes }) {
            let reason = if held > 0 {
                "decodes to \(largest.size); with the \(ByteCount(held)) the room holds that comes to \(total), over the memory budget of \(self)"
            } else if demands.count > 1 {
                "decodes to \(largest.size); the room's audio would come to \(total), over the memory budget of \(self)"
            } else {
                "decodes to \(largest.size), over the memory budget of \(self)"
            }
            throw SceneValidationError(issues: [largest.field.issue(value: largest.path, reason)])
        }
        return Dictionary(demands.map { ($0.path, bytes - held - (wanted - $0.bytes)) }, uniquingKeysWith: min)
    }

    /// The bytes `buffers` take, each storage once however many share it.
    static func bytes(of buffers: [[Float]]) -> Int {
        var seen = Set<UnsafeRawPointer>()
        return buffers.reduce(0) { total, buffer in
            buffer.withUnsafeBufferPointer { samples in
                guard let start = samples.baseAddress, seen.insert(UnsafeRawPointer(start)).inserted else { return total }
                return total + samples.count * MemoryLayout<Float>.size
            }
        }
    }

    /// The bytes one buffer takes.
    static func bytes(_ buffer: [Float]) -> Int { buffer.count * MemoryLayout<Float>.size }
}
