"""Validation exact accuracy per type over training updates, from one or more stages of a run.

A stage is a `ptrm train` log.jsonl (its `eval` events) or a JSON list of those events (what
docs/runs/*.eval.json keep), with the update count it started from (a warm start counts from
0 again). A stage that warm-starts from an earlier one's checkpoint cuts that one's curve at
its offset, so the plot follows the model that was kept:

    python3 scripts/plot_training.py docs/runs/ppbench-att-2026-11-26.eval.json \
        docs/runs/ppbench-att2-2026-11-26.eval.json@30000 \
        docs/runs/ppbench-att3-2026-11-26.eval.json@42500 \
        docs/runs/ppbench-att4-2026-11-26.eval.json@47000 --out docs/img/train_ppbench.png

`--extract LOG OUT` writes the eval events of a log as such a list.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def eval_events(path: Path) -> list[dict]:
    text = path.read_text()
    if text.lstrip().startswith("["):
        return json.loads(text)
    events = [json.loads(line) for line in text.splitlines() if line.strip()]
    last = {}  # after a resume the log repeats steps: keep the line written last
    for e in events:
        if e.get("event") == "eval":
            last[e["step"]] = {k: v for k, v in e.items() if k not in ("time", "event")}
    return [last[s] for s in sorted(last)]


def plot(stages: list[tuple[Path, int]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.2))
    series: dict[str, list[tuple[int, float]]] = {}
    ends = [off for _, off in stages[1:]] + [None]  # where the next stage branched off
    for i, ((path, offset), end) in enumerate(zip(stages, ends)):
        for e in eval_events(path):
            step = offset + e["step"]
            if end is not None and step > end:
                continue
            series.setdefault("all (exact)", []).append((step, e["exact_accuracy"]))
            for t, v in e["exact_accuracy_by_type"].items():
                series.setdefault(t, []).append((step, v))
        if i:
            ax.axvline(offset, color="grey", lw=0.8, ls=":")
            # alternate heights: stages may start close together
            ax.text(offset, 0.3 - 0.1 * (i % 2 == 0), " warm start,\n new data", fontsize=7,
                    color="grey")
    for name, pts in series.items():
        xs, ys = zip(*sorted(pts))
        ax.plot(xs, ys, marker=".", lw=2.2 if name.startswith("all") else 1.0,
                color="black" if name.startswith("all") else None, label=name)
    ax.set_xlabel("updates (global batch 768)")
    ax.set_ylabel("validation exact accuracy (EMA, D=16)")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("stages", nargs="*", help="FILE or FILE@OFFSET")
    ap.add_argument("--out", type=Path, default=Path("train_curve.png"))
    ap.add_argument("--extract", nargs=2, metavar=("LOG", "OUT"))
    a = ap.parse_args()
    if a.extract:
        log, out = map(Path, a.extract)
        out.write_text(json.dumps(eval_events(log), indent=0) + "\n")
        return
    stages = []
    for s in a.stages:
        path, _, off = s.partition("@")
        stages.append((Path(path), int(off or 0)))
    plot(stages, a.out)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
