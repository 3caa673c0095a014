import COpenAL

#if canImport(Glibc)
import Glibc
#endif

/// How a point source's level falls with distance, as OpenAL defines it.
///
/// Every model clamps the distance to `[reference, maximum]`, so a source
/// inside the reference distance never grows louder than at the reference.
public struct DistanceModel: Sendable, Equatable {
    /// The curve the gain follows over the clamped distance `d`, in metres.
    public enum Law: String, Sendable, CaseIterable {
        /// `reference / (reference + rolloff * (d - reference))`
        case inverse
        /// `1 - rolloff * (d - reference) / (maximum - reference)`
        case linear
        /// `(d / reference) ^ -rolloff`
        case exponential
        /// No attenuation.
        case none
    }

    /// The curve the gain follows; `inverse` by default.
    public var law: Law
    /// The distance in metres at and inside which the gain is 1; 1 m by default.
    public var reference: Double
    /// The distance in metres beyond which the gain falls no further; 50 m by default.
    public var maximum: Double
    /// How steeply the gain falls beyond `reference`: 1 by default, 0 for no attenuation.
    public var rolloff: Double

    /// A distance model; the defaults are the inverse law from 1 m to 50 m with a rolloff of 1.
    public init(law: Law = .inverse, reference: Double = 1, maximum: Double = 50, rolloff: Double = 1) {
        self.law = law
        self.reference = reference
        self.maximum = maximum
        self.rolloff = rolloff
    }

    /// The gain at `distance`, as OpenAL Soft computes it for a source.
    public func gain(at distance: Double) -> Double {
        if law == .none { return 1 }
        let clamped = min(max(distance, reference), maximum)
        switch law {
        case .inverse: return reference / (reference + rolloff * (clamped - reference))
        case .linear:
            guard maximum > reference else { return 1 }
            return max(0, 1 - rolloff * (clamped - reference) / (maximum - reference))
        case .exponential: return pow(clamped / reference, -rolloff)
        case .none: return 1
        }
    }

    var alModel: ALenum {
        switch law {
        case .inverse: AL_INVERSE_DISTANCE_CLAMPED
        case .linear: AL_LINEAR_DISTANCE_CLAMPED
        case .exponential: AL_EXPONENT_DISTANCE_CLAMPED
        case .none: AL_NONE
        }
    }
}
