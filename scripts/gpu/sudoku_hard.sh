#!/usr/bin/env bash
# Issue #11 item 4 on the GPU machine: TRM-MLP on tdoku-hard, trained across device sessions,
# then PTRM vs TRM on its test split. One phase per device call (a call may last 10 minutes;
# the machine stays warm ~30 s between calls, so runs/ and data/ persist only while it does).
#
#   bash scripts/gpu/sudoku_hard.sh prepare   # here: the small inputs to carry
#   run: bash scripts/gpu/sudoku_hard.sh train 560        carry: .whl data/src-tdoku
#        data/tdoku-tune data/sudoku-mlp-resume/last   (once a session brought it back)
#        (with last/ the tree passes 64 MiB: move the bundled model aside for these calls,
#        scripts/gpu/README.md says how)
#   bash scripts/gpu/sudoku_hard.sh keep DIR  # here: unpack what came back (files_at) into
#                                             # data/sudoku-mlp-resume (last/ and best/)
#   run: bash scripts/gpu/sudoku_hard.sh evaluate-tune | evaluate-trm | evaluate-ptrm SEED
#        carry: .whl data/tdoku-test (made by `prepare`; else data/src-tdoku, and tdoku-hard
#        is rebuilt) data/tdoku-tune (evaluate-tune) data/sudoku-mlp-resume/best
#        (on a machine still warm from `train`, the better of the two bests is evaluated)
# Carry last/ (40 MB) or best/ (20 MB), not both: with the wheels and lists, both would pass
# the 64 MiB a call carries.
#
# Why phases: the official recipe is 65,104 updates (50,000 epochs x 1,000 puzzles / 768); a
# session's 30 device minutes hold part of it, so each `train` call continues from the weights
# the last one brought back (a warm start: EMA + raw weights + step counter + data position;
# AdamATan2's moments restart, the lr re-warmed over 200 steps: with the optimizer state the
# bundle would pass the 64 MiB that comes back). Validation (the best checkpoint) is
# tdoku-tune, never the test split. What is written to $OUT comes back; nothing else survives.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
LISTS=(puzzles5_forum_hardest_1905_11+.txt puzzles6_forum_hardest_1106.txt)
RUN=${RUN:-runs/sudoku-mlp}
RESUME=${RESUME:-data/sudoku-mlp-resume}

# a dry run on a CPU: NO_SETUP=1 SETS="--set model.hidden_size=32 ..." K=2 D=2 SAMPLE=10
K=${K:-100} D=${D:-64} SAMPLE=${SAMPLE:-1000} TUNE_SAMPLE=${TUNE_SAMPLE:-100}
read -ra SETS <<< "${SETS:-}"
read -ra EVAL_ARGS <<< "${EVAL_ARGS:-}"   # more `ptrm eval` options for evaluate-ptrm

prepare() {  # here: the two tdoku lists (8 MB) travel; tdoku-hard (324 MB) is rebuilt there
    mkdir -p data/src-tdoku
    for f in "${LISTS[@]}"; do cp "/work/shared/data/sudoku/$f" data/src-tdoku/; done
    [ -d data/tdoku-tune ] || echo "build data/tdoku-tune first (docs/BUILD_DATA.md)" >&2
    # the test split alone (4 MB: tdoku-hard's val and meta) for the evaluation calls, which
    # then skip the ~1 minute rebuild
    [ -f data/tdoku-hard/meta.json ] || return 0
    rm -rf data/tdoku-test && mkdir -p data/tdoku-test
    cp -r data/tdoku-hard/meta.json data/tdoku-hard/counts.json data/tdoku-hard/val data/tdoku-test/
}

build() {  # the same bytes as the documented build (same files, same seed)
    [ -f data/tdoku-hard/meta.json ] && return
    ptrm build-data "${LISTS[@]/#/data/src-tdoku/}" --family sudoku-native \
        --augmentation sudoku-trm --train-puzzles 1000 --augment 1001 --val-per-type 5000 \
        --workers "$(nproc --all)" --out data/tdoku-hard --json > "$OUT/build.json" || exit 1
    python3 - <<'EOF'  # the sigma set shares nothing with it (tdoku-tune was built with --exclude)
import json
keys = lambda p: {json.loads(l)["key"] for l in open(p)}
hard = keys("data/tdoku-hard/val/puzzles.jsonl") | keys("data/tdoku-hard/train/puzzles.jsonl")
tune = keys("data/tdoku-tune/val/puzzles.jsonl")
assert not hard & tune and len(hard) == 6000 and len(tune) == 300, "rebuild tdoku-tune"
print("tdoku-hard: 6000 puzzles, tdoku-tune: 300, no overlap")
EOF
}

test_data() {  # the test split: carried (data/tdoku-test, from `prepare`), else rebuilt
    if [ -f data/tdoku-test/meta.json ]; then echo data/tdoku-test; return; fi
    build >&2 && echo data/tdoku-hard
}

train() {  # train SECONDS: continue (or start) the official recipe for that long, bring it back
    setup
    build
    local from=()
    if [ -e "$RUN/checkpoints/last" ]; then   # the machine stayed warm: continue exactly
        from=(--resume)
    elif [ -f "$RESUME/last/model.safetensors" ]; then
        from=(--init-from "$RESUME/last" --set resume.rewarmup_steps=200)
    fi
    timeout -s TERM "$(left "${1:-560}")" ptrm train examples/configs/sudoku-mlp.yaml \
        $(gpus) "${from[@]}" --set run_dir="$RUN" --set checkpoint.every_steps=1000 --set eval.every_steps=2000 \
        --set log.progress=lines "${SETS[@]}" 2>&1 | grep -v "^\s*$" | tail -n 40
    cp "$RUN/log.jsonl" "$OUT/train_log.jsonl"
    pack "$RUN" raw   # last: EMA + raw weights + state (~40 MB); best on tdoku-tune: EMA
    ls -l "$OUT"
}

keep() { unpack "$1" "$RESUME"; }  # here: what a train call brought back (files_at)

# The evaluation, one device call per phase (measured 2026-11-26 on 4 H100s: PTRM K=100 D=64
# on a seed of 1,000 test puzzles took 487-506 s, 528-550 s with the call's setup):
#   evaluate-tune          sigma on tdoku-tune (a seeded TUNE_SAMPLE of its 300)
#   evaluate-trm           TRM K=1 at D=16 and D=64 on all 5,000 test puzzles
#   evaluate-ptrm SEED [N] PTRM K=100 D=64 on a seeded SAMPLE of them, seeds SEED..SEED+N-1
# then here: ptrm eval --merge (the seeds' reports) -o DIR; report_tables.py DIR/report.json
checkpoint() {  # the better on tdoku-tune of this machine's run and an earlier session's best
    local run=$RUN/checkpoints old=$RESUME/best
    [ -f "$old/model.safetensors" ] || { echo "$run/best"; return; }
    [ -e "$run/best" ] || { echo "$old"; return; }
    python3 - "$old/score.json" "$run/last/train_state.json" "$old" "$run/best" <<'EOF2'
import json, sys
old = (json.load(open(sys.argv[1])) or {}).get("exact_accuracy", -1.0)
new = (json.load(open(sys.argv[2])).get("best") or {}).get("exact_accuracy", -1.0)
print(sys.argv[4] if new >= old else sys.argv[3])
EOF2
}

evaluate-tune() {
    setup
    build
    ptrm eval --split val --data data/tdoku-tune -c "$(checkpoint)" --K "$K" --D "$D" \
        --sigma 0.1,0.2,0.3,0.5 --seeds 1 --det-D "$D" --sample "$TUNE_SAMPLE" $(gpus) \
        -o "$RUN/sweep_tune" --no-plots 2>&1 | tail -n 20
    cp "$RUN/sweep_tune/report.json" "$OUT/sweep_tune.json"
}

# the sigma sweep of this machine, else the one a session brought back (SWEEP=...)
sweep() { [ -f "$RUN/sweep_tune/report.json" ] && echo "$RUN/sweep_tune/report.json" \
    || echo "${SWEEP:?no sigma sweep here: run evaluate-tune or set SWEEP}"; }

evaluate-trm() {
    local sw data; sw=$(sweep) || return 1
    setup
    data=$(test_data) || return 1
    ptrm eval --split val --data "$data" -c "$(checkpoint)" --K 1 --D "$D" --seeds 1 \
        --det-D "16,$D" --sigma-from "$sw" $(gpus) -o "$RUN/test_trm" --no-plots 2>&1 \
        | tee "$OUT/test_trm.log" | tail -n 12
    cp "$RUN/test_trm/report.json" "$OUT/test_trm.json"
}

# One seed of 1,000 puzzles took longer than the 490 s a call once had (session 6: nothing came
# back), so: the output goes to $OUT as it is written (what a timed-out call still returns),
# and the eval is interrupted (SIGINT: partial.json keeps the finished runs) before BUDGET
# seconds (default 580, under a call's 600) so the partial report comes back for `--resume`.
evaluate-ptrm() {
    local seed=${1:?first seed} n=${2:-1} sw data; sw=$(sweep) || return 1
    setup
    data=$(test_data) || return 1
    timeout -s INT "$(left "${BUDGET:-580}")" ptrm eval --split val --data "$data" \
        -c "$(checkpoint)" --K "$K" --D "$D" --seed "$seed" --seeds "$n" --det-D "$D" \
        --sample "$SAMPLE" $(gpus) --sigma-from "$sw" -o "$RUN/test_ptrm_$seed" --no-plots \
        ${RESUME_EVAL:+--resume} "${EVAL_ARGS[@]}" 2>&1 | tee "$OUT/test_ptrm_seed$seed.log" | tail -n 30
    cp "$RUN/test_ptrm_$seed/report.json" "$OUT/test_ptrm_seed$seed.json" \
        || cp "$RUN/test_ptrm_$seed/partial.json" "$OUT/test_ptrm_seed$seed.partial.json"
}

"$@"
