#ifndef C_OPENAL_SHIM_H
#define C_OPENAL_SHIM_H

/* Loopback rendering, HRTF selection, thread-local contexts and EFX are
   extensions: ask alext.h and efx.h for their prototypes. */
#define AL_ALEXT_PROTOTYPES 1
#include <AL/al.h>
#include <AL/alc.h>
#include <AL/alext.h>
#include <AL/efx.h>
#include <AL/efx-presets.h>

/* The EFX reverb presets are brace initialisers, which Swift cannot import;
   these constants carry the ones the engine offers. */
static const EFXEAXREVERBPROPERTIES room_reverb_room = EFX_REVERB_PRESET_ROOM;
static const EFXEAXREVERBPROPERTIES room_reverb_castle_smallroom = EFX_REVERB_PRESET_CASTLE_SMALLROOM;
static const EFXEAXREVERBPROPERTIES room_reverb_wooden_mediumroom = EFX_REVERB_PRESET_WOODEN_MEDIUMROOM;
static const EFXEAXREVERBPROPERTIES room_reverb_generic = EFX_REVERB_PRESET_GENERIC;
static const EFXEAXREVERBPROPERTIES room_reverb_stoneroom = EFX_REVERB_PRESET_STONEROOM;
static const EFXEAXREVERBPROPERTIES room_reverb_castle_largeroom = EFX_REVERB_PRESET_CASTLE_LARGEROOM;
static const EFXEAXREVERBPROPERTIES room_reverb_castle_hall = EFX_REVERB_PRESET_CASTLE_HALL;
static const EFXEAXREVERBPROPERTIES room_reverb_concerthall = EFX_REVERB_PRESET_CONCERTHALL;
static const EFXEAXREVERBPROPERTIES room_reverb_chapel = EFX_REVERB_PRESET_CHAPEL;

#endif
