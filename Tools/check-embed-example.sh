#!/usr/bin/env bash
# Builds and runs Tools/embed-example against the engine two ways: by path,
# as this checkout, and by version, from a tagged clone of it, as a
# packager would depend on it.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d)
# What a run resolves names its temporary clone: never let the next run read it.
trap 'rm -rf "$work" Tools/embed-example/Package.resolved' EXIT
rm -f Tools/embed-example/Package.resolved

echo "embed-example: the engine by path"
swift run --package-path Tools/embed-example --scratch-path "$work/by-path" EmbedExample "$work/by-path.wav"

echo "embed-example: the engine by version, from a tagged clone"
rm -f Tools/embed-example/Package.resolved
git clone -q . "$work/roomaudio"
git -C "$work/roomaudio" tag 1.0.0
ENGINE_URL="$work/roomaudio" ENGINE_VERSION=1.0.0 \
    swift run --package-path Tools/embed-example --scratch-path "$work/by-version" EmbedExample "$work/by-version.wav"
