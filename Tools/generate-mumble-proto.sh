#!/usr/bin/env bash
# Regenerates Sources/Network/Mumble.pb.swift from Sources/Network/Mumble.proto
# with protoc and swift-protobuf's protoc-gen-swift, as internal Swift (the
# doc-coverage check asks for doc comments on public symbols only). Run it by
# hand after editing the .proto and commit the result; CI does not run it.
#
#     Tools/generate-mumble-proto.sh [PROTOC-GEN-SWIFT]
#
# Without a plugin it builds one from swift-protobuf 1.39.0, the version
# Package.swift asks for, in a temporary folder (about ten minutes).
# Needs protoc (Debian: protobuf-compiler).
set -euo pipefail

swift_protobuf_url=https://github.com/apple/swift-protobuf
swift_protobuf_tag=1.39.0

command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }

if [[ $# -gt 0 ]]; then
  plugin=$(realpath "$1")
  [[ -x $plugin ]] || { echo "$1 is not an executable protoc-gen-swift" >&2; exit 1; }
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  git -c advice.detachedHead=false clone --quiet --depth 1 --branch "$swift_protobuf_tag" "$swift_protobuf_url" "$work/swift-protobuf"
  swift build -c release --product protoc-gen-swift --package-path "$work/swift-protobuf"
  plugin=$work/swift-protobuf/.build/release/protoc-gen-swift
fi

version=$("$plugin" --version 2>/dev/null || true)
[[ $version == *" $swift_protobuf_tag" ]] ||
  echo "warning: $plugin is '$version', not swift-protobuf $swift_protobuf_tag" >&2

cd "$(dirname "$0")/.."
protoc --plugin=protoc-gen-swift="$plugin" \
  --swift_opt=Visibility=Internal \
  --swift_out=Sources/Network \
  -I Sources/Network Sources/Network/Mumble.proto
echo "wrote Sources/Network/Mumble.pb.swift"
