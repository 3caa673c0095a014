#!/usr/bin/env bash
# Builds the Engine product's documentation with the toolchain's docc and
# checks it: every public symbol of the product (Engine and the modules it
# re-exports) has a doc comment, and DocC has nothing to warn about.
#
#     Tools/docs.sh [OUTPUT.doccarchive]     (default: .build-docs/RoomAudio.doccarchive)
set -euo pipefail
cd "$(dirname "$0")/.."

output=${1:-.build-docs/RoomAudio.doccarchive}
# A build folder of its own: the symbol-graph flags would otherwise
# rebuild everything in .build on the next plain build.
scratch=.build-docs
graphs="$PWD/$scratch/symbol-graphs"
build() {
  swift build --target Engine --scratch-path "$scratch" \
    -Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc "$graphs" >/dev/null
}
build
# A module is written out again only when it compiles: a graph lost since
# its last build takes a build from nothing.
for module in AudioCore Devices Scene Spatial Voice Engine; do
  if [ ! -f "$graphs/$module.symbols.json" ]; then
    rm -rf "$scratch"
    build
    break
  fi
done

python3 Tools/doc-coverage.py "$graphs"

# DocC documents one module an archive: Engine with its catalog, then each
# module it re-exports, merged into one archive with a page for each.
docc=$(command -v docc || echo "$(dirname "$(command -v swift)")/docc")
archives=()
mkdir -p "$scratch/modules"
for module in Engine AudioCore Devices Scene Spatial Voice; do
  rm -rf "$graphs/$module"
  mkdir -p "$graphs/$module"
  cp "$graphs/$module.symbols.json" "$graphs/$module/"
  for extension in "$graphs/$module"@*.symbols.json; do
    if [ -f "$extension" ]; then cp "$extension" "$graphs/$module/"; fi
  done
  catalog=()
  if [ "$module" = Engine ]; then catalog=(Sources/Engine/Engine.docc); fi
  "$docc" convert "${catalog[@]}" \
    --additional-symbol-graph-dir "$graphs/$module" \
    --fallback-display-name "$module" --fallback-bundle-identifier "org.roomaudio.$module" \
    --output-path "$scratch/modules/$module.doccarchive" --warnings-as-errors
  archives+=("$scratch/modules/$module.doccarchive")
done
rm -rf "$output"
"$docc" merge "${archives[@]}" --synthesized-landing-page-name "Room audio engine" --output-path "$output"
echo "documentation: $output"
