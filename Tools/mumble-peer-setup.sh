#!/usr/bin/env bash
# Sets up the tests' independent Mumble peer (Tests/MumblePeer/peer.py): a
# Python venv at .build/mumble-peer-venv with pymumble 1.6.1 and what it
# needs, protobuf's pure-Python implementation and opuslib on Debian's
# libopus0. Idempotent: when the venv is there, built by the same Python for
# the same packages, and imports, it only checks that and exits.
#
#     Tools/mumble-peer-setup.sh      # prints the venv's python on success
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.build/mumble-peer-venv
# pymumble 1.6.1 pins opuslib 3.0.1 and protobuf 3.12.2 (whose generated
# messages need the pure-Python implementation); six is protobuf's.
requirements=(pymumble==1.6.1 opuslib==3.0.1 protobuf==3.12.2 six==1.17.0)
export PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python

# Debian's Python where there is one (3.11 on bookworm: pymumble 1.6.1 calls
# ssl.wrap_socket, which Python 3.12 removed; peer.py fills it in there).
if [ -x /usr/bin/python3 ]; then python=/usr/bin/python3; else python=$(command -v python3); fi
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 8))' \
  || { echo "mumble-peer-setup: $python is older than 3.8" >&2; exit 1; }

mkdir -p .build
# One setup at a time: tests running side by side may each call this.
exec 9>".build/mumble-peer-venv.lock"
flock -w 300 9 || { echo "mumble-peer-setup: another setup holds the lock" >&2; exit 1; }

stamp="$venv/peer-stamp"
wanted="$("$python" -c 'import sys; print(sys.executable, sys.version.split()[0])') ${requirements[*]}"

# Imports pymumble, and has opuslib find libopus and round-trip 20 ms of audio.
check() {
  "$venv/bin/python" -W ignore - <<'EOF'
import sys
import opuslib
import pymumble_py3
from pymumble_py3.constants import PYMUMBLE_VERSION
assert PYMUMBLE_VERSION == "1.6.1", PYMUMBLE_VERSION
encoder = opuslib.Encoder(48000, 1, "audio")
decoder = opuslib.Decoder(48000, 1)
pcm = decoder.decode(encoder.encode(bytes(1920), 960), 960)
assert len(pcm) == 1920, len(pcm)
print("libopus:", opuslib.api.libopus._name, file=sys.stderr)
EOF
}

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ] && check 2>/dev/null; then
  echo "$venv/bin/python"
  exit 0
fi

# grep reads the whole list: with -q it would stop at the match, and
# ldconfig's SIGPIPE would fail the pipeline under pipefail now and then.
if ! ldconfig -p | grep 'libopus\.so\.0' > /dev/null; then
  echo "mumble-peer-setup: libopus0 is missing (apt-get install libopus0)" >&2
  exit 1
fi

echo "mumble-peer-setup: making $venv with $python" >&2
rm -rf "$venv"
"$python" -m venv "$venv" >&2 \
  || { echo "mumble-peer-setup: venv failed (apt-get install python3-venv)" >&2; exit 1; }
"$venv/bin/pip" install --disable-pip-version-check --no-input -q "${requirements[@]}" >&2
check >&2
echo "$wanted" > "$stamp"
echo "$venv/bin/python"
