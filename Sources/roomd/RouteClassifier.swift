import Devices
import Spatial

extension OutputRoute {
    /// The route a sink stands for, from what PulseAudio knows of it: its
    /// channels first (a 5.1 sink is 5.1 whatever it is), then Bluetooth's
    /// profile, the active port's type, and the device's form factor.
    init(sink: SinkInfo) {
        switch sink.channels {
        case 1: self = .mono; return
        case 6: self = .surround51; return
        case 8...: self = .surround71; return
        default: break
        }
        if sink.bus == "bluetooth", let profile = sink.bluetoothProfile?.lowercased(),
           ["headset", "handsfree", "hsp", "hfp", "head_unit"].contains(where: profile.contains) {
            self = .headset
            return
        }
        switch sink.portType {
        case .headphones: self = .headphones; return
        case .headset, .handset, .handsfree, .earpiece: self = .headset; return
        case .speaker: self = sink.formFactor == "internal" ? .builtInSpeakers : .speakers; return
        case .hdmi, .tv, .spdif, .line, .car, .hifi: self = .externalSpeakers; return
        default: break
        }
        switch sink.formFactor {
        case "headphone"?: self = .headphones
        case "headset"?, "handset"?: self = .headset
        case "internal"?, "computer"?: self = .builtInSpeakers
        case "speaker"?: self = .speakers
        case "tv"?, "hifi"?, "car"?: self = .externalSpeakers
        default: self = .auto
        }
    }
}
