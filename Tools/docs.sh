#!/usr/bin/env bash
# Builds the Engine product's documentation with the toolchain's docc and
# checks it: every public symbol of the product (Engine and the modules it
# re-exports) has a doc comment, and DocC has nothing to warn about.
#
#     Tools/docs.sh [OUTPUT.doccarchive]     (default: .build-docs/Engine.doccarchive)
set -euo pipefail
cd "$(dirname "$0")/.."

output=${1:-.build-docs/Engine.doccarchive}
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

# DocC documents one module: Engine's own graphs.
rm -rf "$graphs/Engine"
mkdir -p "$graphs/Engine"
cp "$graphs"/Engine.symbols.json "$graphs"/Engine@*.symbols.json "$graphs/Engine/"
docc=$(command -v docc || echo "$(dirname "$(command -v swift)")/docc")
"$docc" convert Sources/Engine/Engine.docc \
  --additional-symbol-graph-dir "$graphs/Engine" \
  --fallback-display-name Engine --fallback-bundle-identifier org.roomaudio.Engine \
  --output-path "$output" --warnings-as-errors
echo "documentation: $output"
