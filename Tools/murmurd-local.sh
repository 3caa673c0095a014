#!/usr/bin/env bash
# Starts Debian's murmurd on this machine for the networked demo rooms:
# loopback only, port 64738 (or $1), its root channel named "Tavern", its
# database and certificate in a folder of its own (or $2), kept between
# runs so its certificate stays the one the rooms remember. Stops it on
# Ctrl-C. As root murmurd runs as the mumble-server user, which then owns
# the folder, by default beside Debian's own server's data.
set -euo pipefail

port="${1:-64738}"
if [ "$(id -u)" -eq 0 ]; then
  default=/var/lib/mumble-server/roomd-local
else
  default="${XDG_STATE_HOME:-$HOME/.local/state}/roomd-murmurd"
fi
folder="${2:-$default}"
murmurd="$(command -v murmurd || echo /usr/sbin/murmurd)"
[ -x "$murmurd" ] || { echo "murmurd-local: murmurd is not installed (apt-get install mumble-server)" >&2; exit 2; }

mkdir -p "$folder"
chmod 700 "$folder"
{
  echo "database=$folder/murmur.sqlite"
  echo "logfile="
  echo "pidfile="
  echo "host=127.0.0.1"
  echo "port=$port"
  echo "ice="
  echo "bonjour=false"
  echo "registerName=Tavern"      # the root channel's name
  echo "welcometext=\"A room audio demo server\""
  echo "users=20"
  [ "$(id -u)" -eq 0 ] && echo "uname=mumble-server"
} > "$folder/murmur.ini"
[ "$(id -u)" -eq 0 ] && chown -R mumble-server: "$folder"

echo "murmurd-local: 127.0.0.1:$port, channel Tavern, files in $folder (Ctrl-C stops it)"
exec "$murmurd" -fg -ini "$folder/murmur.ini"
