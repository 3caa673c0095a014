#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loudspeaker a channel feeds.
public enum Speaker: String, Sendable, CaseIterable {
    /// Front left: 30 degrees left of ahead in stereo and surround, 45 in quad.
    case frontLeft
    /// Front right: 30 degrees right of ahead in stereo and surround, 45 in quad.
    case frontRight
    /// Front centre, straight ahead; a mono output's only speaker.
    case frontCenter
    /// The low-frequency effects channel (LFE), a subwoofer with no direction.
    case lowFrequency
    /// Side left: 110 degrees left in 5.1, 90 in 7.1.
    case sideLeft
    /// Side right: 110 degrees right in 5.1, 90 in 7.1.
    case sideRight
    /// Back left: 135 degrees left in quad, 150 in 7.1.
    case backLeft
    /// Back right: 135 degrees right in quad, 150 in 7.1.
    case backRight

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
    /// One channel, played from the centre.
    case mono
    /// Two channels: left, right.
    case stereo
    /// Four channels: front left and right, back left and right.
    case quad
    /// Six channels (`5.1`): left, right, centre, LFE, side left, side right.
    case surround51 = "5.1"
    /// Eight channels (`7.1`): left, right, centre, LFE, back left and right, side left and right.
    case surround71 = "7.1"

    /// The speaker each channel feeds, in channel order.
    public var speakers: [Speaker] {
        switch self {
        case .mono: [.frontCenter]
        case .stereo: [.frontLeft, .frontRight]
        case .quad: [.frontLeft, .frontRight, .backLeft, .backRight]
        case .surround51: [.frontLeft, .frontRight, .frontCenter, .lowFrequency, .sideLeft, .sideRight]
        case .surround71: [.frontLeft, .frontRight, .frontCenter, .lowFrequency, .backLeft, .backRight, .sideLeft, .sideRight]
        }
    }

    /// Channels per frame: 1, 2, 4, 6 or 8.
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
    /// The highest order the engine reads: 3, a field of 16 channels.
    public static let maximumOrder = 3

    /// Channels of a full-sphere field of `order`.
    public static func channelCount(order: Int) -> Int { (order + 1) * (order + 1) }

    /// The order whose field has `channels` channels, if one does.
    public static func order(channels: Int) -> Int? {
        (1...maximumOrder).first { channelCount(order: $0) == channels }
    }
}
