#!/usr/bin/env bash
# Strength of a 9x9 Go model against GNU Go 3.8 (Chinese rules, komi 7.5) through `klent match`:
# reactive play and Gumbel search at 64, 200 and 800 simulations per move, colours alternating.
# Each setting's summary.json holds the win rate, its Wilson 95% interval and both engines'
# seconds per move.  Settings may be chosen with SETTINGS (e.g. SETTINGS="reactive 800").
#
#   GAMES=100 LEVEL=10 MODEL=weights/go9.onnx bash benchmarks/strength/go9.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
GAMES=${GAMES:-100}
LEVEL=${LEVEL:-10}
MODEL=${MODEL:-weights/go9.onnx}
SETTINGS=${SETTINGS:-"reactive 64 200 800"}
GNUGO=$(command -v gnugo || echo /usr/games/gnugo)
mkdir -p runs/strength
for setting in $SETTINGS; do
  if [ "$setting" = reactive ]; then play="--mode reactive"; else play="--mode search --simulations $setting"; fi
  out=runs/strength/go9-$setting-level$LEVEL
  echo "$(date -u +%FT%TZ) $MODEL, $setting vs GNU Go level $LEVEL, $GAMES games -> $out"
  .venv/bin/klent match --game go9 --games "$GAMES" --time-per-move 10 --out "$out" \
    --engine1 ".venv/bin/klent gtp --model $MODEL $play --resign-threshold 0" \
    --engine2 "$GNUGO --mode gtp --chinese-rules --level $LEVEL" > "$out.log" 2>&1
  tail -n 3 "$out.log"
done
