#!/usr/bin/env bash
# Install the Debian programs klent's tests use, when they are missing: the engines it plays
# against and uses as referees (gnugo, stockfish, fairy-stockfish) and the browser that drives
# the web page test (chromium), and what scripts/install-pachi.sh builds Pachi with (gcc, make).
# Needs root and apt-get; elsewhere it says what to install and fails, so tests never skip
# silently.
set -euo pipefail
missing=()
for pkg in gnugo stockfish fairy-stockfish chromium gcc make; do
  command -v "$pkg" >/dev/null 2>&1 || [ -x "/usr/games/$pkg" ] || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing ${missing[*]} from Debian"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "missing programs: ${missing[*]} (install them with your package manager)" >&2
  exit 1
fi
