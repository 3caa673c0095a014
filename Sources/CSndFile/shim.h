#ifndef C_SNDFILE_SHIM_H
#define C_SNDFILE_SHIM_H

#include <sndfile.h>

#endif
