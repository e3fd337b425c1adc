#!/usr/bin/env bash
# What ran on the 4-GPU lease of 2026-11-26 (second session), one phase per device call
# (a call may last 10 minutes; the machine stays warm between calls, so runs/ and data/ persist).
#
#   bash scripts/gpu/session2.sh prepare # here, before the calls: the small inputs to carry
#   bash scripts/gpu/session2.sh call1   # setup, data, warm-started PPBench training
#   bash scripts/gpu/session2.sh call2   # training to the end, sigma sweep on val, D=16 report
#   bash scripts/gpu/session2.sh call3   # D=48 report (GPUs 1-3) + benchmarks (#9)
#
# Carried: data/gen data/gen2 data/src data/golden data/hard data/ppbench-val .whl
# (.whl: python-sat for the generator, ppbench for the golden set). Results go to $OUT.
set -uo pipefail
source "$(dirname "$0")/lib.sh"   # T0/left, OUT, NCCL settings, setup (as they were here)

TRAIN=(examples/configs/ppbench-att.yaml --gpus 4
       --set data.path=data/ppbench2 --set run_dir=runs/ppb2
       --set train.lr_warmup_steps=200 --set train.max_steps=15000 --set train.lr_min_ratio=0.1
       --set eval.every_steps=2500 --set checkpoint.every_steps=1000 --set log.progress=lines)
BEST=runs/ppb2/checkpoints/best

prepare() {  # data/gen (seed 1), data/src (janko) and data/golden as in the first session
    mkdir -p data/hard data/ppbench-val/val
    # 2,500 sudoku of the tdoku lists: easy-but-sparse 17-clue ones and the forum's hardest
    python3 - <<'EOF'
import random
r = random.Random(7)
for src, n, name in [("puzzles2_17_clue.txt", 1500, "tdoku_17clue_s7_1500.txt"),
                     ("puzzles5_forum_hardest_1905_11+.txt", 1000,
                      "tdoku_forum_hardest_s7_1000.txt")]:
    lines = [l for l in open("/work/shared/data/sudoku/" + src) if l.strip() and l[0] != "#"]
    open("data/hard/" + name, "w").writelines(r.sample(lines, n))
EOF
    # the first build's validation puzzles, kept as validation (build-data --val-from)
    cp data/ppbench/val/puzzles.jsonl data/ppbench-val/val/
}

call1() {
    setup
    # data/gen2: seed 2, 2,000 a type, deterministic per (seed, index) whatever the worker count,
    # so these resume what was started on 2 cores and `ptrm generate` rebuilds the same files.
    # nurikabe with islands up to 20 (golden has 13, 14, 20), sudoku with >= 8 solver conflicts.
    timeout 150 ptrm generate nurikabe --n 2000 --seed 2 -p max_island=20 --workers 60 \
        --out data/gen2/nurikabe.jsonl -q
    timeout 60 ptrm generate sudoku --n 2000 --seed 2 --min-difficulty 8 --workers 60 \
        --out data/gen2/sudoku.jsonl -q
    for t in heyawake tapa shakashaka lightup; do
        timeout 40 ptrm generate $t --n 2000 --seed 2 --workers 60 --out data/gen2/$t.jsonl -q
    done
    wc -l data/gen2/*.jsonl
    ptrm build-data data/gen data/gen2 data/src data/hard --golden data/golden/golden_300.jsonl \
        --val-from data/ppbench-val --out data/ppbench2 --workers 60 --json > "$OUT/build.json"
    python3 -c "import json; r=json.load(open('$OUT/build.json')); print(r['puzzles'])"
    timeout -s TERM "$(left 575)" ptrm train "${TRAIN[@]}" \
        --init-from ptrm_cli/models/default 2>&1 | grep -v "^\s*$" | tail -n 60
    tail -n 3 runs/ppb2/log.jsonl
}

pick_sigma() {  # the sigma with the highest aggregate best-Q@K (rules) on validation
    python3 - "$1" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
best = max(r["ptrm"], key=lambda p: (p["summary"]["aggregate"]["rules"]["best_q"]["mean"],
                                     -p["sigma"]))
print(best["sigma"])
EOF
}

report() {  # report SPLIT_ARGS... : one eval, K=100 D=$D sigma=$SIGMA, 3 seeds
    local name=$1; shift
    timeout "${TMO:-590}" ptrm eval "$@" -c "$BEST" --K 100 --D "$D" --sigma "$SIGMA" --seeds 3 --det-D "$DET" \
        -o "runs/ppb2/eval_$name" --no-plots > "runs/ppb2/eval_$name.txt" 2>&1
    cp "runs/ppb2/eval_$name/report.json" "$OUT/eval_$name.json"
    tail -n 40 "runs/ppb2/eval_$name.txt"
}

call2() {
    setup >/dev/null
    timeout -s TERM "$(left 270)" ptrm train "${TRAIN[@]}" --resume 2>&1 \
        | grep -v "^\s*$" | tail -n 40
    cp runs/ppb2/log.jsonl "$OUT/train_log.jsonl"
    ls -l "$BEST"/
    (cd "$BEST" && split -b 15m model.safetensors "$OUT/model.safetensors.part-" \
        && cp config.json "$OUT/config.json")
    timeout "$(left 420)" ptrm eval --split val --data data/ppbench2 -c "$BEST" --K 100 --D 16 \
        --sigma 0.1,0.2,0.3,0.5 --seeds 1 --det-D 16 --gpus 4 -o runs/ppb2/sweep_val \
        --no-plots > runs/ppb2/sweep_val.txt 2>&1
    cp runs/ppb2/sweep_val/report.json "$OUT/sweep_val.json"
    tail -n 25 runs/ppb2/sweep_val.txt
    SIGMA=$(pick_sigma runs/ppb2/sweep_val/report.json || echo 0.2); echo "$SIGMA" > runs/ppb2/sigma.txt
    echo "sigma chosen on val: $SIGMA"
    TMO=$(left 470) D=16 DET=16,48 SIGMA=$SIGMA report d16_golden --split golden --gpus 4
    TMO=$(left 590) D=16 DET=16,48 SIGMA=$SIGMA report d16_val --split val --data data/ppbench2 \
        --gpus 4
}

call3() {
    setup >/dev/null
    SIGMA=$(cat runs/ppb2/sigma.txt)
    # GPUs 1-3: the D=48 report; GPU 0 meanwhile: the one-GPU benchmarks
    ( export CUDA_VISIBLE_DEVICES=1,2,3
      TMO=$(left 150) D=48 DET=48 SIGMA=$SIGMA report d48_golden --split golden --gpus 3
      TMO=$(left 470) D=48 DET=48 SIGMA=$SIGMA report d48_val --split val --data data/ppbench2 \
          --gpus 3
    ) > runs/ppb2/d48.txt 2>&1 &
    local evals=$!
    ( export CUDA_VISIBLE_DEVICES=0
      timeout 330 ptrm bench -c "$BEST" --K 100 --D 48 --puzzles 61 --split golden \
          --modes fast,adaptive,eager,profile --repeats 1 --out "$OUT/bench_1gpu.json"
      timeout 150 python3 scripts/bench_train.py --steps 20 --warmup 5 --compile both \
          --json "$OUT/bench_train_1gpu.json"
    ) > runs/ppb2/bench1.txt 2>&1
    tail -n 60 runs/ppb2/bench1.txt
    wait $evals
    cat runs/ppb2/d48.txt | tail -n 80
    timeout "$(left 540)" ptrm bench -c "$BEST" --gpus 4 --K 100 --D 48 --puzzles 61 \
        --modes fast --out "$OUT/bench_4gpu.json" 2>&1 | tail -n 30
    timeout "$(left 590)" torchrun --standalone --nproc-per-node 4 scripts/bench_train.py \
        --steps 20 --warmup 5 --compile on --json "$OUT/bench_train_4gpu.json" 2>&1 | tail -n 15
}

"$@"
