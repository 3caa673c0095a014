#include "MixKernels.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define WIDE __attribute__((target("avx2,fma")))

/// Whether this processor runs AVX2 and FMA, worked out once. Threads that
/// race to it all store the same answer.
static int has_avx2_fma(void) {
    static int answer = -1;
    int value = __atomic_load_n(&answer, __ATOMIC_RELAXED);
    if (value < 0) {
        __builtin_cpu_init();
        value = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
        __atomic_store_n(&answer, value, __ATOMIC_RELAXED);
    }
    return value;
}
#else
/* Elsewhere the plain copy, which the compiler vectorises for the target, is the only one run. */
#define WIDE
static int has_avx2_fma(void) { return 0; }
#endif

/* Each loop is written once, inlined into a plain and an AVX2 + FMA copy. */

static inline __attribute__((always_inline))
void add_to_bins(float *restrict steady, float *restrict ramping, int frames, const float *restrict signal,
                 const int *bins, const float *starts, const float *changes, int count) {
    for (int entry = 0; entry < count; entry++) {
        float *restrict row = steady + (long)bins[entry] * frames;
        const float start = starts[entry], change = changes[entry];
        if (change == 0) {
            for (int frame = 0; frame < frames; frame++) row[frame] += start * signal[frame];
        } else {
            float *restrict ramp = ramping + (long)bins[entry] * frames;
            for (int frame = 0; frame < frames; frame++) {
                row[frame] += start * signal[frame];
                ramp[frame] += change * signal[frame];
            }
        }
    }
}

static inline __attribute__((always_inline))
void bin_into_field(float *restrict field, int frames, float *restrict steady, float *restrict ramping,
                    const float *restrict ramp, const float *restrict harmonics) {
    /* A frame of the third-order field is two AVX registers. */
    for (int frame = 0; frame < frames; frame++) {
        const float value = steady[frame] + ramp[frame] * ramping[frame];
        float *restrict out = field + (long)frame * MIX_FIELD_COMPONENTS;
        for (int component = 0; component < MIX_FIELD_COMPONENTS; component++) out[component] += harmonics[component] * value;
    }
    memset(steady, 0, sizeof(float) * (size_t)frames);
    memset(ramping, 0, sizeof(float) * (size_t)frames);
}

static inline __attribute__((always_inline))
void convolve(float *restrict output, int outputs, int frames, float *restrict history, int inputs,
              const float *restrict filters, int taps) {
    const int kept = taps - 1, length = kept + frames;
    float sums[outputs][frames];
    memset(sums, 0, sizeof(sums));
    for (int input = 0; input < inputs; input++) {
        const float *restrict channel = history + (long)input * length;
        for (int out = 0; out < outputs; out++) {
            const float *restrict filter = filters + ((long)input * outputs + out) * taps;
            float *restrict sum = sums[out];
            for (int tap = 0; tap < taps; tap++) {
                const float coefficient = filter[tap];
                if (coefficient == 0) continue;
                const float *restrict past = channel + kept - tap;
                for (int frame = 0; frame < frames; frame++) sum[frame] += coefficient * past[frame];
            }
        }
    }
    for (int frame = 0; frame < frames; frame++) {
        for (int out = 0; out < outputs; out++) output[(long)frame * outputs + out] += sums[out][frame];
    }
    for (int input = 0; input < inputs; input++) {
        float *channel = history + (long)input * length;
        memmove(channel, channel + frames, sizeof(float) * (size_t)kept);
    }
}

WIDE
static void add_to_bins_avx2(float *steady, float *ramping, int frames, const float *signal,
                             const int *bins, const float *starts, const float *changes, int count) {
    add_to_bins(steady, ramping, frames, signal, bins, starts, changes, count);
}

static void add_to_bins_plain(float *steady, float *ramping, int frames, const float *signal,
                              const int *bins, const float *starts, const float *changes, int count) {
    add_to_bins(steady, ramping, frames, signal, bins, starts, changes, count);
}

void mix_add_to_bins(float *steady, float *ramping, int frames, const float *signal,
                     const int *bins, const float *starts, const float *changes, int count) {
    if (has_avx2_fma()) add_to_bins_avx2(steady, ramping, frames, signal, bins, starts, changes, count);
    else add_to_bins_plain(steady, ramping, frames, signal, bins, starts, changes, count);
}

WIDE
static void bin_into_field_avx2(float *field, int frames, float *steady, float *ramping,
                                const float *ramp, const float *harmonics) {
    bin_into_field(field, frames, steady, ramping, ramp, harmonics);
}

static void bin_into_field_plain(float *field, int frames, float *steady, float *ramping,
                                 const float *ramp, const float *harmonics) {
    bin_into_field(field, frames, steady, ramping, ramp, harmonics);
}

void mix_bin_into_field(float *field, int frames, float *steady, float *ramping,
                        const float *ramp, const float *harmonics) {
    if (has_avx2_fma()) bin_into_field_avx2(field, frames, steady, ramping, ramp, harmonics);
    else bin_into_field_plain(field, frames, steady, ramping, ramp, harmonics);
}

WIDE
static void convolve_avx2(float *output, int outputs, int frames, float *history, int inputs, const float *filters, int taps) {
    convolve(output, outputs, frames, history, inputs, filters, taps);
}

static void convolve_plain(float *output, int outputs, int frames, float *history, int inputs, const float *filters, int taps) {
    convolve(output, outputs, frames, history, inputs, filters, taps);
}

void mix_convolve(float *output, int outputs, int frames, float *history, int inputs, const float *filters, int taps) {
    if (has_avx2_fma()) convolve_avx2(output, outputs, frames, history, inputs, filters, taps);
    else convolve_plain(output, outputs, frames, history, inputs, filters, taps);
}
