#ifndef MIX_KERNELS_H
#define MIX_KERNELS_H

/// The engine's innermost mixing loops, where a crowd's thousands of
/// sources meet. They are compiled twice, for AVX2 with FMA and for the
/// plain x86-64 (or any other) instruction set, and the first is chosen
/// where the processor has it: Swift cannot compile one function for a
/// wider instruction set than the rest of the program.

/// Adds one source's `frames` samples to `count` direction bins, each at a
/// gain that goes linearly from `starts[i]` to `starts[i] + changes[i]`
/// across the frames. The ramp is kept apart: bin `bins[i]`'s row of
/// `steady` (rows of `frames`, bin-major) gets `starts[i] * signal` and its
/// row of `ramping` gets `changes[i] * signal`; `mix_bins_into_field`
/// applies the ramp once per bin, whatever number of sources share it.
void mix_add_to_bins(float *steady, float *ramping, int frames, const float *signal,
                     const int *bins, const float *starts, const float *changes, int count);

/// The components of the third-order field the crowd is encoded into.
#define MIX_FIELD_COMPONENTS 16

/// Adds bin row `steady + ramp * ramping` (`ramp` rising to 1 across the
/// frames), encoded with the bin's `MIX_FIELD_COMPONENTS` harmonic gains,
/// to `field` (frames of them interleaved), then clears both rows.
void mix_bin_into_field(float *field, int frames, float *steady, float *ramping,
                        const float *ramp, const float *harmonics);

/// Convolves `inputs` channels with one filter per input and output and
/// adds the result to `output` (frames of `outputs` interleaved). Each
/// input's channel is `history` (taps - 1 samples of the past, then the
/// `frames` new ones), and `filters` holds, for each input, `outputs`
/// filters of `taps` coefficients. The last taps - 1 samples of each
/// history are moved to its front for the next call.
void mix_convolve(float *output, int outputs, int frames, float *history, int inputs,
                  const float *filters, int taps);

#endif
