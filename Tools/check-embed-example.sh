#!/usr/bin/env bash
# Builds and runs Tools/embed-example against the engine two ways: by path,
# as this checkout, and by version, from a tagged clone of it, as a
# packager would depend on it.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "embed-example: the engine by path"
swift run --package-path Tools/embed-example --scratch-path "$work/by-path" EmbedExample "$work/by-path.wav"

echo "embed-example: the engine by version, from a tagged clone"
git clone -q . "$work/roomaudio"
git -C "$work/roomaudio" tag 1.0.0
ENGINE_URL="$work/roomaudio" ENGINE_VERSION=1.0.0 \
    swift run --package-path Tools/embed-example --scratch-path "$work/by-version" EmbedExample "$work/by-version.wav"
