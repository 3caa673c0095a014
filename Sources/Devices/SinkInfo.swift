import CPulse

/// What the engine needs to know about an output device to pick a rendering
/// (headphones get binaural, speakers get panning, surround gets a bed).
public struct SinkInfo: Sendable, Equatable {
    public let name: String
    public let description: String
    public let channels: Int
    public let sampleRate: Int
    /// The port the sink plays through now; nil for sinks without ports (null sinks).
    public let activePort: String?
    public let portType: PortType
    /// `device.form_factor`: "headphone", "speaker", "headset", "internal", ...
    public let formFactor: String?
    /// `device.bus`: "usb", "bluetooth", "pci", ...
    public let bus: String?
    /// `bluetooth.protocol`, or PipeWire's `api.bluez5.profile`: "a2dp_sink", "headset_head_unit", ...
    public let bluetoothProfile: String?

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
    case unknown, aux, speaker, headphones, line, mic, headset, handset, earpiece, spdif, hdmi, tv, radio,
         video, usb, bluetooth, portable, handsfree, car, hifi, phone, network, analog

    /// A type newer than this list reads as unknown.
    init(pulseType: UInt32) {
        let all = PortType.allCases
        self = pulseType < all.count ? all[Int(pulseType)] : .unknown
    }
}
