#ifndef C_PULSE_SHIM_H
#define C_PULSE_SHIM_H

#include <pulse/pulseaudio.h>

#endif
