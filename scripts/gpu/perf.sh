#!/usr/bin/env bash
# Issue #9 on one card (headline and curve ran 2026-11-26 on H100s via `pair`; train_scaling,
# scaling, fp8 and mlp on 2 x H200 in session 17; train_scaling, scaling, mlp on 4 x H200 in
# 18; train_scaling, scaling on 4 x H100 in 19; host_trace, ddp_trace, train_scaling in 20;
# headline on an H100 in 21; swiglu, parity, exact and train_scaling in 22; norm, norm_exact and
# eval_exact in 23; headline again in 24):
# the headline benchmark and the accuracy/compute curve of adaptive compute on validation, for
# the bundled model. Ask for nvidia-h100-x1 (the issue's card); a reply from an H200 is
# recorded as such.
#
#   here:  bash scripts/gpu/perf.sh prepare        (validation split, 0.6 MB, to carry)
#   carry: .whl data/ppbench-valset
#   run:   bash scripts/gpu/perf.sh headline       (fast, adaptive, eager, profile: ~6 min)
#   run:   bash scripts/gpu/perf.sh curve          (the curve on validation: ~8 min)
#   run:   bash scripts/gpu/perf.sh pair           (a 2-GPU machine: headline on GPU 0 and
#                                                   curve on GPU 1 at once, one call)
#   run:   bash scripts/gpu/perf.sh autotune       (Inductor's max-autotune GEMMs, never run yet)
#   run:   bash scripts/gpu/perf.sh train_scaling  (a 4-GPU machine: the training update
#                                                   with CUDA graphs on 1 card, then on all,
#                                                   in one call: strong scaling on one host)
#   run:   bash scripts/gpu/perf.sh scaling        (a 2- or 4-GPU machine: PTRM on golden
#                                                   sharded over 1, 2, ... all GPUs, one launch)
#   run:   bash scripts/gpu/perf.sh fp8            (any Hopper card, ~1 min: the step's GEMMs in
#                                                   bf16 and FP8, scripts/fp8_gemm.py)
#   run:   bash scripts/gpu/perf.sh swiglu         (any Hopper card, ~1 min: gate/up + SiLU·up as
#                                                   cuBLAS + Inductor against one Triton kernel,
#                                                   scripts/swiglu_gemm.py)
#   run:   bash scripts/gpu/perf.sh parity         (any card, ~1 min: each compiled stage of a block
#                                                   against eager, scripts/op_parity.py)
#   run:   bash scripts/gpu/perf.sh exact          (any card, ~3 min: fast and eager with
#                                                   --exact, the fixed-order RMSNorm)
#   run:   bash scripts/gpu/perf.sh norm           (any card, ~1 min: add + RMSNorm with the
#                                                   fixed-order sum as one Triton kernel against
#                                                   Inductor's, scripts/norm_kernel.py)
#   run:   bash scripts/gpu/perf.sh norm_exact     (any card, ~5 min: norm, exact, and --no-exact's
#                                                   fast run on the same machine)
#   run:   bash scripts/gpu/perf.sh eval_exact     (any card, ~5 min: `ptrm eval --exact` against
#                                                   the eager loop, scripts/eval_parity.py)
#   run:   bash scripts/gpu/perf.sh host_trace     (any card, ~3 min: what holds the training
#                                                   host back, batch 192, with and without graphs)
#   run:   bash scripts/gpu/perf.sh ddp_trace      (a 4-GPU machine, ~4 min: the same on every
#                                                   rank at batch 768, a trace per rank)
#   run:   bash scripts/gpu/perf.sh mlp            (the TRM-MLP sudoku model's shape, random
#                                                   weights: nothing more to carry)
set -uo pipefail
source "$(dirname "$0")/lib.sh"
VAL=${VAL:-data/ppbench-valset}   # or a warm machine's data/ppbench9 (stage 9's own)
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
# "TRM-MLP"); session 17's run of this found its token mix off tensor cores (S = 97), now padded
# to 104 (engine/model.py, TokenMix). Where does a step go, and does
# Inductor's epilogue fusion (fast-autotune) win there? 100 random puzzles = 10,000 rows, on
# random weights of the trained model's shape (its checkpoint did not survive; speed does not
# depend on the weights)
mlp() {
    setup
    timeout "$(left 570)" ptrm bench --model mlp --split random \
        --puzzles 100 --K 100 --D 64 --modes fast,fast-autotune,profile \
        --out "$OUT/bench_mlp.json" 2>&1 | tail -n 50
}

# Would FP8 GEMMs close the fixed-K gap? The four GEMM shapes of a 6,100-row step, bf16 against
# e4m3 `_scaled_mm` (per-tensor and per-row scales), and the cast's own cost
fp8() {
    setup
    timeout "$(left 300)" python3 scripts/fp8_gemm.py --json "$OUT/fp8_gemm.json" 2>&1 | tail -n 20
}

# Would a fused SwiGLU GEMM pay? gate_up (cuBLAS) + SiLU·up (Inductor) against one Triton kernel
# with two accumulators that writes only silu(gate) * up: the largest fusion of "What would
# close the gap" (docs/PERFORMANCE.md), measured before the engine gets it
swiglu() {
    setup
    timeout "$(left 300)" python3 scripts/swiglu_gemm.py --json "$OUT/swiglu_gemm.json" 2>&1 \
        | tail -n 20
}

# Which compiled op parts fast from eager (session 22: only RMSNorm's reduction order), and
# the fixed run with RMSNorm summed in a fixed order in both (session 22: 100% identical)
parity() {
    setup
    timeout "$(left 300)" python3 scripts/op_parity.py --json "$OUT/op_parity.json" 2>&1 \
        | grep -v Warning | tail -n 20
}

# Could --exact be free? The fixed-order sum as one Triton kernel of our own (session 23: yes)
norm() {
    setup
    timeout "$(left 300)" python3 scripts/norm_kernel.py --json "$OUT/norm_kernel.json" 2>&1 \
        | grep -v Warning | tail -n 20
}

exact() {
    setup
    timeout "$(left 560)" ptrm bench -c "$MODEL" --K 100 --D 48 --puzzles 61 --split golden \
        --modes fast,eager --exact --out "$OUT/bench_exact.json" 2>&1 | tail -n 12
}

# Session 23: the kernel in the engine (engine/norm_kernel.py, under --exact on a GPU, the
# default since). The kernel alone, then `exact` (fast with the kernel against eager), then
# the reduction's fast run (--no-exact, the default before) on the same machine (~5 min)
norm_exact() {
    setup
    NO_SETUP=1 norm
    NO_SETUP=1 exact
    timeout "$(left 580)" ptrm bench -c "$MODEL" --K 100 --D 48 --puzzles 61 --split golden \
        --modes fast --no-exact --out "$OUT/bench_default.json" 2>&1 | tail -n 5
}

# `ptrm eval --exact` as the command runs it against the same evaluation on the eager loop,
# rollout by rollout (scripts/eval_parity.py; ~5 min)
eval_exact() {
    setup
    timeout "$(left 580)" python3 scripts/eval_parity.py runs/eval_parity \
        --json "$OUT/eval_parity.json" -- --split golden --K 100 --D 48 --det-D 48 \
        --seeds 1 --exact 2>&1 | grep -v Warning | tail -n 12
}

# Issue #9's near-linear evaluation scaling: measured on 4 x H200 (session 18: 100% on 2 and 4,
# identical results), not yet on H100s; the golden set four times over (244 puzzles) so 4 cards still get a full batch
scaling() {
    setup
    timeout "$(left 570)" ptrm bench -c "$MODEL" --split golden --puzzles 244 --K 100 --D 48 \
        --modes fast $(gpus) --out "$OUT/bench_scaling.json" 2>&1 | tail -n 20
}

# Issue #9's 90% strong-scaling target, measured on one host: H200s gave 88-90% (session 11),
# 89-92% with one gradient bucket (session 18); H100s only against another host's 1-GPU time (85%)
train_scaling() {
    setup
    local n b="scripts/bench_train.py --steps 20 --warmup 5 --compile on"
    n=$(nvidia-smi -L | wc -l)
    CUDA_VISIBLE_DEVICES=0 python3 $b --compile-mode reduce-overhead \
        --json "$OUT/train_1gpu_graphs.json" 2>&1 | tail -n 12
    timeout "$(left 570)" torchrun --standalone --nproc-per-node "$n" $b \
        --compile-mode reduce-overhead --json "$OUT/train_${n}gpu_graphs.json" 2>&1 | tail -n 12
}

# What holds the host back once an update (session 19: every card idles ~2 ms an update where
# the eager part starts): one card at batch 192 (a quarter of 768), with CUDA graphs and
# without, the runtime calls that took the host over 50 us, torch's sync debug mode, the idle
# gaps, and a Chrome trace of three updates
host_trace() {
    setup
    local b="scripts/bench_train.py --steps 20 --warmup 5 --compile on --batch 192"
    CUDA_VISIBLE_DEVICES=0 timeout "$(left 280)" python3 $b --compile-mode reduce-overhead \
        --host-waits 3 --trace "$OUT/trace_b192_graphs.json.gz" --gaps 3 \
        --json "$OUT/host_b192_graphs.json" 2>&1 | grep -v USDT | tail -n 40
    CUDA_VISIBLE_DEVICES=0 timeout "$(left 560)" python3 $b --host-waits 3 --gaps 3 \
        --json "$OUT/host_b192_nographs.json" 2>&1 | grep -v USDT | tail -n 40
}

# The same on every rank of a 4-card run at global batch 768 (one card at batch 192 first, for
# reference): where the 4-process update loses its ~2.5 ms to one card's quarter batch
ddp_trace() {
    setup
    local n b="scripts/bench_train.py --steps 20 --warmup 5 --compile on --compile-mode reduce-overhead"
    n=$(nvidia-smi -L | wc -l)
    CUDA_VISIBLE_DEVICES=0 timeout "$(left 200)" python3 $b --batch 192 --gaps 3 \
        --json "$OUT/gaps_b192.json" 2>&1 | grep -v USDT | tail -n 12
    timeout "$(left 560)" torchrun --standalone --nproc-per-node "$n" $b --gaps 3 \
        --host-waits 3 --trace "$OUT/trace_${n}gpu.json.gz" \
        --json "$OUT/ddp_${n}gpu.json" 2>&1 | grep -v USDT | tail -n 60
}

"$@"
