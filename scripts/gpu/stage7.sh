#!/usr/bin/env bash
# Written in session 11 for the next device session (scripts/gpu/README.md, items 1 and 2).
# Issue #9: CUDA graphs (`train.compile_mode=reduce-overhead`) in a real `ptrm train` on 4 GPUs,
# with evaluations, checkpoints and a resume, against the default compile mode; issue #10: where
# the noise goes (`--perturb z / y / both`) at the bundled model's σ on validation. One phase
# per device call; reports go to $OUT.
#
#   carry: .whl/ppbench-0.1.0-py3-none-any.whl data/val550
#   run:   bash scripts/gpu/stage7.sh graphs    (~3 min)
#   run:   bash scripts/gpu/stage7.sh perturb   (~3 min)
set -uo pipefail
source "$(dirname "$0")/lib.sh"
DATA=data/val550
EV_TAIL=6

graphs() {  # the tiny sudoku4 recipe, 300 updates then 100 more by --resume, per compile mode
    setup >/dev/null
    python3 -m ptrm_cli.engine.sudoku4 data/sudoku4
    local mode run
    local -A until=([reduce-overhead]=300 [default]=540)   # each mode's end, from the start
    for mode in reduce-overhead default; do
        run=runs/g_$mode
        for steps in 300 400; do
            timeout "$(left "${until[$mode]}")" ptrm train examples/configs/tiny-cpu.yaml $(gpus) \
                --device cuda --set train.compile=true --set train.compile_mode=$mode \
                --set run_dir=$run --set train.max_steps=$steps \
                $([ $steps = 400 ] && echo --resume) > "$OUT/train_${mode}_$steps.txt" 2>&1
            echo "$mode to $steps: rc $?"
        done
        cp "$run/log.jsonl" "$OUT/log_$mode.jsonl"
        python3 - "$run/log.jsonl" <<'EOF'
import json, sys
events = [json.loads(line) for line in open(sys.argv[1])]
start = [e for e in events if e["event"] == "start"]
print("  device", [e["device"] for e in start], "world", [e["world_size"] for e in start])
print("  eval exact", [(e["step"], round(e["exact_accuracy"], 4))
                       for e in events if e["event"] == "eval"])
print("  updates/s", [round(e["steps_per_s"], 1) for e in events if e["event"] == "train"][-3:])
EOF
    done
}

perturb() {  # σ 2.0 (the bundled model's), K=100 D=16, one seed: where the noise is added
    setup >/dev/null
    local p
    local -A until=([z]=150 [y]=330 [both]=570)   # each run's end, seconds from the start
    for p in z y both; do
        ev "perturb_$p" "$(left "${until[$p]}")" --split val \
            --data "$DATA" --D 16 --det-D 16 --seeds 1 --sigma 2.0 --perturb $p
    done
}

"$@"
