#!/usr/bin/env bash
# Strength of weights/go9.onnx against GNU Go 3.8 (Chinese rules, komi 7.5) on 9x9:
# levels 1 and 10, reactive and with 64-simulation Gumbel search; 20 games per setting.
cd "$(dirname "$0")/../.."
mkdir -p runs/strength
for level in 1 10; do
  for mode in reactive search; do
    .venv/bin/klent match --game go9 \
      --engine1 ".venv/bin/klent gtp --model weights/go9.onnx --mode $mode --simulations 64 --resign-threshold 0" \
      --engine2 "/usr/games/gnugo --mode gtp --chinese-rules --level $level" \
      --games 20 --time-per-move 5 --out runs/strength/go9-$mode-level$level > runs/strength/go9-$mode-level$level.log 2>&1
  done
done
