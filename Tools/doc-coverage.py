#!/usr/bin/env python3
"""Lists the public symbols of the Engine product that have no doc comment.

The Engine product re-exports AudioCore, Devices, Scene, Spatial and Voice,
so all six modules are its public surface. Reads the symbol graphs that
Tools/docs.sh has the compiler write and exits 1 when any symbol of those
modules, declared in Sources/, has no doc comment.

    Tools/doc-coverage.py [SYMBOLGRAPH_DIR]
"""
import glob
import json
import os
import sys

MODULES = ("AudioCore", "Devices", "Scene", "Spatial", "Voice", "Engine")


def main() -> int:
    folder = sys.argv[1] if len(sys.argv) > 1 else ".build-docs/symbol-graphs"
    missing, total = [], 0
    seen = set()
    for path in sorted(glob.glob(os.path.join(folder, "*.symbols.json"))):
        module = os.path.basename(path).split(".")[0].split("@")[0]
        if module not in MODULES:
            continue
        for symbol in json.load(open(path))["symbols"]:
            location = symbol.get("location")
            if symbol["accessLevel"] not in ("public", "open") or not location:
                continue
            uri = location["uri"]
            if "/Sources/" not in uri:
                continue
            key = symbol["identifier"]["precise"]
            if key in seen:
                continue
            seen.add(key)
            total += 1
            if not symbol.get("docComment"):
                file = "Sources/" + uri.split("/Sources/", 1)[1]
                line = location["position"]["line"] + 1
                title = ".".join(symbol["pathComponents"])
                missing.append(f"{file}:{line}: {symbol['kind']['displayName'].lower()} {title}")
    for entry in sorted(missing):
        print(entry)
    print(f"{total - len(missing)} of {total} public symbols documented", file=sys.stderr)
    absent = [m for m in MODULES if not os.path.exists(os.path.join(folder, f"{m}.symbols.json"))]
    if absent:
        print(f"no symbol graph of {', '.join(absent)} in {folder}", file=sys.stderr)
        return 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
