#ifndef C_SPEEXDSP_SHIM_H
#define C_SPEEXDSP_SHIM_H

#include <speex/speex_resampler.h>
#include <speex/speex_echo.h>
#include <speex/speex_preprocess.h>
#include <speex/speex_jitter.h>

#endif
