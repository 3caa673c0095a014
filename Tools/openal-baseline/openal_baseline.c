/*
 * The baseline the engine's benchmark compares against: N moving point
 * sources rendered by OpenAL Soft alone, through a loopback device with
 * HRTF, in 10 ms blocks on the caller's clock. The scene is the one
 * `roombench openal` gives the engine: the same sources, noise, paths,
 * distance model and device settings, so the difference is the engine.
 *
 *   openal_baseline SOURCES SECONDS [static]
 *
 * prints one line: "cpu_seconds_per_audio_second <value>". With "static"
 * the sources stay where their paths start; with 0 seconds nothing renders.
 */
/* The loopback device is an extension: ask alext.h for its prototypes. */
#define AL_ALEXT_PROTOTYPES 1
#include <AL/al.h>
#include <AL/alc.h>
#include <AL/alext.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { RATE = 48000, BLOCK = 480, NOISE_FRAMES = 48000, KEYFRAMES = 13 };

static double thread_cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The benchmark's path for source `index` of `count`: a circle around the
 * listener as 12 straight segments, repeating; see OrbitScene.swift. */
static void orbit_position(int index, int count, double time, float out[3]) {
    const double radius = 2.0 + (double)(index % 8);
    const double period = 8.0 + (double)(index % 5);
    const double start = 2.0 * M_PI * (double)index / (double)count;
    double phase = fmod(time, period) / period * (KEYFRAMES - 1);
    int segment = (int)phase;
    if (segment >= KEYFRAMES - 1) segment = KEYFRAMES - 2;
    double fraction = phase - segment;
    double a0 = start + 2.0 * M_PI * segment / (KEYFRAMES - 1);
    double a1 = start + 2.0 * M_PI * (segment + 1) / (KEYFRAMES - 1);
    double x = radius * sin(a0) + (radius * sin(a1) - radius * sin(a0)) * fraction;
    double z = -radius * cos(a0) + (-radius * cos(a1) + radius * cos(a0)) * fraction;
    out[0] = (float)x;
    out[1] = 0.0f;
    out[2] = (float)z;
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "static") != 0)) {
        fprintf(stderr, "usage: openal_baseline SOURCES SECONDS [static]\n");
        return 2;
    }
    const int moving = argc == 3;
    int count = atoi(argv[1]);
    double seconds = atof(argv[2]);
    if (count < 1 || count > 256 || !(seconds >= 0)) {
        fprintf(stderr, "openal_baseline: SOURCES must be 1-256 and SECONDS 0 or more\n");
        return 2;
    }

    ALCdevice *device = alcLoopbackOpenDeviceSOFT(NULL);
    if (!device) { fprintf(stderr, "openal_baseline: no loopback device\n"); return 1; }
    ALCint attributes[] = {
        ALC_FORMAT_CHANNELS_SOFT, ALC_STEREO_SOFT, ALC_FORMAT_TYPE_SOFT, ALC_FLOAT_SOFT,
        ALC_FREQUENCY, RATE, ALC_HRTF_SOFT, ALC_TRUE, ALC_OUTPUT_LIMITER_SOFT, ALC_TRUE,
        ALC_MAX_AUXILIARY_SENDS, 1, 0,
    };
    ALCcontext *context = alcCreateContext(device, attributes);
    if (!context || !alcMakeContextCurrent(context)) {
        fprintf(stderr, "openal_baseline: cannot create a context\n");
        return 1;
    }
    ALCint hrtf = 0;
    alcGetIntegerv(device, ALC_HRTF_STATUS_SOFT, 1, &hrtf);
    if (hrtf != ALC_HRTF_ENABLED_SOFT && hrtf != ALC_HRTF_REQUIRED_SOFT) {
        fprintf(stderr, "openal_baseline: HRTF is not available (install libopenal-data)\n");
        return 1;
    }
    alDistanceModel(AL_INVERSE_DISTANCE_CLAMPED);

    ALuint *buffers = calloc((size_t)count, sizeof(ALuint));
    ALuint *sources = calloc((size_t)count, sizeof(ALuint));
    float *noise = malloc(sizeof(float) * NOISE_FRAMES);
    float *output = malloc(sizeof(float) * BLOCK * 2);
    alGenBuffers(count, buffers);
    alGenSources(count, sources);
    /* Each source its own second of noise, as the engine gives each its own buffer. */
    unsigned long long state = 3;
    for (int i = 0; i < count; i++) {
        for (int n = 0; n < NOISE_FRAMES; n++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            noise[n] = (float)((long long)state >> 40) / (float)(1 << 23) * 0.1f;
        }
        alBufferData(buffers[i], AL_FORMAT_MONO_FLOAT32, noise, sizeof(float) * NOISE_FRAMES, RATE);
        alSourcei(sources[i], AL_BUFFER, (ALint)buffers[i]);
        alSourcef(sources[i], AL_REFERENCE_DISTANCE, 1.0f);
        alSourcef(sources[i], AL_MAX_DISTANCE, 50.0f);
        alSourcef(sources[i], AL_ROLLOFF_FACTOR, 1.0f);
        alSourcef(sources[i], AL_SOURCE_RADIUS, 0.1f);
        alSourcei(sources[i], AL_LOOPING, AL_TRUE);
        float position[3];
        orbit_position(i, count, 0.0, position);
        alSourcefv(sources[i], AL_POSITION, position);
    }
    alSourcePlayv(count, sources);
    if (alGetError() != AL_NO_ERROR) { fprintf(stderr, "openal_baseline: OpenAL refused the scene\n"); return 1; }

    long blocks = (long)(seconds * RATE / BLOCK);
    double started = thread_cpu_seconds();
    for (long block = 0; block < blocks; block++) {
        double time = (double)(block * BLOCK) / RATE;
        for (int i = 0; moving && i < count; i++) {
            float position[3];
            orbit_position(i, count, time, position);
            alSourcefv(sources[i], AL_POSITION, position);
        }
        alcRenderSamplesSOFT(device, output, BLOCK);
    }
    double cpu = thread_cpu_seconds() - started;
    /* With no seconds the scene is only set up: what callgrind's set-up count runs. */
    printf("cpu_seconds_per_audio_second %.6f\n", blocks > 0 ? cpu / ((double)(blocks * BLOCK) / RATE) : 0.0);

    alSourceStopv(count, sources);
    alDeleteSources(count, sources);
    alDeleteBuffers(count, buffers);
    alcMakeContextCurrent(NULL);
    alcDestroyContext(context);
    alcCloseDevice(device);
    free(buffers);
    free(sources);
    free(noise);
    free(output);
    return 0;
}
