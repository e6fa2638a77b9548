#!/usr/bin/env bash
# The 35 three- and four-piece Syzygy endgame tables that python-chess ships in its source
# distribution (data/syzygy/regular/), unpacked once into klent's cache, where `klent uci` and
# the tests find them by default (klent.engine.tablebase.DEFAULT_SYZYGY_DIR).  The version is the
# python-chess that the virtualenv runs; the tables are never committed.
#
# usage: scripts/syzygy-tables.sh [PYTHON]   (default .venv/bin/python)
set -euo pipefail

python=${1:-.venv/bin/python}
dest=${XDG_CACHE_HOME:-$HOME/.cache}/klent/syzygy
version=$("$python" -c 'import chess; print(chess.__version__)')
stamp="$dest/.python-chess-$version"
[ -f "$stamp" ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m pip download -q --no-deps --no-binary chess "chess==$version" -d "$work"
tar -xzf "$work/chess-$version.tar.gz" -C "$work" "chess-$version/data/syzygy/regular"
count=$(find "$work/chess-$version/data/syzygy/regular" -name '*.rtbw' | wc -l)
if [ "$count" -lt 35 ]; then
    echo "syzygy-tables.sh: python-chess $version's sdist holds $count WDL tables, not 35" >&2
    exit 1
fi
# Into place in one rename, so that a stopped run never leaves half a folder behind.
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.new"
mv "$work/chess-$version/data/syzygy/regular" "$dest.new"
touch "$dest.new/.python-chess-$version"
rm -rf "$dest"
mv "$dest.new" "$dest"
echo "Syzygy tables ($count WDL, $(find "$dest" -name '*.rtbz' | wc -l) DTZ) in $dest"
