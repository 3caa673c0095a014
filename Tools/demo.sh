#!/usr/bin/env bash
# From a fresh machine: install what is missing, build, render the demo room
# offline, and play the render when a PulseAudio server answers.
set -euo pipefail
# A scene named on the command line is found from where the command was given.
scene="$(realpath -m -- "${1:-$(dirname "$0")/../Scenes/tavern.yaml}")"
cd "$(dirname "$0")/.."

Tools/install-deps.sh
Tools/make_assets.sh
swift build -c release --product scenectl
mkdir -p out
name="$(basename "${scene%.*}")"
out="out/$name.wav"
# The tavern's app greets the player: its welcome prompt, in the style the voice session allows.
prompt=()
[[ "$scene" == "$(realpath Scenes/tavern.yaml)" ]] && prompt=(--prompt 0.5:welcome)
.build/release/scenectl render "$scene" --out "$out" --events "out/$name.events.jsonl" "${prompt[@]}" \
  --plot "out/$name.svg" --plot "out/$name.png"
if [[ -s "out/$name.events.jsonl" ]]; then
  echo "events (out/$name.events.jsonl):"
  cat "out/$name.events.jsonl"
fi
echo "the session on one time axis (levels, ducking, who talks, events): out/$name.svg, out/$name.png"

if command -v pactl >/dev/null && pactl info >/dev/null 2>&1; then
  echo "playing $out on $(pactl get-default-sink 2>/dev/null || echo 'the default sink')"
  paplay "$out"
else
  echo "no sound server answered; the render is in $out"
fi
