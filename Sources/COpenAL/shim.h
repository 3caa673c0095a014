#ifndef C_OPENAL_SHIM_H
#define C_OPENAL_SHIM_H

/* Loopback rendering, HRTF selection and thread-local contexts are
   extensions: ask alext.h for their prototypes. */
#define AL_ALEXT_PROTOTYPES 1
#include <AL/al.h>
#include <AL/alc.h>
#include <AL/alext.h>
#include <AL/efx.h>

#endif
