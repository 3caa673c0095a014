#!/usr/bin/env bash
# From a fresh machine: install what is missing, make the demo assets the
# demo-room tests render, build the release roombench whose render-thread
# allocation count a test reads, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh
Tools/make_assets.sh
swift build -c release --product roombench
swift test "$@"
