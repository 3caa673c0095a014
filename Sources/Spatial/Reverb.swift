import COpenAL

/// The room's reverberation, as OpenAL EFX presets.
public enum ReverbPreset: String, Sendable, CaseIterable {
    /// A small room, EFX's room preset: a decay of about 0.4 s.
    case smallRoom
    /// A medium room, EFX's small castle room: a decay of about 1.2 s.
    case mediumRoom
    /// A large room, EFX's medium wooden room: a decay of about 1.5 s.
    case largeRoom
    /// A medium hall, EFX's castle hall: a decay of about 3.1 s.
    case mediumHall
    /// A large hall, EFX's concert hall: a decay of about 3.9 s.
    case largeHall
    /// A plate, EFX's generic tail: dense and bright, a decay of about 1.5 s.
    case plate
    /// A medium chamber, EFX's stone room: a decay of about 2.3 s.
    case mediumChamber
    /// A large chamber, EFX's large castle room: a decay of about 2.5 s.
    case largeChamber
    /// A cathedral, EFX's chapel: the longest, a decay of about 4.6 s.
    case cathedral

    /// EFX has no plate and no cathedral: the plate is its dense, bright
    /// generic tail, and the cathedral its chapel, the longest stone space.
    var properties: EFXEAXREVERBPROPERTIES {
        switch self {
        case .smallRoom: room_reverb_room
        case .mediumRoom: room_reverb_castle_smallroom
        case .largeRoom: room_reverb_wooden_mediumroom
        case .plate: room_reverb_generic
        case .mediumChamber: room_reverb_stoneroom
        case .largeChamber: room_reverb_castle_largeroom
        case .mediumHall: room_reverb_castle_hall
        case .largeHall: room_reverb_concerthall
        case .cathedral: room_reverb_chapel
        }
    }

    /// Seconds the late reverberation takes to fall by 60 dB at mid frequencies.
    public var decayTime: Double { Double(properties.flDecayTime) }
}

/// An EAX reverb in an auxiliary effect slot that sources send to.
final class ReverbSlot {
    /// Frames OpenAL Soft 1.19.1's reverb cross-fades over after its parameters change (its FADE_SAMPLES).
    static let fadeFrames = 128

    let slot: ALuint
    private let effect: ALuint
    private let device: LoopbackDevice

    init(device: LoopbackDevice, preset: ReverbPreset, gain: Double) throws {
        self.device = device
        (slot, effect) = try device.withContext {
            var effect: ALuint = 0, slot: ALuint = 0
            alGenEffects(1, &effect)
            try OpenALError.check("alGenEffects")
            alEffecti(effect, AL_EFFECT_TYPE, AL_EFFECT_EAXREVERB)
            let p = preset.properties
            alEffectf(effect, AL_EAXREVERB_DENSITY, p.flDensity)
            alEffectf(effect, AL_EAXREVERB_DIFFUSION, p.flDiffusion)
            alEffectf(effect, AL_EAXREVERB_GAIN, p.flGain)
            alEffectf(effect, AL_EAXREVERB_GAINHF, p.flGainHF)
            alEffectf(effect, AL_EAXREVERB_GAINLF, p.flGainLF)
            alEffectf(effect, AL_EAXREVERB_DECAY_TIME, p.flDecayTime)
            alEffectf(effect, AL_EAXREVERB_DECAY_HFRATIO, p.flDecayHFRatio)
            alEffectf(effect, AL_EAXREVERB_DECAY_LFRATIO, p.flDecayLFRatio)
            alEffectf(effect, AL_EAXREVERB_REFLECTIONS_GAIN, p.flReflectionsGain)
            alEffectf(effect, AL_EAXREVERB_REFLECTIONS_DELAY, p.flReflectionsDelay)
            alEffectf(effect, AL_EAXREVERB_LATE_REVERB_GAIN, p.flLateReverbGain)
            alEffectf(effect, AL_EAXREVERB_LATE_REVERB_DELAY, p.flLateReverbDelay)
            alEffectf(effect, AL_EAXREVERB_ECHO_TIME, p.flEchoTime)
            alEffectf(effect, AL_EAXREVERB_ECHO_DEPTH, p.flEchoDepth)
            alEffectf(effect, AL_EAXREVERB_MODULATION_TIME, p.flModulationTime)
            alEffectf(effect, AL_EAXREVERB_MODULATION_DEPTH, p.flModulationDepth)
            alEffectf(effect, AL_EAXREVERB_AIR_ABSORPTION_GAINHF, p.flAirAbsorptionGainHF)
            alEffectf(effect, AL_EAXREVERB_HFREFERENCE, p.flHFReference)
            alEffectf(effect, AL_EAXREVERB_LFREFERENCE, p.flLFReference)
            alEffectf(effect, AL_EAXREVERB_ROOM_ROLLOFF_FACTOR, p.flRoomRolloffFactor)
            alEffecti(effect, AL_EAXREVERB_DECAY_HFLIMIT, p.iDecayHFLimit)
            let code = alGetError()
            if code != AL_NO_ERROR {
                alDeleteEffects(1, &effect)
                throw OpenALError(call: "alEffect(AL_EFFECT_EAXREVERB)", code: code)
            }
            alGenAuxiliaryEffectSlots(1, &slot)
            alAuxiliaryEffectSloti(slot, AL_EFFECTSLOT_EFFECT, ALint(effect))
            alAuxiliaryEffectSlotf(slot, AL_EFFECTSLOT_GAIN, Float(gain))
            let slotCode = alGetError()
            if slotCode != AL_NO_ERROR {
                alDeleteAuxiliaryEffectSlots(1, &slot)
                alDeleteEffects(1, &effect)
                throw OpenALError(call: "alAuxiliaryEffectSloti(AL_EFFECTSLOT_EFFECT)", code: slotCode)
            }
            return (slot, effect)
        }
    }

    deinit {
        var slot = self.slot, effect = self.effect
        device.withContext {
            alDeleteAuxiliaryEffectSlots(1, &slot)
            alDeleteEffects(1, &effect)
        }
    }
}
