import CPulse

/// What the engine needs to know about an output device to pick a rendering
/// (headphones get binaural, speakers get panning, surround gets a bed).
public struct SinkInfo: Sendable, Equatable {
    /// The sink's PulseAudio name, by which requests address it.
    public let name: String
    /// The sink's name for people, as the server gives it; empty when it has none.
    public let description: String
    /// Channels of the sink's sample spec.
    public let channels: Int
    /// The sink's sample rate in Hz.
    public let sampleRate: Int
    /// The port the sink plays through now; nil for sinks without ports (null sinks).
    public let activePort: String?
    /// The kind of the active port; `unknown` without one.
    public let portType: PortType
    /// `device.form_factor`: "headphone", "speaker", "headset", "internal", ...
    public let formFactor: String?
    /// `device.bus`: "usb", "bluetooth", "pci", ...
    public let bus: String?
    /// `bluetooth.protocol`, or PipeWire's `api.bluez5.profile`: "a2dp_sink", "headset_head_unit", ...
    public let bluetoothProfile: String?

    /// A sink described field by field; the port and device properties are unknown unless given.
    public init(name: String, description: String, channels: Int, sampleRate: Int, activePort: String? = nil,
                portType: PortType = .unknown, formFactor: String? = nil, bus: String? = nil,
                bluetoothProfile: String? = nil) {
        self.name = name
        self.description = description
        self.channels = channels
        self.sampleRate = sampleRate
        self.activePort = activePort
        self.portType = portType
        self.formFactor = formFactor
        self.bus = bus
        self.bluetoothProfile = bluetoothProfile
    }

    init(_ info: pa_sink_info) {
        func property(_ key: String) -> String? { pa_proplist_gets(info.proplist, key).map { String(cString: $0) } }
        let port = info.active_port?.pointee
        self.init(name: String(cString: info.name),
                  description: info.description.map { String(cString: $0) } ?? "",
                  channels: Int(info.sample_spec.channels),
                  sampleRate: Int(info.sample_spec.rate),
                  activePort: port.map { String(cString: $0.name) },
                  portType: port.map { PortType(pulseType: $0.type) } ?? .unknown,
                  formFactor: property("device.form_factor"),
                  bus: property("device.bus"),
                  bluetoothProfile: property("bluetooth.protocol") ?? property("api.bluez5.profile"))
    }
}

/// What kind of jack or connection a port is (`pa_device_port_type_t`, libpulse 14+).
public enum PortType: String, Sendable, CaseIterable {
    // In the order of the C enum's values, 0 to 22, which `init(pulseType:)` relies on.
    /// A type the server does not say, or one newer than this list.
    case unknown
    /// An auxiliary jack.
    case aux
    /// Loudspeakers.
    case speaker
    /// A headphone jack.
    case headphones
    /// A line-level jack.
    case line
    /// A microphone.
    case mic
    /// A headset: headphones with a microphone.
    case headset
    /// A phone handset.
    case handset
    /// A phone's earpiece.
    case earpiece
    /// An S/PDIF digital link.
    case spdif
    /// HDMI.
    case hdmi
    /// A TV.
    case tv
    /// A radio.
    case radio
    /// A video connection.
    case video
    /// USB.
    case usb
    /// Bluetooth.
    case bluetooth
    /// A portable device.
    case portable
    /// A hands-free device.
    case handsfree
    /// A car's audio.
    case car
    /// A hi-fi system.
    case hifi
    /// A phone.
    case phone
    /// A network connection.
    case network
    /// An analog connection.
    case analog

    /// A type newer than this list reads as unknown.
    init(pulseType: UInt32) {
        let all = PortType.allCases
        self = pulseType < all.count ? all[Int(pulseType)] : .unknown
    }
}
