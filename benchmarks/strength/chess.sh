#!/usr/bin/env bash
# Strength of a chess model against Stockfish through `klent match`: reactive play and Gumbel
# search at 64 simulations, against Skill Level 0 (OPPONENT=skill0) or UCI_Elo 1350
# (OPPONENT=elo1350); Stockfish 1 thread, 0.2 s a move; draw by adjudication at 300 plies.
# Each setting's summary.json holds the win rate, its Wilson 95% interval and seconds per move.
#
#   GAMES=100 OPPONENT=skill0 MODEL=weights/chess.onnx bash benchmarks/strength/chess.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
GAMES=${GAMES:-100}
OPPONENT=${OPPONENT:-skill0}
MODEL=${MODEL:-weights/chess.onnx}
SETTINGS=${SETTINGS:-"reactive gumbel"}
STOCKFISH=$(command -v stockfish || echo /usr/games/stockfish)
case $OPPONENT in
  skill0) strength=(--option2 "Skill Level=0") ;;
  elo1350) strength=(--option2 "UCI_LimitStrength=true" --option2 "UCI_Elo=1350") ;;
  *) echo "OPPONENT must be skill0 or elo1350" >&2; exit 2 ;;
esac
mkdir -p runs/strength
for mode in $SETTINGS; do
  out=runs/strength/chess-$mode-$OPPONENT
  echo "$(date -u +%FT%TZ) $MODEL, $mode vs Stockfish $OPPONENT, $GAMES games -> $out"
  .venv/bin/klent match --game chess --games "$GAMES" --time-per-move 0.2 --max-moves 300 --out "$out" \
    --engine1 ".venv/bin/klent uci --model $MODEL" --option1 "SearchMode=$mode" --option1 "Simulations=64" \
    --engine2 "$STOCKFISH" "${strength[@]}" --option2 "Threads=1" > "$out.log" 2>&1
  tail -n 3 "$out.log"
done
