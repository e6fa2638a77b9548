#!/usr/bin/env bash
# Strength of a Go model against GNU Go 3.8 (Chinese rules, komi 7.5) through `klent match`, on a
# SIZE x SIZE board (9, the default; 13 and 19 with their own openings and models):
# reactive play and Gumbel search at 64, 200 and 800 simulations per move, colours alternating.
# Each setting's summary.json holds the win rate, its Wilson 95% interval and both engines'
# seconds per move.  Settings may be chosen with SETTINGS (e.g. SETTINGS="reactive 800"); a
# setting such as 1s searches for that many seconds per move, as many simulations as fit (the
# issue's goal is stated per second of this machine, not per simulation count).
# RESUME=1 goes on with interrupted matches (`klent match --resume`), appending to their logs.
# JOBS=2 plays two settings at a time, klent with one ONNX Runtime thread each (a match keeps
# about one core busy: the two engines take turns), so the seconds per move are one core's.
# CONCURRENCY=2 plays two games of each match at once instead (`klent match --concurrency`),
# klent again with one thread: one setting in half the time.
#
# OPENINGS=FILE starts the games from balanced openings, each with both colours (klent, reactive or
# at fixed simulations, is deterministic, and `klent match` gives GNU Go game N's random seed:
# without openings whole games repeat); e.g.
# OPENINGS=benchmarks/openings/go9-50.txt (`klent openings --game go9 --count 50 --plies 4`).
# FIRST_OPENING=N starts from the file's opening N (0 = the first; `klent match --first-opening`),
# to go on with a row an earlier run played from the start, e.g. in a new session whose runs/
# folder is empty: its games then start where that run's stopped and the two add up.
#
# GUMBEL=1 adds root Gumbel noise to klent's searches (`klent gtp --gumbel-scale`), another
# source of distinct games.
#
# KLENT_FLAGS adds flags to klent gtp, e.g. KLENT_FLAGS=--all-stones-alive for the end-of-game
# judgement before the ownership head (the dead-stone measurement's "before", same network).
#
# Settings td-N and dyna2-N play TD search / Dyna-2 (weights/go9-td.npz) at N simulated games a
# move instead of the network (MODEL is then unused), e.g. SETTINGS="td-1000 dyna2-1000", and
# td-Ss / dyna2-Ss for S seconds a move; with KLENT_FLAGS="--td-root-moves K --model M" the move
# is chosen among model M's K most probable.
#
# OPPONENT is GNU Go at LEVEL (gnugo, the default) or klent's Gumbel search with MODEL and S
# seconds a move (gumbelSs; both on one thread, resigning as klent gtp does by default): TD search's
# head-to-head at equal time, e.g. SETTINGS=dyna2-1s OPPONENT=gumbel1s KLENT_FLAGS="--td-root-moves
# 5 --model weights/go9.onnx". GNU Go (level 10) then only scores the games that end in two passes.
# OPPONENT=pachiN is Pachi 11.99 at N playouts a move (N >= 500: below, Pachi aborts), one thread,
# not thinking on klent's time, capturing dead stones before it passes (`make test` builds it into
# .venv/bin; scripts/install-pachi.sh): Pachi resigns a lost game, and klent resigns as klent gtp
# does by default, e.g. SETTINGS=200 OPPONENT=pachi5000 OPENINGS=benchmarks/openings/go9-50.txt.
# Pachi's playout levels have no published rating: `klent bench ladder` fits them from their games,
# with GNU Go as the anchor, e.g. `klent bench ladder runs/strength/go9-1s-level10=0
# runs/strength/go9-1s-pachi1000 runs/strength/go9-1s-pachi5000`.
#
# TIME_PER_MOVE (seconds, default 10) is the match's limit a move for both engines, and the clock
# klent's searches are told (`time_settings`): TD search at 10,000 simulations takes 4-5 s a
# move on an idle core, so its rows want more headroom, e.g. TIME_PER_MOVE=30.  GNU Go told a
# clock thinks longer than its level alone makes it: on the positions of one 9x9 game, level 10
# took 0.80 s a move with 10 s a move against 0.057 s without a clock, level 1 0.38 s (5 s) against
# 0.023 s; so "level N" in these matches is GNU Go at level N with this clock.
#
# NAME names the output folders (runs/strength/NAME-SETTING-levelLEVEL, or NAME-SETTING-OPPONENT),
# to keep other models' apart.
#
#   GAMES=100 LEVEL=10 MODEL=weights/go9.onnx [NAME=go9] [JOBS=2] [RESUME=1] bash benchmarks/strength/go.sh
#   SIZE=19 GAMES=50 OPENINGS=benchmarks/openings/go19-25.txt SETTINGS="reactive 2s" bash benchmarks/strength/go.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
SIZE=${SIZE:-9}
GAMES=${GAMES:-100}
LEVEL=${LEVEL:-10}
MODEL=${MODEL:-weights/go$SIZE.onnx}
NAME=${NAME:-go$SIZE}
SETTINGS=${SETTINGS:-"reactive 64 200 800"}
JOBS=${JOBS:-1}
CONCURRENCY=${CONCURRENCY:-1}
RESUME=${RESUME:-0}
OPENINGS=${OPENINGS:-}
GUMBEL=${GUMBEL:-0}
KLENT_FLAGS=${KLENT_FLAGS:-}
OPPONENT=${OPPONENT:-gnugo}
TIME_PER_MOVE=${TIME_PER_MOVE:-10}
FIRST_OPENING=${FIRST_OPENING:-0}
openings=""
if [ -n "$OPENINGS" ]; then openings="--openings $OPENINGS --first-opening $FIRST_OPENING"; fi
GNUGO=$(command -v gnugo || echo /usr/games/gnugo)
threads=""
if [ "$JOBS" -gt 1 ] || [ "$CONCURRENCY" -gt 1 ]; then threads="--threads 1"; fi
case $OPPONENT in
  gnugo) opponent="$GNUGO --mode gtp --chinese-rules --level $LEVEL"; against=level$LEVEL
         title="GNU Go level $LEVEL"; resign=0 ;;  # klent plays on: the referee's margin is measured
  gumbel[0-9]*s) seconds=${OPPONENT#gumbel}; seconds=${seconds%s}; against=$OPPONENT
         opponent=".venv/bin/klent gtp --model $MODEL --mode search --time $seconds --threads 1 --name klent-gumbel"
         title="Gumbel search with $MODEL, $seconds s a move"; resign=0.05  # both resign alike,
         threads="--threads 1" ;;  # and think on one core each
  pachi[0-9]*) playouts=${OPPONENT#pachi}; against=$OPPONENT
         [[ $playouts =~ ^[0-9]+$ ]] && [ "$playouts" -ge 500 ] \
           || { echo "Pachi plays 500 playouts a move or more, not $playouts" >&2; exit 2; }
         opponent=".venv/bin/pachi -t =$playouts threads=1,pondering=0,pass_all_alive"
         title="Pachi at $playouts playouts"; resign=0.05 ;;
  *) echo "OPPONENT is gnugo, gumbelSs or pachiN, not $OPPONENT" >&2; exit 2 ;;
esac
mkdir -p runs/strength

play_setting() {
  local setting=$1 play out resume="" who=$MODEL budget=${1#*-}
  case $setting in
    reactive) play="--model $MODEL --mode reactive" ;;
    td-*s|dyna2-*s) play="--mode ${setting%-*} --time ${budget%s}"; who="TD search $KLENT_FLAGS" ;;
    td-*|dyna2-*) play="--mode ${setting%-*} --simulations $budget"; who="TD search $KLENT_FLAGS" ;;
    *s) play="--model $MODEL --mode search --time ${setting%s} --gumbel-scale $GUMBEL" ;;
    *) play="--model $MODEL --mode search --simulations $setting --gumbel-scale $GUMBEL" ;;
  esac
  out=runs/strength/$NAME-$setting-$against
  if [ "$RESUME" = 1 ] && [ -s "$out/games.jsonl" ]; then resume="--resume"; else : > "$out.log"; fi
  echo "$(date -u +%FT%TZ) $who, $setting vs $title, $GAMES games -> $out"
  .venv/bin/klent match --game "go$SIZE" --games "$GAMES" --time-per-move "$TIME_PER_MOVE" --concurrency "$CONCURRENCY" --out "$out" $resume $openings \
    --engine1 ".venv/bin/klent gtp $play $threads --resign-threshold $resign $KLENT_FLAGS" \
    --engine2 "$opponent" >> "$out.log" 2>&1
  echo "$setting: $(grep -E 'win rate|score margin' "$out.log" | tail -n 2 | tr '\n' ' ')"
}

running=0
for setting in $SETTINGS; do
  play_setting "$setting" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
done
wait
