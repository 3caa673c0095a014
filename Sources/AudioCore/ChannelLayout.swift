#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loudspeaker a channel feeds.
public enum Speaker: String, Sendable, CaseIterable {
    case frontLeft, frontRight, frontCenter, lowFrequency, sideLeft, sideRight, backLeft, backRight

    /// Short name for summaries.
    public var label: String {
        switch self {
        case .frontLeft: "left"
        case .frontRight: "right"
        case .frontCenter: "center"
        case .lowFrequency: "LFE"
        case .sideLeft: "side left"
        case .sideRight: "side right"
        case .backLeft: "back left"
        case .backRight: "back right"
        }
    }
}

/// The channels of an output, in the order WAV files (WAVE_FORMAT_EXTENSIBLE) store them.
public enum ChannelLayout: String, Sendable, CaseIterable {
    case mono
    case stereo
    case quad
    case surround51 = "5.1"
    case surround71 = "7.1"

    public var speakers: [Speaker] {
        switch self {
        case .mono: [.frontCenter]
        case .stereo: [.frontLeft, .frontRight]
        case .quad: [.frontLeft, .frontRight, .backLeft, .backRight]
        case .surround51: [.frontLeft, .frontRight, .frontCenter, .lowFrequency, .sideLeft, .sideRight]
        case .surround71: [.frontLeft, .frontRight, .frontCenter, .lowFrequency, .backLeft, .backRight, .sideLeft, .sideRight]
        }
    }

    public var channelCount: Int { speakers.count }

    /// Where each channel's speaker stands, in degrees (0 ahead, +90 right),
    /// at the standard angles (ITU-R BS.775 for 5.1 and 7.1). The LFE
    /// channel has no direction of its own; it is placed ahead.
    public var azimuths: [Double] {
        switch self {
        case .mono: [0]
        case .stereo: [-30, 30]
        case .quad: [-45, 45, -135, 135]
        case .surround51: [-30, 30, 0, 0, -110, 110]
        case .surround71: [-30, 30, 0, 0, -150, 150, -90, 90]
        }
    }

    /// Unit vectors toward each channel's speaker, in OpenAL's axes (+X
    /// right, +Y up, -Z ahead).
    public var directions: [SIMD3<Double>] {
        azimuths.map { degrees in
            let radians = degrees * .pi / 180
            return SIMD3(sin(radians), 0, -cos(radians))
        }
    }

    /// Names for summaries; a mono channel is just "mono".
    public var channelLabels: [String] { self == .mono ? ["mono"] : speakers.map(\.label) }
}

/// Higher-order ambisonics in AmbiX form: ACN channel order, SN3D normalisation.
public enum Ambisonics {
    public static let maximumOrder = 3

    /// Channels of a full-sphere field of `order`.
    public static func channelCount(order: Int) -> Int { (order + 1) * (order + 1) }

    /// The order whose field has `channels` channels, if one does.
    public static func order(channels: Int) -> Int? {
        (1...maximumOrder).first { channelCount(order: $0) == channels }
    }
}
