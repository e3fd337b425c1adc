# Shared by the device scripts (sourced): time budget, setup, GPU count, bringing a checkpoint
# back (session2.sh's first lines and setup, moved here unchanged).
T0=$(date +%s)
# seconds left of a budget of $1 from the start, at least 1 (`timeout 0` would mean no limit)
left() { local s=$(( $1 - ($(date +%s) - T0) )); echo $(( s > 1 ? s : 1 )); }
OUT=${OUT:-out}
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=4

# "--gpus N" for the GPUs this machine has, nothing on a CPU machine (dry runs)
gpus() { local n; n=$(nvidia-smi -L 2>/dev/null | wc -l); [ "$n" -gt 0 ] && echo "--gpus $n"; }

setup() {  # the carried wheels (.whl) and this checkout, installed; NO_SETUP=1 skips it
    [ -n "${NO_SETUP:-}" ] && return
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
    python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
        || python3 -m pip install -q --no-deps --no-build-isolation -e .
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
}

# ev NAME SECONDS EVAL_ARGS...: one `ptrm eval` at K=100 on every GPU, its log in runs/e_NAME.txt
# (the last EV_TAIL lines printed, 14 unless set), its report.json to $OUT/NAME.json (or, when
# the time limit cut it, the finished runs' partial.json to $OUT/NAME.partial.json). An
# evaluation this machine already finished with the same arguments (an earlier call, while it
# stayed warm) is not run again.
ev() {
    local name=$1 t=$2; shift 2
    local args="$* --K 100 $(gpus)"
    mkdir -p runs
    if [ -f "runs/e_$name/report.json" ] && [ "$(cat "runs/e_$name.args" 2>/dev/null)" = "$args" ]
    then
        echo "e_$name: finished earlier on this machine with the same arguments"
    else
        rm -rf "runs/e_$name" && echo "$args" > "runs/e_$name.args"
        timeout "$t" ptrm eval "$@" --K 100 $(gpus) -o "runs/e_$name" --no-plots \
            > "runs/e_$name.txt" 2>&1
    fi
    tail -n "${EV_TAIL:-14}" "runs/e_$name.txt"
    # cut off by its time limit: bring back the runs it finished (put back as OUT/partial.json,
    # `ptrm eval ... --resume` on any machine computes only the rest)
    cp "runs/e_$name/report.json" "$OUT/$name.json" 2>/dev/null \
        || cp "runs/e_$name/partial.json" "$OUT/$name.partial.json"
}

# bundled_on_val DATA SECONDS: the bundled model on DATA's validation split at its chosen 2.0,
# K=100 D=16, one seed, as v_bundled: `versus`'s yardstick, which needs no new model, so a
# call with time left after training runs it early
bundled_on_val() {
    ev v_bundled "$2" --split val --data "$1" --D 16 --det-D 16 --seeds 1 --sigma 2.0
}

# versus CKPT DATA SECONDS [SIGMAS]: a checkpoint against the bundled model on DATA's
# validation split (the choice; K=100, D=16, one seed; the checkpoint at each of SIGMAS, 2.0
# unless given, the bundled model at its chosen 2.0) as v_new / v_bundled, then golden for the
# record (g_new at σ 2.0, TRM at D=16 and 48), all within SECONDS of the script's start
versus() {
    local ckpt=$1 data=$2 until=$3 sigmas=${4:-2.0}
    ev v_new "$(left $((until / 3)))" --split val --data "$data" -c "$ckpt" --D 16 \
        --det-D 16 --seeds 1 --sigma "$sigmas"
    bundled_on_val "$data" "$(left $((2 * until / 3)))"
    ev g_new "$(left "$until")" --split golden -c "$ckpt" --D 16 --det-D 16,48 --seeds 1 \
        --sigma 2.0
}

# full_report NAME MODEL DATA SWEEP: issue #10's report of one model, within 570 s of the
# script's start: golden and DATA's validation, PTRM K=100 at D=16 (with TRM at D=16 and 48)
# and at D=48, 3 seeds, σ from SWEEP (a validation sweep's report.json) as g NAME_16, g NAME_48,
# val NAME_16, val NAME_48. 570 s is 4 x H100; on fewer GPUs run it in parts, one script call
# each (the budgets count from the call's start): PARTS="g16 g48", then "v16", then "v48"
full_report() {
    local name=$1 model=$2 data=$3 sweep=$4 parts=" ${PARTS:-g16 g48 v16 v48} "
    [[ $parts = *" g16 "* ]] && ev "g${name}_16" "$(left 100)" --split golden -c "$model" \
        --D 16 --det-D 16,48 --seeds 3 --sigma-from "$sweep"
    [[ $parts = *" g48 "* ]] && ev "g${name}_48" "$(left 190)" --split golden -c "$model" \
        --D 48 --det-D 48 --seeds 3 --sigma-from "$sweep"
    [[ $parts = *" v16 "* ]] && ev "val${name}_16" "$(left 300)" --split val --data "$data" \
        -c "$model" --D 16 --det-D 16,48 --seeds 3 --sigma-from "$sweep"
    [[ $parts = *" v48 "* ]] && ev "val${name}_48" "$(left 570)" --split val --data "$data" \
        -c "$model" --D 48 --det-D 48 --seeds 3 --sigma-from "$sweep"
    return 0
}

# pack RUN_DIR [raw|step]: checkpoints/last and checkpoints/best (EMA weights) as one tar in 15
# MB parts under $OUT; "raw" adds last's raw weights and state (what a warm start needs), "step"
# its state alone (a warm start then takes the EMA weights as raw ones: half the size)
pack() {
    local d=$1/checkpoints last best
    last=$(readlink -f "$d/last"); best=$last   # no validation yet in this run: best = last
    [ -e "$d/best" ] && best=$(readlink -f "$d/best")
    rm -rf /tmp/pack && mkdir -p /tmp/pack/last /tmp/pack/best
    cp "$last"/config.json "$last"/model.safetensors /tmp/pack/last/
    [ "${2:-}" = raw ] && cp "$last"/train_state* /tmp/pack/last/
    [ "${2:-}" = step ] && cp "$last"/train_state.json /tmp/pack/last/
    cp "$best"/config.json "$best"/model.safetensors /tmp/pack/best/
    # the run's best validation record ({"step", "exact_accuracy"}), for `unpack` to compare;
    # null when this machine wrote no best (a record kept from an earlier machine would label
    # `last` with another checkpoint's score)
    python3 -c "import json, sys; json.dump(json.load(open(sys.argv[1])).get('best') \
        if sys.argv[3] == 'yes' else None, open(sys.argv[2], 'w'))" "$last/train_state.json" \
        /tmp/pack/best/score.json "$([ -e "$d/best" ] && echo yes || echo no)"
    echo "last $(basename "$last") best $(basename "$best")" | tee /tmp/pack/steps.txt
    tar cf - -C /tmp/pack . | split -b 15m - "$OUT/ckpt.tar.part-"
}

# unpack FROM_DIR TO_DIR: here, what `pack` sent back (last/ and best/). A warm-started run
# knows only its own best, so a better `best` already in TO_DIR (an earlier session's, on the
# same validation) is kept.
unpack() {
    rm -rf "$2.new" && mkdir -p "$2.new" && cat "$1"/ckpt.tar.part-* | tar xf - -C "$2.new" \
        || return 1
    if [ -f "$2/best/score.json" ] && python3 - "$2/best/score.json" "$2.new/best/score.json" \
            <<'EOF'
import json, sys
old, new = (json.load(open(p)) or {"exact_accuracy": -1.0} for p in sys.argv[1:])
sys.exit(0 if old["exact_accuracy"] > new["exact_accuracy"] else 1)
EOF
    then
        rm -rf "$2.new/best" && mv "$2/best" "$2.new/best"
        echo "kept the earlier best: $(cat "$2.new/best/score.json")"
    fi
    rm -rf "$2" && mv "$2.new" "$2" && cat "$2/steps.txt"
}
