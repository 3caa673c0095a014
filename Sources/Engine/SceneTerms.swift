// A scene file's words for its room and sources, turned into the
// renderer's types. Scene knows nothing of the renderer; this is the one
// place the two vocabularies meet.

/// How the engine renders a source, from its mode, its algorithm and its file.
public enum SourceRendering: Sendable, Equatable {
    /// A point in the world, through OpenAL with this algorithm (nil: the route's).
    case point(RenderAlgorithm?)
    /// A bed in the world, through OpenAL with this algorithm (nil: the route's).
    case bed(RenderAlgorithm?)
    /// The file's channels straight to the output's, mixed by the engine.
    case passthrough
}

extension SourceDescription {
    /// How a file of `channels` channels renders as this source.
    public func rendering(channels: Int) -> SourceRendering {
        let requested: RenderAlgorithm? = switch algorithm {
        case .auto, .passthrough: nil
        case .hrtf: .hrtf
        case .panning: .panning
        case .soundField: .soundField
        }
        return switch shape(channels: channels) {
        case .point: .point(requested)
        case .bed: .bed(requested)
        case .passthrough: .passthrough
        }
    }
}

extension OutputRoute {
    /// The route a scene's `output.route` names.
    public init(_ name: RouteName) {
        self = switch name {
        case .auto: .auto
        case .headphones: .headphones
        case .headset: .headset
        case .speakers: .speakers
        case .builtInSpeakers: .builtInSpeakers
        case .externalSpeakers: .externalSpeakers
        case .surround51: .surround51
        case .surround71: .surround71
        case .mono: .mono
        }
    }
}

extension RouteName {
    /// The scene file's word for `route`, which `save` writes.
    public init(_ route: OutputRoute) {
        self = switch route {
        case .auto: .auto
        case .headphones: .headphones
        case .headset: .headset
        case .speakers: .speakers
        case .builtInSpeakers: .builtInSpeakers
        case .externalSpeakers: .externalSpeakers
        case .surround51: .surround51
        case .surround71: .surround71
        case .mono: .mono
        }
    }
}

extension DistanceModel {
    /// The model a scene's `distance` section describes.
    public init(_ attenuation: DistanceAttenuation) {
        let law: Law = switch attenuation.law {
        case .inverse: .inverse
        case .linear: .linear
        case .exponential: .exponential
        case .none: .none
        }
        self.init(law: law, reference: attenuation.reference, maximum: attenuation.maximum, rolloff: attenuation.rolloff)
    }
}

extension ReverbPreset {
    /// The reverb a scene's `reverb.preset` names.
    public init(_ preset: RoomReverb.Preset) {
        self = switch preset {
        case .smallRoom: .smallRoom
        case .mediumRoom: .mediumRoom
        case .largeRoom: .largeRoom
        case .mediumHall: .mediumHall
        case .largeHall: .largeHall
        case .plate: .plate
        case .mediumChamber: .mediumChamber
        case .largeChamber: .largeChamber
        case .cathedral: .cathedral
        }
    }
}
