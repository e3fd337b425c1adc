#!/usr/bin/env bash
# Issue #10, stage 4's comparison and report (session 9, 2 x H100), after
# `stage3.sh train` and `more` with RUN=runs/ppb4 DATA=data/ppbench4 (docs/TRAINING.md, "stage
# 4"). One phase per device call on the same warm machine; each writes its report.json files
# to $OUT under the names docs/runs keeps (ppbench-att4-*, ppbench-att3-*).
#
#   run:  bash scripts/gpu/stage4.sh compare   (sudoku-check and validation sweeps, both models)
#   run:  bash scripts/gpu/stage4.sh golden    (golden D=16 both models, D=48 the new one)
#   run:  bash scripts/gpu/stage4.sh val16     (validation D=16, 3 seeds, the new one)
#
# The candidate is the run's last checkpoint (CAND), the incumbent the bundled model (stage 3
# then). Validation's 100 sudoku come from the old generator (docs/GENERATORS.md, "Sudoku
# grids"), so sudoku is judged on data/sudoku-check (100 of the fixed generator, seed 98,
# --min-difficulty 6: `train`'s MORE_DATA makes it on the device).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
CAND=${CAND:-runs/ppb4/checkpoints/step_9000}
INCUMBENT=${INCUMBENT:-ptrm_cli/models/default}
DATA=${DATA:-data/ppbench4}
CHECK=data/sudoku-check/sudoku.jsonl
C=${CAND_TAG:-4} I=${INC_TAG:-3}   # report names: sc$C.json, sweep$I.json, ... (avg: CAND_TAG=avg)
SC=${SIGMAS_CAND:-0.5,1.0} SI=${SIGMAS_INC:-0.7,1.0}   # the sweeps (stage 3's own reached 0.5)

compare() {
    setup >/dev/null
    ev "sc$C" 90 --split "$CHECK" -c "$CAND" --D 16 --det-D 16 --sigma 0.5,1.0 --seeds 1
    ev "sc$I" 90 --split "$CHECK" -c "$INCUMBENT" --D 16 --det-D 16 --sigma 0.5,1.0 --seeds 1
    ev "sweep$C" "$(left 330)" --split val --data "$DATA" -c "$CAND" --D 16 --det-D 16 \
        --sigma "$SC" --seeds 1
    ev "sweep$I" "$(left 470)" --split val --data "$DATA" -c "$INCUMBENT" --D 16 --det-D 16 \
        --sigma "$SI" --seeds 1
}

golden() {
    setup >/dev/null
    ev "g${C}_16" 120 --split golden -c "$CAND" --D 16 --det-D 16,48 --seeds 3 \
        --sigma-from "runs/e_sweep$C/report.json"
    ev "g${I}_16" "$(left 230)" --split golden -c "$INCUMBENT" --D 16 --det-D 16 --seeds 3 \
        --sigma-from "runs/e_sweep$I/report.json"
    ev "g${C}_48" "$(left 340)" --split golden -c "$CAND" --D 48 --det-D 48 --seeds 3 \
        --sigma-from "runs/e_sweep$C/report.json"
}

val16() {
    setup >/dev/null
    ev "v${C}_16" 215 --split val --data "$DATA" -c "$CAND" --D 16 --det-D 16,48 --seeds 3 \
        --sigma-from "runs/e_sweep$C/report.json"
}

"$@"
