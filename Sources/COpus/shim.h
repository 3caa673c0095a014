#ifndef C_OPUS_SHIM_H
#define C_OPUS_SHIM_H

#include <opus/opus.h>

/* opus_encoder_ctl is variadic, which Swift cannot call: one wrapper per shape of request. */
static inline int copus_encoder_set_int(OpusEncoder *encoder, int request, opus_int32 value) {
    return opus_encoder_ctl(encoder, request, value);
}

#endif
