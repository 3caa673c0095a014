#!/usr/bin/env bash
# From a fresh machine: install what is missing, make the demo assets the
# demo-room tests render, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh
Tools/make_assets.sh
swift test "$@"
