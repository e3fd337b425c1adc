"""Markdown tables from `ptrm eval` reports (report.json), as pasted into README.md and
docs/TRAINING.md: per type, % correct by the rules verifier (or --judge label), deterministic
TRM at each depth the report holds, then PTRM pass / best-Q / mode / verified @K as mean ± std
over the report's seeds (each column names its sigma when the report holds several), and the
aggregate's 95% Wilson intervals (of the mean over seeds, over the report's n puzzles).

    python3 scripts/report_tables.py docs/runs/ppbench-att2-2026-11-26-d16_golden.json ...

`--join` makes one table of several reports of the same puzzles (a D=16 and a D=48 report,
say): TRM at every depth any of them holds, then each report's PTRM columns named by D (and σ,
target); ± is left out where the seeds agree, and every column gets its interval.

    python3 scripts/report_tables.py --join docs/runs/ppb9-2026-11-27-g9_16.json \
        docs/runs/ppb9-2026-11-27-g9_48.json
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


def joined(reports: list[dict], judge: str) -> str:
    first = reports[0]
    for r in reports[1:]:
        if (r["split"]["name"], r["split"]["n"], list(r["groups"])) != \
                (first["split"]["name"], first["split"]["n"], list(first["groups"])):
            raise SystemExit(f"--join: {r['split']['name']} ({r['split']['n']} puzzles) is not "
                             f"the puzzles of {first['split']['name']} ({first['split']['n']})")
    dets = {}  # deterministic TRM does not depend on the seed: the first report's of each D
    for r in reports:
        for d in r["deterministic"]:
            if d["K"] == 1:
                dets.setdefault(d["D"], d)
    runs = [p for r in reports for p in r["ptrm"]]
    sigmas = {p["sigma"] for p in runs}

    def name(p):  # what tells this run's columns apart from the others'
        return (f"D={p['D']}" + (f" σ={p['sigma']:g}" if len(sigmas) > 1 else "") +
                ("" if p.get("perturb", "z") == "z" else f" on {p['perturb']}"))

    def cell(s):
        mean, std = 100 * s["mean"], 100 * s["std"]
        return f"{mean:.1f}" if round(std, 1) == 0 else f"{mean:.1f} ± {std:.1f}"

    ci = lambda w: f"{100 * w[0]:.0f}-{100 * w[1]:.0f}"  # noqa: E731
    head = [f"{first['split']['name']} ({first['split']['n']})", "n"] + \
        [f"TRM D={D}" for D in sorted(dets)] + \
        [f"{label}@{p['K']} {name(p)}" for p in runs for _, label in SELECTORS]
    seeds = sorted({len(p["runs"]) for p in runs})
    lines = [f"% correct by the {judge} judgment, mean ± std over "
             f"{'/'.join(map(str, seeds))} seeds (± left out where they agree), σ "
             f"{', '.join(f'{s:g}' for s in sorted(sigmas))}, {first['device']}:", "",
             "| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for group in first["groups"]:
        row = [f"**{group}**" if group == "aggregate" else group,
               str(runs[0]["summary"][group]["n"])]
        row += [f"{100 * dets[D]['groups'][group][judge]['acc']:.1f}" for D in sorted(dets)]
        row += [cell(p["summary"][group][judge][key]) for p in runs for key, _ in SELECTORS]
        lines.append("| " + " | ".join(row) + " |")
    row = ["95% Wilson (aggregate)", ""]
    row += [ci(dets[D]["groups"]["aggregate"][judge]["wilson"]) for D in sorted(dets)]
    row += [ci(p["summary"]["aggregate"][judge][key]["wilson"]) for p in runs
            for key, _ in SELECTORS]
    lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("reports", nargs="+")
    ap.add_argument("--judge", choices=("rules", "label"), default="rules")
    ap.add_argument("--join", action="store_true",
                    help="one table of all the reports (the same puzzles at other depths or σ)")
    args = ap.parse_args()
    reports = []
    for path in args.reports:
        with open(path) as f:
            reports.append(json.load(f))
    if args.join:
        print(joined(reports, args.judge))
        return
    for report in reports:
        print(table(report, args.judge) + "\n")


if __name__ == "__main__":
    main()
