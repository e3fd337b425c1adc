"""Markdown tables from `ptrm eval` reports (report.json), as pasted into README.md and
docs/TRAINING.md: per type, % correct by the rules verifier (or --judge label), deterministic
TRM at each depth the report holds, then PTRM pass / best-Q / mode / verified @K as mean ± std
over the report's seeds (each column names its sigma when the report holds several), and the
aggregate's 95% Wilson intervals (of the mean over seeds, over the report's n puzzles).

    python3 scripts/report_tables.py docs/runs/ppbench-att2-2026-11-26-d16_golden.json ...
"""

from __future__ import annotations

import argparse
import json

SELECTORS = (("pass", "pass"), ("best_q", "best-Q"), ("mode", "mode"), ("verified", "verified"))


def table(report: dict, judge: str) -> str:
    dets = {d["D"]: d for d in report["deterministic"] if d["K"] == 1}
    runs = report["ptrm"]
    head = ["type", "n"] + [f"TRM D={D}" for D in sorted(dets)]
    sweep = len(runs) > 1  # columns of several sigmas: say which is which
    for p in runs:
        head += [f"{name}@{p['K']}" + (f" σ={p['sigma']:g}" if sweep else "")
                 for _, name in SELECTORS]
    # the noise target is said when it is not the paper's z (a y sweep's σ are y's)
    settings = ", ".join("PTRM K={K} D={D} σ={sigma:g}".format(**p) +
                         ("" if p.get("perturb", "z") == "z" else f" on {p['perturb']}")
                         for p in runs)
    if report["settings"].get("halt") is not None:  # `ptrm eval --halt`: the mean steps used
        used = [f"TRM D={D} {dets[D]['halt_steps']:.1f}" for D in sorted(dets)] + \
            [f"PTRM σ={p['sigma']:g} {p['halt_steps']:.1f}" for p in runs]
        settings += (f", every rollout halted at sigmoid(Q) > {report['settings']['halt']:g} "
                     f"(mean steps: {', '.join(used)})")
    sample = report["split"].get("sample")  # --sample: n of a larger split
    size = (f"{report['split']['n']} puzzles" if not sample else
            f"{report['split']['n']} of {sample['of']} puzzles, a seeded sample")
    lines = [f"{report['split']['name']} ({size}), {settings}, "
             f"{len(runs[0]['runs'])} seeds, % correct by the {judge} judgment, "
             f"{report['device']}:", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group in report["groups"]:
        n = runs[0]["summary"][group]["n"]
        row = [f"**{group}**" if group == "aggregate" else group, str(n)]
        row += [f"{100 * dets[D]['groups'][group][judge]['acc']:.1f}" for D in sorted(dets)]
        for p in runs:
            s = p["summary"][group][judge]
            row += [f"{100 * s[key]['mean']:.1f} ± {100 * s[key]['std']:.1f}"
                    for key, _ in SELECTORS]
        lines.append("| " + " | ".join(row) + " |")
    ci = lambda w: f"{100 * w[0]:.0f}-{100 * w[1]:.0f}"  # noqa: E731
    cis = [f"TRM D={D} {ci(dets[D]['groups']['aggregate'][judge]['wilson'])}"
           for D in sorted(dets)]
    for p in runs:  # every σ of a sweep, each named
        agg, at = p["summary"]["aggregate"][judge], f" (σ={p['sigma']:g})" if sweep else ""
        cis += [f"best-Q{at} {ci(agg['best_q']['wilson'])}", f"pass{at} "
                f"{ci(agg['pass']['wilson'])}"]
    lines += ["", f"95% Wilson intervals of the aggregate: {', '.join(cis)}."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--judge", choices=("rules", "label"), default="rules")
    args = ap.parse_args()
    for path in args.reports:
        with open(path) as f:
            print(table(json.load(f), args.judge) + "\n")


if __name__ == "__main__":
    main()
