#!/usr/bin/env bash
# From a fresh machine: install what is missing, make the demo assets the
# demo-room tests render, build the release roombench whose render-thread
# allocation count a test reads, run the whole test suite, and build and run
# the example that embeds the engine by path and by version.
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh
Tools/make_assets.sh
swift build -c release --product roombench
swift test "$@"
Tools/check-embed-example.sh
