#!/usr/bin/env bash
# Issue #10, stage 3 (ran in session 8; stage 4 reused it in session 9): a warm start on the batches
# aimed at golden's weak types (tapa with '?' and corridor clues, nurikabe with big islands
# and themes: data/gen3, docs/GENERATORS.md), then the report as in stage 2. One phase per
# device call; the machine stays warm ~30 s between calls, so runs/ and data/ persist while
# it does.
#
#   here:  bash scripts/gpu/stage3.sh prepare
#   carry: .whl data/gen data/gen2 data/gen3 data/src data/hard data/golden data/ppbench-val
#   run:   bash scripts/gpu/stage3.sh train      (data + training, ~9 min)
#   run:   bash scripts/gpu/stage3.sh more       (optional: the exact resume, ~9 min more)
#   run:   bash scripts/gpu/stage3.sh report16   (sigma on validation, D=16 reports)
#   run:   bash scripts/gpu/stage3.sh report48   (D=48 reports)
#   here:  bash scripts/gpu/stage3.sh keep FILES_AT   (last/, best/ -> data/ppb3)
#
# A later stage is the same script with RUN=runs/ppbN, DATA=data/ppbenchN, EXTRA="data/genN"
# (its batches, made here or on the device: MORE_DATA is a command run before build-data, e.g.
# a resumable `ptrm generate` that completes one) and STEPS/EVAL_EVERY for the calls it will get
# (2 H100s: ~4,500 updates a call; 4: ~10,000); INIT is the bundled model, i.e. the last stage.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
RUN=${RUN:-runs/ppb3}
STEPS=${STEPS:-10000}
EVAL_EVERY=${EVAL_EVERY:-2500}
INIT=${INIT:-ptrm_cli/models/default}   # the warm start: the bundled model
DATA=${DATA:-data/ppbench3}
SIGMAS=${SIGMAS:-0.1,0.2,0.3,0.5}   # report16's sweep on validation (stage 3 chose its largest)
read -ra EXTRA <<< "${EXTRA:-}"   # more source folders for build-data (a later stage's batches)
# the sources before EXTRA: folders or files (a later stage may list files to leave some out)
read -ra SOURCES <<< "${SOURCES:-data/gen data/gen2 data/gen3 data/src data/hard}"
BEST=$RUN/checkpoints/best
KNOBS_NK=(-p stuck=0 -p max_island=20 -p repairs=30 -p big=0.2 -p theme=0.1 -p budget=20000)
KNOBS_TAPA=(-p shape=0.1 -p corridor=2 -p tries=5)
read -ra SETS <<< "${SETS:-}"   # extra --set pairs (a CPU dry run: a tiny model)

prepare() {  # data/gen3 as generated here; the device completes what is missing, same bytes
    wc -l data/gen3/*.jsonl
    ls .whl
}

generate() {  # deterministic per (seed, index): these finish what was begun elsewhere
    local w; w=$(nproc --all)
    timeout 150 ptrm generate nurikabe --n 2000 --seed 2 -p max_island=20 --workers "$w" \
        --out data/gen2/nurikabe.jsonl -q
    timeout 240 ptrm generate nurikabe --n 2000 --seed 3 "${KNOBS_NK[@]}" --workers "$w" \
        --out data/gen3/nurikabe.jsonl -q
    # tapa: 3,000 with '?' clues (seed 3) are in data/gen3/tapa.jsonl; 2,000 without (seed 4)
    timeout 120 ptrm generate tapa --n 2000 --seed 4 "${KNOBS_TAPA[@]}" --workers "$w" \
        --out data/gen3/tapa_noq.jsonl -q
    wc -l data/gen2/*.jsonl data/gen3/*.jsonl
}

train() {  # one call: the data, then a warm start from $INIT for as much as the call holds
    setup
    [ -n "${NO_GENERATE:-}" ] || generate   # NO_GENERATE=1: a dry run on what is here
    [ -z "${MORE_DATA:-}" ] || timeout 240 bash -c "$MORE_DATA"   # a later stage's own batches
    local golden=data/golden/golden_300.jsonl   # or the same file from the ppbench wheel
    [ -f "$golden" ] || golden=$(python3 -c "from ptrm_cli.eval_sets import golden_path as g; print(g())")
    ptrm build-data "${SOURCES[@]}" "${EXTRA[@]}" \
        --golden "$golden" --val-from data/ppbench-val --out "$DATA" \
        --workers "$(nproc --all)" --json > "$OUT/build.json" || exit 1
    python3 -c "import json; r=json.load(open('$OUT/build.json')); print(r['puzzles'])"
    run_train --init-from "$INIT"
}

more() {  # the next call on the same warm machine: the exact resume of train's run, same STEPS
    setup >/dev/null
    run_train --resume
}

run_train() {  # ptrm train with this stage's settings and "$@", stopped (and saved) by SIGTERM
    timeout -s TERM "$(left 560)" ptrm train examples/configs/ppbench-att.yaml $(gpus) "$@" \
        --set data.path="$DATA" --set run_dir="$RUN" \
        --set train.lr_warmup_steps=200 --set train.max_steps="$STEPS" \
        --set train.lr_min_ratio=0.1 --set eval.every_steps="$EVAL_EVERY" \
        --set checkpoint.every_steps=1000 --set log.progress=lines "${SETS[@]}" 2>&1 \
        | grep -v "^\s*$" | tail -n 40
    cp "$RUN/log.jsonl" "$OUT/train_log.jsonl"
    pack "$RUN"   # EMA weights of last and best (2 x 28.5 MB)
}

report() {  # report NAME D DETS SPLIT_ARGS...: K=100, sigma from the validation sweep, 3 seeds
    local name=$1 D=$2 dets=$3; shift 3
    timeout "${TMO:-590}" ptrm eval "$@" -c "$BEST" --K 100 --D "$D" --seeds 3 --det-D "$dets" \
        --sigma-from "$RUN/sweep_val/report.json" $(gpus) -o "$RUN/eval_$name" --no-plots \
        > "$RUN/eval_$name.txt" 2>&1
    cp "$RUN/eval_$name/report.json" "$OUT/eval_$name.json"
    tail -n 40 "$RUN/eval_$name.txt"
}

report16() {
    setup >/dev/null
    timeout "$(left 320)" ptrm eval --split val --data "$DATA" -c "$BEST" --K 100 --D 16 \
        --sigma "$SIGMAS" --seeds 1 --det-D 16 $(gpus) -o "$RUN/sweep_val" --no-plots 2>&1 \
        | tail -n 25
    cp "$RUN/sweep_val/report.json" "$OUT/sweep_val.json"
    TMO=$(left 380) report d16_golden 16 16,48 --split golden
    TMO=$(left 590) report d16_val 16 16,48 --split val --data "$DATA"
}

report48() {
    setup >/dev/null
    TMO=$(left 200) report d48_golden 48 48 --split golden
    TMO=$(left 590) report d48_val 48 48 --split val --data "$DATA"
}

keep() { unpack "$1" "${KEEP:-data/ppb3}"; }

"$@"
