#!/usr/bin/env bash
# Issue #9 on one card (headline and curve ran 2026-11-26 on H100s via `pair`; autotune, mlp
# not yet): the headline benchmark and the accuracy/compute
# curve of adaptive compute on validation, for the bundled model. Ask for nvidia-h100-x1 (the
# issue's card); a reply from an H200 is recorded as such.
#
#   here:  bash scripts/gpu/perf.sh prepare        (validation split, 0.6 MB, to carry)
#   carry: .whl data/ppbench-valset
#   run:   bash scripts/gpu/perf.sh headline       (fast, adaptive, eager, profile: ~6 min)
#   run:   bash scripts/gpu/perf.sh curve          (the curve on validation: ~8 min)
#   run:   bash scripts/gpu/perf.sh pair           (a 2-GPU machine: headline on GPU 0 and
#                                                   curve on GPU 1 at once, one call)
#   run:   bash scripts/gpu/perf.sh autotune       (Inductor's max-autotune GEMMs, never run yet)
#   run:   bash scripts/gpu/perf.sh mlp            (the TRM-MLP sudoku model; carry also
#                                                   data/sudoku-mlp-resume/best)
set -uo pipefail
source "$(dirname "$0")/lib.sh"
VAL=data/ppbench-valset
MODEL=ptrm_cli/models/default   # the bundled model

prepare() {  # the 550 validation puzzles of every report so far (stage 1's split), no train
    rm -rf "$VAL" && mkdir -p "$VAL"
    cp -r data/ppbench/meta.json data/ppbench/counts.json data/ppbench/val "$VAL"/
}

headline() {
    setup
    timeout "$(left 560)" ptrm bench -c "$MODEL" --K 100 --D 48 --puzzles 61 --split golden \
        --modes fast,adaptive,eager,profile --repeats 2 --out "$OUT/bench_1gpu.json" 2>&1 \
        | tail -n 60
}

curve() {
    setup
    timeout "$(left 570)" ptrm bench -c "$MODEL" --split val --data "$VAL" --puzzles 375 \
        --K 100 --D 48 --modes curve --out "$OUT/curve_val.json" 2>&1 | tail -n 60
}

pair() {  # two cards, two jobs: GPU 1's run shares only the host (32 cores) with GPU 0's
    setup
    NO_SETUP=1 CUDA_VISIBLE_DEVICES=1 curve > "$OUT/curve.txt" 2>&1 &
    NO_SETUP=1 CUDA_VISIBLE_DEVICES=0 headline
    wait
    tail -n 60 "$OUT/curve.txt"
}

autotune() {  # Triton GEMM templates with fused epilogues: the cheap route to fewer bytes
    setup
    timeout "$(left 570)" ptrm bench -c "$MODEL" --K 100 --D 48 --puzzles 61 --split golden \
        --modes fast,fast-autotune --out "$OUT/bench_autotune.json" 2>&1 | tail -n 40
}

# TRM-MLP ran at ~40% of TRM-Att's TFLOP/s in `ptrm eval` on 4 H200s (docs/PERFORMANCE.md,
# "TRM-MLP"): its token-mixing GEMMs are memory-bound. Where does a step go, and does
# Inductor's epilogue fusion (fast-autotune) win there? 100 random puzzles = 10,000 rows.
mlp() {
    setup
    timeout "$(left 570)" ptrm bench -c data/sudoku-mlp-resume/best --split random \
        --puzzles 100 --K 100 --D 64 --modes fast,fast-autotune,profile \
        --out "$OUT/bench_mlp.json" 2>&1 | tail -n 50
}

"$@"
