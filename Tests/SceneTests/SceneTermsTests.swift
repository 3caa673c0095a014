import Engine
import Testing

/// The scene file's words and the renderer's values are separate types; a
/// word must reach the value of the same name, and `save` must write back
/// the word it read, or a saved room would reload as another.
@Suite struct SceneTermsTests {
    @Test func everyRouteWordReachesTheRouteOfItsName() {
        #expect(RouteName.allCases.count == OutputRoute.allCases.count)
        for name in RouteName.allCases {
            #expect(OutputRoute(name).rawValue == name.rawValue)
            #expect(RouteName(OutputRoute(name)) == name)
        }
    }

    @Test func everyReverbAndDistanceWordReachesTheValueOfItsName() {
        #expect(RoomReverb.Preset.allCases.count == ReverbPreset.allCases.count)
        for preset in RoomReverb.Preset.allCases { #expect(ReverbPreset(preset).rawValue == preset.rawValue) }
        #expect(DistanceAttenuation.Law.allCases.count == DistanceModel.Law.allCases.count)
        for law in DistanceAttenuation.Law.allCases {
            let model = DistanceModel(DistanceAttenuation(law: law, reference: 2, maximum: 30, rolloff: 0.5))
            #expect(model.law.rawValue == law.rawValue)
            #expect(model.reference == 2 && model.maximum == 30 && model.rolloff == 0.5)
        }
    }

    @Test func everyAlgorithmWordRendersAsTheAlgorithmOfItsName() {
        for algorithm in SourceAlgorithm.allCases {
            let source = SourceDescription(id: "s", audioPath: "s.wav", mode: .point, algorithm: algorithm)
            let expected: SourceRendering = switch algorithm {
            case .auto: .point(nil)
            case .passthrough: .passthrough
            case .hrtf, .panning, .soundField: .point(RenderAlgorithm(rawValue: algorithm.rawValue))
            }
            #expect(source.rendering(channels: 1) == expected)
        }
    }
}
