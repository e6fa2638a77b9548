#!/usr/bin/env bash
# Efficiency curves: KLENT against the Gumbel AlphaZero baseline on Gardner chess and Animal
# Shogi, the KLENT paper's figure 5 at a CPU's scale.  Each run trains with
# klent/training/configs/<game>_<algo>_cpu.toml (the two algorithms' configs differ only in the
# algorithm, its collection window and the iterations that spend the same ~2e7 simulator
# evaluations) and plays Fairy-Stockfish (depth 1; skill level 0 on Animal Shogi, -5 on Gardner
# chess) after its first iteration and every 1e6 simulator evaluations (klent/training/anchor.py).
# The figure is the score against that anchor by simulator evaluations, the seeds as a band;
# the table printed after it gives the evaluations each algorithm needs to first reach a score
# of REACH, per seed, with their geometric mean, spread and ratio -- the paper claims KLENT
# needs several times fewer (4x on average over its five games; "competitive" on these two).
#
#   benchmarks/efficiency.sh                      # 2 games x 2 algorithms x 2 seeds, 2 at a time
#   SEEDS=3 JOBS=1 benchmarks/efficiency.sh       # 3 seeds, one run at a time
#   GAMES=gardner REACH=0.3 benchmarks/efficiency.sh
#   GAMES=animal_shogi EVALUATIONS=1e7 ANCHOR_EVERY=500000 benchmarks/efficiency.sh
#   GAMES=animal_shogi ALGOS=klent PRESETS="klent kl-only ent-only one-step monte-carlo" benchmarks/efficiency.sh
#
# EVALUATIONS stops every run at the first iteration that has spent that many simulator
# evaluations (the configs' iterations otherwise); raise it and run again to extend the curves.
# ANCHOR_EVERY (simulator evaluations between anchor matches) may change on a resumption too.
# PRESETS runs the KLENT arm once per ablation preset of the paper's table 2 (`klent train
# --preset`), as <game>-klent-<preset>-s<seed> (preset `klent` is the plain KLENT run), and
# groups the figure by algorithm and preset.
#
# Resumable: a run folder that holds a checkpoint is resumed (`klent train --resume`), a
# finished one returns at once, so the script can be stopped and started again at will; the
# plot is redrawn from whatever the runs have logged.  Runs go to $OUT/<game>-<algo>-s<seed>
# with their logs beside them ($OUT/<name>.log); the figure to $OUT/efficiency.png.  On one
# core of the project's 2-core machine, Animal Shogi's runs to 1e7 averaged about 2,700
# simulator evaluations a CPU-second with KLENT (it fits a sample per evaluation) and 8,300 with
# Gumbel AlphaZero (32 per sample): 2e7 evaluations are about 2.1 and 0.7 CPU-hours.  An anchor
# match of 64 games at depth 1 takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."

OUT=${OUT:-runs/eff}
SEEDS=${SEEDS:-2}
JOBS=${JOBS:-2}
THREADS=${THREADS:-1}                 # torch threads per run
GAMES=${GAMES:-gardner animal_shogi}
ALGOS=${ALGOS:-klent gumbel_az}       # the config names' spelling
REACH=${REACH:-0.5}
EVALUATIONS=${EVALUATIONS:-}          # empty: each config's own iterations
ANCHOR_EVERY=${ANCHOR_EVERY:-}        # empty: each config's eval.anchor_every_evaluations
PRESETS=${PRESETS:-}                  # empty: the configs' own KLENT (no ablation runs)
KLENT=${KLENT:-klent}
export OUT THREADS KLENT EVALUATIONS ANCHOR_EVERY
export PATH="$PATH:/usr/games"        # Debian installs Fairy-Stockfish there

if ! command -v fairy-stockfish >/dev/null; then
    echo "fairy-stockfish not found on PATH or in /usr/games (apt-get install fairy-stockfish)" >&2
    exit 1
fi
mkdir -p "$OUT"

train_one() {  # game algo seed [preset]: start the run, or resume it
    local name="$1-$2-s$3"
    local how=(--config "klent/training/configs/$1_$2_cpu.toml" --seed "$3")
    if [[ -n "${4:-}" && "$4" != klent ]]; then  # preset klent is the config's own run
        name="$1-$2-$4-s$3"
        how+=(--preset "$4")
    fi
    local run="$OUT/$name"
    if [[ -f "$run/checkpoint.pt" ]]; then
        how=(--resume)
    fi
    if [[ -n "$EVALUATIONS" ]]; then
        how+=(--evaluations "$EVALUATIONS")
    fi
    if [[ -n "$ANCHOR_EVERY" ]]; then
        how+=(--set "eval.anchor_every_evaluations=$ANCHOR_EVERY")
    fi
    echo "$(date '+%F %T') $name: klent train ${how[*]}"
    if "$KLENT" train "${how[@]}" --out "$run" --threads "$THREADS" --no-progress >>"$OUT/$name.log" 2>&1; then
        echo "$(date '+%F %T') $name: done"
    else
        echo "$(date '+%F %T') $name: failed, see $OUT/$name.log" >&2
    fi
}
export -f train_one

for seed in $(seq 0 $((SEEDS - 1))); do
    for game in $GAMES; do
        for algo in $ALGOS; do
            if [[ "$algo" == klent && -n "$PRESETS" ]]; then
                for preset in $PRESETS; do
                    echo "$game $algo $seed $preset"
                done
            else
                echo "$game $algo $seed"
            fi
        done
    done
done | xargs -P "$JOBS" -L 1 bash -c 'train_one "$@"' _

group=algo
if [[ -n "$PRESETS" ]]; then
    group=algo,klent.preset
fi
"$KLENT" plot --efficiency "$OUT"/*/ -o "$OUT/efficiency.png" --reach "$REACH" --group-by "$group"
