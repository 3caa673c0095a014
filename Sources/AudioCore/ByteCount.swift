/// A size in bytes, written the way people read memory: binary units.
public struct ByteCount: Sendable, Equatable, Comparable, CustomStringConvertible {
    /// The size in bytes.
    public var bytes: Int

    /// A size of `bytes` bytes.
    public init(_ bytes: Int) { self.bytes = bytes }

    /// What a size written as text says.
    public enum Parsed: Sendable, Equatable {
        /// A size that fits in `Int`.
        case size(ByteCount)
        /// A number of bytes, with or without a unit, too large for `Int`.
        case tooLarge
        /// Not a number of bytes with a known unit.
        case notASize
    }

    /// Reads `2G`, `512M`, `64k`, `1.5GiB` or a plain number of bytes; the
    /// units are binary, and their case does not matter.
    public static func parse(_ text: String) -> Parsed {
        let units: [(suffixes: [String], scale: Double)] = [
            (["GIB", "GB", "G"], 1_073_741_824), (["MIB", "MB", "M"], 1_048_576), (["KIB", "KB", "K"], 1_024), (["B", ""], 1),
        ]
        let upper = text.uppercased()
        for (suffixes, scale) in units {
            for suffix in suffixes where upper.hasSuffix(suffix) {
                // Swift reads 0x10 and 1e3 as numbers; a size is written in decimal.
                let digits = text.dropLast(suffix.count)
                guard digits.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }), let number = Double(digits) else {
                    return .notASize
                }
                guard number * scale < Double(Int.max) else { return .tooLarge }
                return .size(ByteCount(Int((number * scale).rounded())))
            }
        }
        return .notASize
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
