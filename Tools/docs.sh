#!/usr/bin/env bash
# Builds the Engine product's documentation with the toolchain's docc and
# checks it: every public symbol of the product (Engine and the modules it
# re-exports) has a doc comment, and DocC has nothing to warn about.
#
#     Tools/docs.sh [OUTPUT.doccarchive]     (default: .build/Engine.doccarchive)
set -euo pipefail
cd "$(dirname "$0")/.."

output=${1:-.build/Engine.doccarchive}
graphs=.build/symbol-graphs
swift package dump-symbol-graph --minimum-access-level public >/dev/null
dumped=$(swift build --show-bin-path)/../symbolgraph
rm -rf "$graphs"
mkdir -p "$graphs"
cp "$dumped"/Engine.symbols.json "$dumped"/Engine@*.symbols.json "$graphs"/

python3 Tools/doc-coverage.py "$dumped"

docc=$(command -v docc || echo "$(dirname "$(command -v swift)")/docc")
"$docc" convert Sources/Engine/Engine.docc \
  --additional-symbol-graph-dir "$graphs" \
  --fallback-display-name Engine --fallback-bundle-identifier org.roomaudio.Engine \
  --output-path "$output" --warnings-as-errors
echo "documentation: $output"
