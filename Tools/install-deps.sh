#!/usr/bin/env bash
# Installs the Debian packages the engine, its demo and its tests need,
# running apt-get only when something is missing.
set -euo pipefail

packages=(
  pkg-config                      # SwiftPM finds the C libraries through it
  libopenal-dev libopenal-data    # OpenAL Soft and its HRTF data sets
  libpulse-dev                    # PulseAudio client
  libspeexdsp-dev                 # resampler, echo canceller, preprocessor
  libsndfile1-dev                 # audio files
  libopus-dev                     # the network voice codec
  mumble-server                   # murmurd: the networked-room tests talk through a real one
  python3-venv                    # the tests' independent Mumble peer (pymumble) lives in a venv
  espeak-ng sox                   # demo assets (Tools/make_assets.sh)
  pulseaudio-utils                # paplay, parec, pactl: the demo and the live tests
  pulseaudio                      # the live tests run roomd against a private server with null sinks
  librsvg2-bin                    # rsvg-convert: --plot FILE.png
  python3 python3-jsonschema      # Tools/roomctl.py, and the protocol schema checks of the live tests
  valgrind binutils               # Tools/benchmark.sh --instructions: callgrind, and strip
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y "${missing[@]}"
