#!/usr/bin/env bash
# Issue #10, session 11: the bundled model (avg34) chose σ 2.0, its sweep's largest, so sweep
# past it at both depths; then the report again where a σ past 2.0 wins on validation.
# Issue #9: where the training update's fixed ~0.016 s goes (a kernel profile), and whether
# CUDA graphs (`--compile-mode reduce-overhead`) remove it. One phase per device call on one
# warm machine; reports go to $OUT.
#
#   carry: .whl/ppbench-0.1.0-py3-none-any.whl data/val550 data/sudoku-check
#   run:   bash scripts/gpu/stage6.sh sweep    (validation and sudoku-check, σ 2/3/4, D=16 and
#          D=48, one seed; validation' scores in score.txt)
#   run:   SIG16=... SIG48=... bash scripts/gpu/stage6.sh report   (golden and validation,
#          3 seeds, the σ each depth's validation sweep chose)
#   run:   bash scripts/gpu/stage6.sh profile  (bench_train.py on 4 GPUs and on 1)
#
# Ran 2026-11-26 (session 11) on 4 x NVIDIA H200: `sweep` (466 s; σ 2.0 won at both depths,
# so `report` did not run: session 10's report stands) and `profile` (192 s). Then by hand, the
# same bench_train.py command with --compile-mode reduce-overhead on 1 GPU, default and
# reduce-overhead on 2, and two more of each on 4 (--steps 40): docs/PERFORMANCE.md, session 11.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
DATA=data/val550 CHECK=data/sudoku-check/sudoku.jsonl WIDE=2.0,3.0,4.0
EV_TAIL=4

sweep() {
    setup
    for d in 16 48; do
        ev "v_w$d" "$(left $((d == 16 ? 180 : 520)))" --split val --data "$DATA" --D $d \
            --det-D $d --seeds 1 --sigma $WIDE
        ev "c_w$d" "$(left $((d == 16 ? 250 : 590)))" --split "$CHECK" --D $d --det-D $d \
            --seeds 1 --sigma $WIDE
        python3 scripts/gpu/validation_prime.py "D$d=runs/e_v_w$d/report.json,runs/e_c_w$d/report.json"
    done | tee "$OUT/score.txt"
}

report() {  # SIG16 and SIG48: each depth's σ, chosen on validation by `sweep`
    setup >/dev/null
    ev g_16 100 --split golden --D 16 --det-D 16,48 --seeds 3 --sigma "$SIG16"
    ev g_48 "$(left 190)" --split golden --D 48 --det-D 48 --seeds 3 --sigma "$SIG48"
    ev val_16 "$(left 300)" --split val --data "$DATA" --D 16 --det-D 16,48 --seeds 3 \
        --sigma "$SIG16"
    ev val_48 "$(left 570)" --split val --data "$DATA" --D 48 --det-D 48 --seeds 3 \
        --sigma "$SIG48"
}

profile() {  # the update at global batch 768: 4 GPUs (192 rows a card), then 1; each compiled
    setup >/dev/null
    local b="scripts/bench_train.py --steps 20 --warmup 5 --compile on --profile 5"
    torchrun --standalone --nproc-per-node 4 $b --json "$OUT/train_4gpu.json" 2>&1 | tail -n 30
    python3 $b --json "$OUT/train_1gpu.json" 2>&1 | tail -n 30
    timeout "$(left 580)" torchrun --standalone --nproc-per-node 4 $b \
        --compile-mode reduce-overhead --json "$OUT/train_4gpu_graphs.json" 2>&1 | tail -n 30
}

"$@"
