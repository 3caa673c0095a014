#!/usr/bin/env bash
# Builds the engine in release and the raw OpenAL Soft baseline, runs every
# benchmark in one go (about two minutes), prints the table and appends it,
# dated, to BENCHMARKS.md. Arguments go to `roombench report`.
#
# Tools/benchmark.sh --instructions [ARGS] counts instructions instead, with
# valgrind's callgrind, which the machine's load does not move (about a
# quarter of an hour): crowd rooms of 64 to 4096 sources against the raw
# OpenAL loop, set-up apart. Valgrind 3.19 cannot read the debug information
# of the release binary, so it runs a stripped copy. ARGS go to
# `roombench instructions`.
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh
Tools/make_assets.sh
swift build -c release --product roombench
mkdir -p .build/openal-baseline
gcc -O2 -Wall -o .build/openal-baseline/openal_baseline Tools/openal-baseline/openal_baseline.c \
    $(pkg-config --cflags --libs openal) -lm
if [[ "${1:-}" == "--instructions" ]]; then
    shift
    strip -o .build/release/roombench-stripped .build/release/roombench
    exec .build/release/roombench instructions --engine .build/release/roombench-stripped \
        --baseline .build/openal-baseline/openal_baseline --append BENCHMARKS.md "$@"
fi
.build/release/roombench report --baseline .build/openal-baseline/openal_baseline --append BENCHMARKS.md "$@"
