#!/usr/bin/env bash
# Builds the engine in release and the raw OpenAL Soft baseline, runs every
# benchmark in one go (about a minute), prints the table and appends it,
# dated, to BENCHMARKS.md. Arguments go to `roombench report`.
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh
Tools/make_assets.sh
swift build -c release --product roombench
mkdir -p .build/openal-baseline
gcc -O2 -Wall -o .build/openal-baseline/openal_baseline Tools/openal-baseline/openal_baseline.c \
    $(pkg-config --cflags --libs openal) -lm
.build/release/roombench report --baseline .build/openal-baseline/openal_baseline --append BENCHMARKS.md "$@"
