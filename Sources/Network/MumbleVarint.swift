/// Mumble's own variable-length integer, which its voice packets and UDP
/// pings carry (not protobuf's varint). The first byte's leading bits say how
/// many bytes follow; the value is right-aligned and big-endian, and small
/// negative numbers have forms of their own:
///
/// | first byte | then | value |
/// | --- | --- | --- |
/// | `0xxxxxxx` | nothing | 7 bits |
/// | `10xxxxxx` | 1 byte | 14 bits |
/// | `110xxxxx` | 2 bytes | 21 bits |
/// | `1110xxxx` | 3 bytes | 28 bits |
/// | `111100__` | 4 bytes | 32 bits |
/// | `111101__` | 8 bytes | 64 bits |
/// | `111110__` | a varint | that varint's bitwise complement |
/// | `111111xx` | nothing | `~xx`, -1 to -4 |
public enum MumbleVarint {
    /// The most bytes one value takes: a prefix and 8 bytes.
    public static let maxSize = 9

    /// The value at `position` in `bytes`, with `position` moved past it; nil, with `position` where
    /// it was, when the bytes end inside the value. Every byte string is some value, so running
    /// out is the only failure.
    public static func read<Bytes: RandomAccessCollection>(from bytes: Bytes, at position: inout Bytes.Index) -> Int64?
        where Bytes.Element == UInt8 {
        var index = position
        // A loop rather than recursion: a hostile run of complement prefixes must not grow the stack.
        var complemented = false
        while index != bytes.endIndex {
            let first = bytes[index]
            bytes.formIndex(after: &index)
            let high: UInt64, following: Int
            switch first {
            case 0x00..<0x80: (high, following) = (UInt64(first), 0)
            case 0x80..<0xC0: (high, following) = (UInt64(first & 0x3F), 1)
            case 0xC0..<0xE0: (high, following) = (UInt64(first & 0x1F), 2)
            case 0xE0..<0xF0: (high, following) = (UInt64(first & 0x0F), 3)
            case 0xF0..<0xF4: (high, following) = (0, 4)
            case 0xF4..<0xF8: (high, following) = (0, 8)
            case 0xF8..<0xFC:
                complemented.toggle()
                continue
            default:
                let value = ~UInt64(first & 0x03)
                position = index
                return Int64(bitPattern: complemented ? ~value : value)
            }
            guard bytes.distance(from: index, to: bytes.endIndex) >= following else { return nil }
            var value = high
            for _ in 0..<following {
                value = value << 8 | UInt64(bytes[index])
                bytes.formIndex(after: &index)
            }
            position = index
            return Int64(bitPattern: complemented ? ~value : value)
        }
        return nil
    }

    /// Appends `value` to `bytes` in its shortest form, as Mumble writes it: negative numbers down to
    /// -2³² as the complement of a positive one, others as their 64-bit pattern.
    public static func append(_ value: Int64, to bytes: inout [UInt8]) {
        var magnitude = UInt64(bitPattern: value)
        if value < 0 && value >= -0x1_0000_0000 {
            magnitude = ~magnitude
            if magnitude <= 3 {
                bytes.append(0xFC | UInt8(magnitude))
                return
            }
            bytes.append(0xF8)
        }
        let prefix: UInt8, following: Int
        switch magnitude {
        case ..<0x80: (prefix, following) = (0x00, 0)
        case ..<0x4000: (prefix, following) = (0x80, 1)
        case ..<0x20_0000: (prefix, following) = (0xC0, 2)
        case ..<0x1000_0000: (prefix, following) = (0xE0, 3)
        case ..<0x1_0000_0000: (prefix, following) = (0xF0, 4)
        default: (prefix, following) = (0xF4, 8)
        }
        // The short forms keep the value's top bits in the prefix byte; the 32- and 64-bit forms do not.
        if following < 4 {
            bytes.append(prefix | UInt8(truncatingIfNeeded: magnitude >> (8 * following)))
        } else {
            bytes.append(prefix)
        }
        for shift in stride(from: 8 * (following - 1), through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: magnitude >> shift))
        }
    }
}
