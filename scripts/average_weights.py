"""Average the weights of checkpoints of one model, as a candidate to judge on validation.

Checkpoints along one warm-start path (stages 3 and 4 of the PPBench model: stage 4 began from
stage 3's weights) often average into a model that keeps what each was good at; whether it does
is for validation to say (`scripts/gpu/stage5.sh compare`). The bundled model is such a mean
(docs/TRAINING.md, "avg34"). The result is an ordinary ptrm checkpoint; it records its sources
and no σ (choose one again):

    python3 scripts/average_weights.py data/ppb3/best data/ppb4/last --out data/avg34
    python3 scripts/average_weights.py A B --weights 0.3,0.7 --out DIR
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

from ptrm_cli.engine.checkpoint import (IDENTIFIERS, load_checkpoint, merge_trained_on,
                                        save_checkpoint)
from ptrm_cli.errors import PtrmError, plain_message
from ptrm_cli.eval_resume import weights_sha256


def average(paths: list[Path], weights: list[float], out: Path) -> Path:
    """Write sum_i weights[i] * checkpoint_i (floating tensors; others must be equal) to out,
    a new folder (never one of the inputs, nor any existing one)."""
    if len(paths) < 2:
        raise PtrmError("give two or more checkpoints to average")
    if len(weights) != len(paths):
        raise PtrmError(f"{len(weights)} weights for {len(paths)} checkpoints")
    if not all(math.isfinite(w) and w >= 0 for w in weights) or abs(sum(weights) - 1) > 1e-6:
        raise PtrmError(f"weights {weights}: expected non-negative numbers that sum to 1")
    if out.exists():
        raise PtrmError(f"--out {out} exists", hint="name a new folder: an existing one (an "
                        "input, the bundled model) is never replaced")
    models = [load_checkpoint(p) for p in paths]  # first: it says what a bad path is
    digests = [weights_sha256(p) for p in paths]
    for i, d in enumerate(digests):
        if d in digests[:i]:
            raise PtrmError(f"{paths[i]} and {paths[digests.index(d)]} hold the same weights: "
                            "averaging a checkpoint with itself changes nothing")
    first, vocab, _ = models[0]
    for p, (m, v, _) in zip(paths[1:], models[1:]):
        if m.config.to_dict() != first.config.to_dict():
            raise PtrmError(f"{p}: another model configuration than {paths[0]}'s: only "
                            "checkpoints of one model average")
        if v.to_json() != vocab.to_json():
            raise PtrmError(f"{p}: another vocabulary than {paths[0]}'s")
    # puzzle-embedding rows are averaged row by row: they must name the same puzzles
    files = [(p if p.is_dir() else p.parent) / IDENTIFIERS for p in paths]
    names = [f.read_text() if f.exists() else None for f in files]
    if any(n != names[0] for n in names[1:]):
        raise PtrmError(f"the checkpoints' {IDENTIFIERS} differ: their puzzle-embedding rows "
                        "name other puzzles and cannot be averaged")
    states = [m.state_dict() for m, _, _ in models]
    mixed = {}
    for name, ref in states[0].items():
        if ref.is_floating_point():
            mixed[name] = sum(w * s[name].double() for w, s in zip(weights, states)).to(ref.dtype)
        elif all(torch.equal(s[name], ref) for s in states[1:]):
            mixed[name] = ref
        else:
            raise PtrmError(f"tensor {name} ({ref.dtype}) differs between the checkpoints and "
                            "cannot be averaged")
    first.load_state_dict(mixed)
    meta = {"averaged_from": [{"path": str(p), "weights_sha256": d, "weight": w}
                              for p, d, w in zip(paths, digests, weights)]}
    seen = merge_trained_on(*(m.get("trained_on") for _, _, m in models))
    if seen is not None:   # the average knows what each of its checkpoints trained on
        meta["trained_on"] = seen
    return save_checkpoint(out, first, vocab, meta,
                           identifiers=None if names[0] is None else json.loads(names[0]))


def main(argv: list[str] | None = None) -> int:
    # named as the docstring runs it: its usage line and the hint of an error without one
    ap = argparse.ArgumentParser(prog="python3 scripts/average_weights.py",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("checkpoints", nargs="+", type=Path)
    ap.add_argument("--weights", help="comma-separated, summing to 1 (default: equal)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    n = len(args.checkpoints)
    try:
        weights = [1 / n] * n if args.weights is None else \
            [float(x) for x in args.weights.split(",")]
    except ValueError:
        print(f"error: --weights {args.weights!r}: expected numbers, e.g. 0.5,0.5",
              file=sys.stderr)
        return 2
    try:
        out = average(args.checkpoints, weights, args.out)
    except PtrmError as e:  # our errors, checkpoint ones included: one line, no traceback
        print(plain_message(e, ap.prog), file=sys.stderr)
        return 2
    except OSError as e:  # writing --out: a file in the way, no permission
        print(f"error: --out {args.out}: cannot write there ({e.strerror or e})", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
