#!/usr/bin/env bash
# Issue #10, session 10: the mean of stages 3 and 4 (data/avg34, `scripts/average_weights.py
# data/ppb3/best ptrm_cli/models/default --out data/avg34`) against the bundled stage 4, σ past
# 1.0, each rollout halted at its first confident step, then the full report of the model kept.
# Judged as stage 4 was (docs/TRAINING.md, "stage 4"): validation' = validation's 450
# non-sudoku puzzles + data/sudoku-check, best-Q@100 at D=16. One phase per device call on one
# warm machine; reports go to $OUT.
#
#   carry: .whl/ppbench-0.1.0-py3-none-any.whl data/avg34 data/val550 data/sudoku-check
#          (the whole .whl folder puts the tree over the 64 MiB carry limit)
#   run:   bash scripts/gpu/stage5.sh compare             (sweeps and halted runs, both models)
#   run:   MODEL=... TAG=... bash scripts/gpu/stage5.sh report   (golden and validation, D=16
#          and D=48, 3 seeds, σ from that model's sweep in `compare`)
#   run:   bash scripts/gpu/stage5.sh halt                (the bundled model's report with
#          --halt 0.5: golden D=16 and D=48, validation D=48; σ 2.0, its own)
#
# Ran 2026-11-26 (session 10) on 4 x NVIDIA H100: `compare` (590 s: its two halted validation
# runs were cut by the time limit, each `ptrm eval` costs ~40-60 s of start-up and warm-up
# beyond its runs) and `report` with MODEL=data/avg34 TAG=avg (507 s). `halt` ran in session 11
# on 4 x NVIDIA H200 (343 s).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
# stage 4 was the bundled model when `compare` ran (S4=ptrm_cli/models/default); since then
# the bundled model is avg34 itself, so a rerun needs stage 4's own folder (carry it too)
AVG=data/avg34 S4=${S4:-data/ppb4/last} DATA=data/val550
EV_TAIL=4   # `ev` (lib.sh) prints the last 4 lines of each evaluation
CHECK=data/sudoku-check/sudoku.jsonl

both() {  # both NAME MODEL SECONDS EVAL_ARGS...: validation and sudoku-check, same settings
    local name=$1 model=$2 t=$3; shift 3
    ev "v_$name" "$t" --split val --data "$DATA" -c "$model" --D 16 --det-D 16 --seeds 1 "$@"
    ev "c_$name" 60 --split "$CHECK" -c "$model" --D 16 --det-D 16 --seeds 1 "$@"
}

compare() {
    setup
    both avg "$AVG" 210 --sigma 0.5,1.0,1.5,2.0
    both s4 "$S4" "$(left 360)" --sigma 1.0,1.5,2.0
    both avg_h "$AVG" "$(left 450)" --sigma 1.0 --halt 0.5
    both s4_h "$S4" "$(left 545)" --sigma 1.0 --halt 0.5
    for m in avg s4 avg_h s4_h; do  # one at a time: a run cut short loses only its own line
        python3 scripts/gpu/validation_prime.py "$m=runs/e_v_$m/report.json,runs/e_c_$m/report.json"
    done | tee "$OUT/score.txt"
}

report() {  # MODEL (a checkpoint) and TAG (avg or s4: whose validation sweep gives σ)
    setup >/dev/null
    full_report "$TAG" "$MODEL" "$DATA" "runs/e_v_$TAG/report.json"
}

halt() {  # the bundled model (avg34 since session 10) with every rollout halted at sigmoid(Q) > 0.5
    setup >/dev/null
    ev g_halt_16 120 --split golden --D 16 --det-D 16,48 --seeds 3 --sigma 2.0 --halt 0.5
    ev g_halt_48 "$(left 260)" --split golden --D 48 --det-D 48 --seeds 3 --sigma 2.0 --halt 0.5
    ev val_halt_48 "$(left 570)" --split val --data "$DATA" --D 48 --det-D 48 --seeds 3 \
        --sigma 2.0 --halt 0.5
}

"$@"
