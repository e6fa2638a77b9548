#!/usr/bin/env bash
# Strength of weights/chess.onnx against Stockfish: reactive and 64-simulation search,
# against Skill Level 0 and against UCI_Elo 1350 (UCI_LimitStrength).
cd "$(dirname "$0")/../.."
mkdir -p runs/strength
K=".venv/bin/klent uci --model weights/chess.onnx"
for mode in reactive gumbel; do
  for opp in skill0 elo1350; do
    if [ $opp = skill0 ]; then o2=(--option2 "Skill Level=0"); else o2=(--option2 "UCI_LimitStrength=true" --option2 "UCI_Elo=1350"); fi
    .venv/bin/klent match --game chess --engine1 "$K" --engine2 /usr/games/stockfish \
      --option1 "SearchMode=$mode" --option1 "Simulations=64" "${o2[@]}" --option2 "Threads=1" \
      --games 30 --time-per-move 0.2 --max-moves 300 --out runs/strength/chess-$mode-$opp > runs/strength/chess-$mode-$opp.log 2>&1
  done
done
