import AudioCore
import Testing

@Suite struct ByteCountTests {
    @Test func sizesAreReadInBinaryUnitsOfAnyCase() {
        let sizes: [(String, Int)] = [("2G", 2 << 30), ("2g", 2 << 30), ("1.5GiB", 3 << 29), (".5G", 1 << 29), ("512MB", 512 << 20),
                                      ("64k", 64 << 10), ("100", 100), ("100b", 100), ("1.", 1)]
        for (text, bytes) in sizes {
            #expect(ByteCount.parse(text) == .size(ByteCount(bytes)), "\(text)")
        }
    }

    @Test func whatIsNotADecimalSizeIsNone() {
        for text in ["", ".", "G", "1..2M", "1e3M", "0x10M", "-1G", "1 GiB", " 1G", "1_000M", "\u{FF11}M", "inf", "nan", "2T"] {
            #expect(ByteCount.parse(text) == .notASize, "\(text)")
        }
    }

    @Test func aSizeBeyondAnIntIsTooLarge() {
        #expect(ByteCount.parse("8589934592G") == .tooLarge)
        #expect(ByteCount.parse(String(repeating: "9", count: 400)) == .tooLarge)
        #expect(ByteCount.parse("8589934591G") == .size(ByteCount(8_589_934_591 << 30)))
    }
}
