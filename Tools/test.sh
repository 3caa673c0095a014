#!/usr/bin/env bash
# From a fresh machine: install what is missing, make the demo assets the
# demo-room tests render, build the release roombench whose render-thread
# allocation count a test reads, build and run the example that embeds the
# engine by path and by version, build and check the documentation, and run
# the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh
Tools/make_assets.sh
swift build -c release --product roombench
Tools/check-embed-example.sh
Tools/docs.sh
swift test "$@"
