#!/usr/bin/env bash
# Issue #10, the paper's protocol (written in session 12; updates 0-22,771 ran in session 13):
# one TRM-Att run of the recipe's 65,104 updates from scratch on one fixed mix, where stages
# 1-8 were a first run and then warm starts of 4,500-30,000 updates on changing mixes
# (docs/TRAINING.md). ~41 minutes of updates on 4 x H100 with CUDA graphs (26.5 updates/s), so
# calls over three sessions:
#
#   here:  bash scripts/gpu/stage9.sh prepare   (janko + fresh samples of the sudoku lists)
#   carry: .whl data/s9-prep (a copy of data/s9 as `prepare` left it: a carried data/s9 would
#          replace, on a warm machine, the sources generated there)
#   run:   mkdir -p data/s9 && cp -n data/s9-prep/* data/s9/ && bash scripts/gpu/stage9.sh train
#          [SECONDS]   (each call: the rest of the recipe for as long as the call holds; a fresh
#          machine first generates and builds, ~3.5 min with 64 workers)
#   here:  bash scripts/gpu/stage9.sh keep FILES_AT   (last/ + best/ -> data/ppb9-resume, and
#          `last` in bf16 -> scripts/gpu/resume/ppb9, committed: 14 MB)
#   run:   bash scripts/gpu/stage9.sh finish [SECONDS]   (the last call of `train`: the rest
#          of the recipe, then the bundled model on this validation with the time left)
#   run:   bash scripts/gpu/stage9.sh compare   (after update 65,104, on the warm machine:
#          its best at σ 0.5, 1, 2, 3 against the bundled model at its 2.0, K=100, D=16)
#   run:   bash scripts/gpu/stage9.sh report    (if it won: issue #10's report, 3 seeds)
#   run:   bash scripts/gpu/stage9.sh perturb_y && ... y_report   (the noise on y: σ sweep, report)
#   here:  python3 scripts/ship_model.py data/ppb9-resume/best --sweep FILES_AT/v_new.json
#          --selected-on "..."   (it becomes the bundled model, with the σ its sweep chose)
#
# The first call starts from scratch; a call on a machine that stayed warm continues exactly
# (--resume); a call on a fresh machine continues from the committed bf16 `last` of an earlier
# one (its EMA weights as both EMA and raw ones, its step and data position; optimizer moments
# from zero, lr re-warmed over 200 updates, as sudoku_hard.sh did for issue #11 at no visible
# cost). Data/ may not survive from one session to the next (session 12 started without it),
# so the resume point lives in git, at half the size of fp32 weights; the forward runs in bf16
# anyway. Generation is deterministic per (seed, index) and the build is seeded, so every
# machine builds the same dataset; its
# validation split (100 a type, 50 tapa) chooses the model, golden is held out by identity.
# A CPU dry run: NO_SETUP=1 SCALE=100 SETS="--set device=cpu --set train.compile=false ..."
set -uo pipefail
source "$(dirname "$0")/lib.sh"
SRC=data/s9 DATA=data/ppbench9 RUN=${RUN:-runs/ppb9} RESUME=${RESUME:-data/ppb9-resume}
LEAN=${LEAN:-scripts/gpu/resume/ppb9}   # tracked: the bf16 `last` a fresh machine starts from
SHARED=${SHARED:-../shared/data}
SCALE=${SCALE:-1}   # divides every count (a dry run)
KNOBS_NK=(-p stuck=0 -p max_island=20 -p repairs=30 -p big=0.2 -p theme=0.1 -p budget=20000)
KNOBS_TAPA=(-p shape=0.1 -p corridor=2 -p tries=5)
read -ra SETS <<< "${SETS:-}"

prepare() {  # here: what comes from ../shared (janko, sudoku lists), never golden
    mkdir -p "$SRC"
    cp "$SHARED"/janko/*.json "$SRC"/
    # fresh samples of the lists: none of the 2,500 of stages 2-4 (seed 7) or the 3,000 of
    # stage 8 (seed 12), so its validation sudoku are new to every earlier model too
    python3 - "$SHARED/sudoku" "$SRC" "$SCALE" <<'PY'
import random, sys
src, out, scale = sys.argv[1], sys.argv[2], int(sys.argv[3])
def lines(name):
    return [l for l in open(f"{src}/{name}") if l.strip() and l[0] != "#"]
lists = {"puzzles2_17_clue.txt": (1500, 500, 1500), "puzzles5_forum_hardest_1905_11+.txt":
         (1000, 2500, 2500)}   # (stages 2-4, stage 8, this stage), in the order they drew
# the earlier draws, replayed as they ran: one generator per stage, the lists in this order
every = {name: lines(name) for name in lists}
old, s8, s9 = random.Random(7), random.Random(12), random.Random(21)
used = {name: set(old.sample(every[name], n7)) for name, (n7, _, _) in lists.items()}
for name, (_, n12, _) in lists.items():
    used[name] |= set(s8.sample([l for l in every[name] if l not in used[name]], n12))
for name, (_, _, n) in lists.items():
    fresh = [l for l in every[name] if l not in used[name]]
    open(f"{out}/tdoku_{name.split('_')[0]}_s21_{n // scale}.txt", "w").writelines(
        s9.sample(fresh, n // scale))
PY
    ls "$SRC"
}

sources() {  # deterministic per (seed, index) and resumable: a cut run completes the files
    # (GEN_BUDGET seconds in all, 400 unless set: here, `GEN_BUDGET=99999 stage9.sh sources`)
    local w; w=$(nproc --all)
    # a batch cut short stops the call (its file is completed by the next call's run): a
    # dataset built from part of the sources would differ from machine to machine
    gen() { local t=$1 n=$2 seed=$3 file=$4; shift 4
        timeout "$(left "${GEN_BUDGET:-400}")" ptrm generate "$t" --n $((n / SCALE)) \
            --seed "$seed" --workers "$w" --out "$SRC/$file.jsonl" -q "$@" || exit 1; }
    gen sudoku 4000 21 sudoku_hard --min-difficulty 6
    gen sudoku 2000 22 sudoku
    gen lightup 4000 21 lightup
    gen shakashaka 4000 21 shakashaka
    gen heyawake 4000 21 heyawake
    gen tapa 2000 21 tapa "${KNOBS_TAPA[@]}" -p qmarks=0.1
    gen tapa 2000 22 tapa_noq "${KNOBS_TAPA[@]}"
    gen nurikabe 2000 21 nurikabe "${KNOBS_NK[@]}"
    gen nurikabe 2000 22 nurikabe_20 -p max_island=20
    wc -l "$SRC"/*.jsonl
}

build() {  # once per machine
    [ -f "$DATA/meta.json" ] && return
    sources
    local golden
    golden=$(python3 -c "from ptrm_cli.eval_sets import golden_path as g; print(g())")
    ptrm build-data "$SRC" --golden "$golden" --out "$DATA" --workers "$(nproc --all)" --json \
        > "$OUT/build.json" || exit 1
    python3 -c "import json; r=json.load(open('$OUT/build.json')); print(r['puzzles'])"
}

train() {  # train [SECONDS]: the recipe from where it stands, for as long as the call holds
    setup
    build
    local from=()
    if [ -e "$RUN/checkpoints/last" ]; then   # the machine stayed warm: continue exactly
        from=(--resume)
    elif [ -f "$LEAN/model.safetensors" ]; then   # an earlier session's run
        from=(--init-from "$LEAN" --set resume.rewarmup_steps=200)
    fi
    timeout -s TERM "$(left "${1:-560}")" ptrm train examples/configs/ppbench-att.yaml $(gpus) \
        "${from[@]}" --set data.path="$DATA" --set run_dir="$RUN" \
        --set checkpoint.every_steps=1000 --set log.progress=lines "${SETS[@]}" 2>&1 \
        | grep -v "^\s*$" | tail -n 30
    cp "$RUN/log.jsonl" "$OUT/train_log.jsonl"
    pack "$RUN" step   # last: EMA weights + state; best on validation: EMA
}

finish() {  # finish [SECONDS]: `train` to the end, then, in the time the call has left, the
    # bundled model on this validation (what `compare` measures the new model against; on the
    # same warm machine `compare` then reuses it)
    train "${1:-560}"
    bundled_on_val "$DATA" "$(left "${2:-590}")"
}

compare() {  # after the last update: the run's best against the bundled model on this run's
    # validation (the choice), then golden for the record; on a fresh machine carry data/s9 (or
    # s9-prep) and the best as `keep` left it (data/ppb9-resume/best, or its write_lean copy)
    setup >/dev/null
    build
    # a model trained from scratch may want another σ than the bundled one's 2.0 (stages 2-4
    # chose 0.2, 0.5 and 1.0)
    versus "${BEST:-$RUN/checkpoints/best}" "$DATA" "${COMPARE_UNTIL:-540}" 0.5,1.0,2.0,3.0
}

report() {  # after `compare`, on the same machine, if the new model won: issue #10's report
    # (golden and validation, D=16 and D=48, 3 seeds, σ from compare's sweep v_new); here
    # afterwards: python3 scripts/ship_model.py BEST --sweep FILES_AT/v_new.json --selected-on ..
    setup >/dev/null
    build
    full_report 9 "${BEST:-$RUN/checkpoints/best}" "$DATA" runs/e_v_new/report.json
}

perturb_y() {  # the best with the noise on y, at y's own σ: stage 8's sweep of the bundled
    # model found 0.3 far ahead of z at 2.0 (docs/INFERENCE.md); since the run ended its best
    # is the bundled model (session 15 swept 0.2-0.5 with BEST=data/ppb9-best-lean, its bf16)
    setup >/dev/null
    build
    ev v_new_y "$(left 560)" --split val --data "$DATA" -c "${BEST:-ptrm_cli/models/default}" \
        --D 16 --det-D 16 --seeds 1 --sigma "${SIGMAS:-0.3,0.5,0.7,1.0}" --perturb y
}

y_report() {  # after perturb_y, on the same machine: issue #10's report with the noise on y
    # at the σ that sweep chose (--sigma-from takes the sweep's target with its σ); then
    # here: python3 scripts/ship_model.py ptrm_cli/models/default --sweep FILES_AT/v_new_y.json
    setup >/dev/null
    build
    # (SWEEP: that sweep's report carried to a fresh machine, e.g. data/v_new_y.json)
    full_report 9y "${BEST:-ptrm_cli/models/default}" "$DATA" \
        "${SWEEP:-runs/e_v_new_y/report.json}"
}

keep() {  # keep FILES_AT: the call's last/ and best/, and the lean resume point from last/
    unpack "$1" "$RESUME" || return 1
    python3 -c "import sys; from ptrm_cli.engine.train_checkpoint import write_lean as w
w(*sys.argv[1:])" "$RESUME/last" "$LEAN" && du -sh "$LEAN"
}

"$@"
