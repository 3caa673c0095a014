/// A size in bytes, written the way people read memory: binary units.
public struct ByteCount: Sendable, Equatable, Comparable, CustomStringConvertible {
    /// The size in bytes.
    public var bytes: Int

    /// A size of `bytes` bytes.
    public init(_ bytes: Int) { self.bytes = bytes }

    /// Reads `2G`, `512M`, `64K`, `1.5GiB` or a plain number of bytes; the units are binary.
    public init?(parsing text: String) {
        let units: [(suffixes: [String], scale: Double)] = [
            (["GiB", "GB", "G"], 1_073_741_824), (["MiB", "MB", "M"], 1_048_576), (["KiB", "KB", "K"], 1_024), (["B", ""], 1),
        ]
        for (suffixes, scale) in units {
            for suffix in suffixes where text.hasSuffix(suffix) {
                guard let number = Double(text.dropLast(suffix.count)), number.isFinite, number >= 0,
                      number * scale < Double(Int.max) else { return nil }
                self.bytes = Int((number * scale).rounded())
                return
            }
        }
        return nil
    }

    /// The size in three figures at most, in binary units: `188 KiB`, `20.6 GiB`.
    public var description: String {
        for (unit, scale) in [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] where bytes >= scale {
            let value = Double(bytes) / Double(scale)
            // Three figures at most: 188 KiB, 11 MiB, 20.6 GiB.
            let tenths = (value * 10).rounded()
            return value >= 100 || tenths.truncatingRemainder(dividingBy: 10) == 0
                ? "\(Int(value.rounded())) \(unit)" : "\(tenths / 10) \(unit)"
        }
        return bytes == 1 ? "1 byte" : "\(bytes) bytes"
    }

    /// Whether `left` is fewer bytes than `right`.
    public static func < (left: ByteCount, right: ByteCount) -> Bool { left.bytes < right.bytes }
}
