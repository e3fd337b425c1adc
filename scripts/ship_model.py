"""Make a trained checkpoint the bundled default model, with the σ its validation sweep chose.

`ptrm solve` and `ptrm eval` without --checkpoint use `ptrm_cli/models/default/`, and σ left
out is that model's `meta.sigma`, with the noise where the sweep put it (`meta.perturb`: z, the
paper's latent, or y...). Shipping a model is therefore three facts that must agree: the
weights, the σ chosen for exactly those weights on validation (never golden), and a note of
how the model was selected. This script checks them and writes the folder in one step:

    python3 scripts/ship_model.py data/ppb9-resume/best --sweep runs/e_v_new/report.json \\
        --selected-on "stage 9's validation (550), K=100 D=16: ..."

The weights are copied byte for byte, so reports made of CKPT (`model.weights_sha256`) stay
reports of the bundled model. `--to DIR` writes elsewhere (a trial, a model of one's own):
the result is an ordinary checkpoint whose σ is the sweep's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from ptrm_cli.atomic import atomic_dir
from ptrm_cli.engine.checkpoint import (CONFIG, IDENTIFIERS, WEIGHTS, load_checkpoint,
                                        refuse_to_replace)
from ptrm_cli.errors import PtrmError, plain_message
from ptrm_cli.eval_resume import weights_sha256
from ptrm_cli.evaluate import report_file, sigma_from_report
from ptrm_cli.models import DEFAULT_DIR

#: issue #10: the bundled model is at most 30 MB (safetensors with its config and vocabulary)
MAX_BYTES = 30_000_000


def ship(checkpoint: Path, sweep: Path, selected_on: str, to: Path = DEFAULT_DIR) -> dict:
    """Write `checkpoint` to `to` with meta.sigma from `sweep`; return the new meta."""
    checkpoint = Path(checkpoint)
    if not (checkpoint / WEIGHTS).is_file() or not (checkpoint / CONFIG).is_file():
        raise PtrmError(f"{checkpoint}: not a ptrm checkpoint folder (expected {WEIGHTS} and "
                        f"{CONFIG})", hint="an official step_N file: `ptrm convert` it first")
    meta = load_checkpoint(checkpoint)[2]  # it loads: the weights fit the config
    if not meta.get("trained_on"):
        raise PtrmError(f"{checkpoint}: its config.json records no trained_on, which "
                        "`ptrm solve` needs to warn about types and sizes it never saw")
    size = sum((checkpoint / f).stat().st_size for f in (WEIGHTS, CONFIG))
    if size > MAX_BYTES:
        raise PtrmError(f"{checkpoint}: {size:,} bytes, over the bundled model's "
                        f"{MAX_BYTES:,}")
    choice = sigma_from_report(sweep, option="--sweep")  # refuses a golden sweep
    report = json.loads(report_file(sweep).read_text())
    digest = weights_sha256(checkpoint)
    swept = (report.get("model") or {}).get("weights_sha256")
    if swept != digest:
        raise PtrmError(f"--sweep {sweep}: it was made with other weights "
                        f"({report.get('checkpoint')}) than {checkpoint}",
                        hint="sweep σ on validation with `ptrm eval -c CHECKPOINT --sigma ...`")
    if not selected_on.strip():
        raise PtrmError("--selected-on: say on what and by which score the model was chosen")
    scores = {f"{r['sigma']:g}": round(100 * r["summary"]["aggregate"]["rules"]["best_q"]
                                       ["mean"], 1) for r in report["ptrm"]}
    settings = report["settings"]
    on_y = "" if choice.perturb == "z" else f", noise on {choice.perturb}"
    new_meta = {**meta, "sigma": choice.sigma, "perturb": choice.perturb,
                "weights_sha256": digest,
                "shipped_from": str(checkpoint), "selected_on": selected_on.strip(),
                "sigma_chosen_on": (
                    f"{choice.split} ({report['split']['n']} puzzles), best-Q@{settings['K']} "
                    f"(%, by the rules) at D={settings['D']}{on_y} by σ: {json.dumps(scores)} "
                    f"({report_file(sweep)})")}
    if choice.at_edge:  # said in the record too: the next sweep should look further
        new_meta["sigma_chosen_on"] += "; the sweep's edge won, the best may lie beyond it"
    doc = json.loads((checkpoint / CONFIG).read_text())
    doc["meta"] = new_meta
    refuse_to_replace(Path(to))
    with atomic_dir(to) as tmp:
        shutil.copyfile(checkpoint / WEIGHTS, tmp / WEIGHTS)
        (tmp / CONFIG).write_text(json.dumps(doc, indent=1) + "\n")
        if (checkpoint / IDENTIFIERS).exists():
            shutil.copyfile(checkpoint / IDENTIFIERS, tmp / IDENTIFIERS)
    return new_meta


def main(argv: list[str] | None = None) -> int:
    # named as the docstring runs it: its usage line and the hint of an error without one
    ap = argparse.ArgumentParser(prog="python3 scripts/ship_model.py",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("checkpoint", type=Path, help="the checkpoint folder to ship")
    ap.add_argument("--sweep", type=Path, required=True,
                    help="a `ptrm eval --split val` report.json (or its folder) of these "
                         "weights at several σ")
    ap.add_argument("--selected-on", required=True,
                    help="how this model was chosen over the others (recorded in its meta)")
    ap.add_argument("--to", type=Path, default=DEFAULT_DIR,
                    help="where to write it (default: the bundled model's folder)")
    args = ap.parse_args(argv)
    try:
        meta = ship(args.checkpoint, args.sweep, args.selected_on, args.to)
    except PtrmError as e:  # our errors, checkpoint ones included: one line, no traceback
        print(plain_message(e, ap.prog), file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: cannot write {args.to} ({e.strerror or e})", file=sys.stderr)
        return 2
    print(f"wrote {args.to} (σ {meta['sigma']:g} on {meta['perturb']}: "
          f"{meta['sigma_chosen_on']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
