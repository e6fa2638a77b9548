#!/usr/bin/env bash
# Strength of a chess model against Stockfish 15.1 (or of a Gardner chess model against
# Fairy-Stockfish: GAME=gardner, GAME=animal_shogi) through `klent match`, from balanced openings
# (benchmarks/openings/chess-50.txt: `klent openings --game chess --count 50 --plies 8`;
# gardner-100.txt and animal_shogi-50.txt: `klent openings --game G --count N --plies 4`), each played with
# both colours, so a deterministic pair of engines still plays twice as many distinct games.
# The opponent: 1 thread, 0.2 s a move (whatever klent's time) unless its setting names a depth; draw by adjudication
# 300 plies after the opening.
#
# SETTINGS: reactive (one network call a move), gumbel (Gumbel search, 64 simulations, 0.2 s a
# move), gumbelN (N simulations, 2 s a move at most), gumbelSs (Gumbel search with S seconds a
# move, as many simulations as fit: gumbel1s, gumbel0.1s; klent's Move Overhead is then 10 ms,
# not the 100 that a GUI needs, since klent match waits a second past the move time anyway) and
# limitE (UCI_LimitStrength with UCI_Elo=E, 2 s a move at most: the simulations are those the
# model's strength curve, weights/<game>.strength.json, gives E).
# OPPONENTS: skillN (Skill Level N), skillNdD (Skill Level N searching to depth D, so that the
# load does not change its play: skill0d1 is the efficiency curves' anchor) or eloN
# (UCI_LimitStrength, UCI_Elo=N, N >= 1350; Stockfish only) or eloNdD (the same searching to depth
# D: Stockfish 15.1 picks its weakened move at depth 1 + its skill level, which is 0 at UCI_Elo
# 1350 and 2 at 1599, so below 1600 eloNd3 plays as eloN does at 0.2 s a move, in a fraction of
# the time).
# KLENT_FLAGS are added to klent's command line (e.g. "--rescale-floor 2").
# klent plays with one thread.  JOBS=2 plays two matches at a time; CONCURRENCY=2 plays two
# games of each match at a time (`klent match --concurrency`).
# Each match's summary.json holds the win rate, its Wilson 95% interval, the distinct games,
# the results per opening and both engines' seconds per move.
#
#   GAMES=100 OPPONENTS="skill0 elo1500" SETTINGS="reactive gumbel1s" MODEL=weights/chess.onnx \
#     [NAME=chess] [JOBS=2] [RESUME=1] bash benchmarks/strength/chess.sh
#   GAME=gardner GAMES=200 OPPONENTS=skill0d1 SETTINGS=reactive MODEL=runs/gardner/latest.onnx \
#     NAME=gardner bash benchmarks/strength/chess.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
GAME=${GAME:-chess}
GAMES=${GAMES:-100}
OPPONENTS=${OPPONENTS:-skill0}
MODEL=${MODEL:-weights/$GAME.onnx}
NAME=${NAME:-$GAME}
SETTINGS=${SETTINGS:-"reactive gumbel"}
JOBS=${JOBS:-1}
CONCURRENCY=${CONCURRENCY:-1}
RESUME=${RESUME:-0}
KLENT_FLAGS=${KLENT_FLAGS:-}
case $GAME in
  chess) OPENINGS=${OPENINGS:-benchmarks/openings/chess-50.txt}
         OPPONENT=$(command -v stockfish || echo /usr/games/stockfish) ;;
  gardner|animal_shogi)
    if [ "$GAME" = gardner ]; then OPENINGS=${OPENINGS:-benchmarks/openings/gardner-100.txt}
    else OPENINGS=${OPENINGS:-benchmarks/openings/animal_shogi-50.txt}; fi
    OPPONENT=$(command -v fairy-stockfish || echo /usr/games/fairy-stockfish) ;;
  *) echo "GAME is chess, gardner or animal_shogi, not $GAME" >&2; exit 2 ;;
esac
mkdir -p runs/strength

play() {
  local mode=$1 opponent=$2 out strength play spec time=0.2 resume=""
  case $opponent in
    skill*d*) spec=${opponent#skill}; strength=(--option2 "Skill Level=${spec%d*}" --go2 "depth ${spec##*d}") ;;
    skill*) strength=(--option2 "Skill Level=${opponent#skill}" --go2 "movetime 200") ;;
    elo*d*) spec=${opponent#elo}; strength=(--option2 "UCI_LimitStrength=true" --option2 "UCI_Elo=${spec%d*}" --go2 "depth ${spec##*d}") ;;
    elo*) strength=(--option2 "UCI_LimitStrength=true" --option2 "UCI_Elo=${opponent#elo}" --go2 "movetime 200") ;;
    *) echo "an opponent is skillN, skillNdD, eloN or eloNdD, not $opponent" >&2; return 2 ;;
  esac
  case $mode in
    reactive) play=(--option1 "SearchMode=reactive") ;;
    gumbel) play=(--option1 "SearchMode=gumbel" --option1 "Simulations=64") ;;
    gumbel[0-9]*s) play=(--option1 "SearchMode=gumbel" --option1 "Move Overhead=10"); time=${mode#gumbel}; time=${time%s} ;;
    gumbel[0-9]*) play=(--option1 "SearchMode=gumbel" --option1 "Simulations=${mode#gumbel}"); time=2 ;;
    limit[0-9]*) play=(--option1 "UCI_LimitStrength=true" --option1 "UCI_Elo=${mode#limit}"); time=2 ;;
    *) echo "a setting is reactive, gumbel, gumbelSs, gumbelN or limitE, not $mode" >&2; return 2 ;;
  esac
  play+=(--option1 "Threads=1")
  out=runs/strength/$NAME-$mode-$opponent
  if [ "$RESUME" = 1 ] && [ -s "$out/games.jsonl" ]; then resume="--resume"; else : > "$out.log"; fi
  echo "$(date -u +%FT%TZ) $MODEL, $mode vs $(basename "$OPPONENT") $opponent, $GAMES games -> $out"
  .venv/bin/klent match --game "$GAME" --games "$GAMES" --openings "$OPENINGS" --time-per-move "$time" \
    --max-moves 300 --concurrency "$CONCURRENCY" --out "$out" $resume --engine1 ".venv/bin/klent uci --model $MODEL $KLENT_FLAGS" "${play[@]}" \
    --engine2 "$OPPONENT" "${strength[@]}" --option2 "Threads=1" >> "$out.log" 2>&1
  echo "$mode vs $opponent: $(grep -E 'win rate|distinct' "$out.log" | tail -n 2 | tr '\n' ' ')"
}

running=0
for opponent in $OPPONENTS; do
  for mode in $SETTINGS; do
    play "$mode" "$opponent" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
  done
done
wait
