#!/usr/bin/env bash
# From a fresh machine: install what is missing, build, render the demo room
# offline, and play the render when a PulseAudio server answers.
set -euo pipefail
cd "$(dirname "$0")/.."

Tools/install-deps.sh
Tools/make_assets.sh
swift build -c release --product scenectl
mkdir -p out
scene="${1:-Scenes/tavern.yaml}"
out="out/$(basename "${scene%.*}").wav"
.build/release/scenectl render "$scene" --out "$out"

if command -v pactl >/dev/null && pactl info >/dev/null 2>&1; then
  echo "playing $out on $(pactl get-default-sink 2>/dev/null || echo 'the default sink')"
  paplay "$out"
else
  echo "no sound server answered; the render is in $out"
fi
