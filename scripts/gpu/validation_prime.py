#!/usr/bin/env python3
"""Score models on validation' (docs/TRAINING.md, stage 4's selection): validation's puzzles
of every type but sudoku (its 100 sudoku came from the old generator) plus data/sudoku-check
(100 of the fixed generator). Each model gives two `ptrm eval` reports at the same sigmas:
validation (VAL) and sudoku-check (CHECK); prints, per sigma, TRM at each depth and PTRM
pass / best-Q / verified, as correct counts of the 550 and percentages.

    python3 scripts/gpu/validation_prime.py NAME=VAL.json,CHECK.json [NAME=...]
"""

from __future__ import annotations

import json
import sys

SELECTORS = ("pass", "best_q", "verified")


def correct(groups: dict, drop: str | None) -> float:
    """Correct puzzles by the rules over a deterministic run's types, less `drop`."""
    return sum(g["n"] * g["rules"]["acc"] for name, g in groups.items()
               if not name.startswith("aggregate") and name != drop)


def score(val: dict, check: dict) -> list[str]:
    sizes = val["deterministic"][0]["groups"]
    n = sizes["aggregate"]["n"] - sizes["sudoku"]["n"] + \
        check["deterministic"][0]["groups"]["sudoku"]["n"]
    lines = []
    for dv, dc in zip(val["deterministic"], check["deterministic"]):
        c = correct(dv["groups"], "sudoku") + correct(dc["groups"], None)
        lines.append(f"  TRM D={dv['D']}: {c:.0f}/{n} ({100 * c / n:.1f}%)")
    checks = {p["sigma"]: p for p in check["ptrm"]}
    for p in val["ptrm"]:
        q = checks.get(p["sigma"])
        if q is None:
            lines.append(f"  sigma {p['sigma']:g}: no sudoku-check run")
            continue
        cells = []
        for s in SELECTORS:
            c = sum(g["n"] * g["rules"][s]["mean"] for k, g in p["summary"].items()
                    if not k.startswith("aggregate") and k != "sudoku") \
                + q["summary"]["sudoku"]["n"] * q["summary"]["sudoku"]["rules"][s]["mean"]
            cells.append(f"{s} {c:.0f} ({100 * c / n:.1f}%)")
        halt = val["settings"].get("halt")
        lines.append(f"  PTRM K={p['K']} D={p['D']} sigma {p['sigma']:g}"
                     + (f" halt {halt:g}" if halt is not None else "") + ": " + ", ".join(cells))
    return lines


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    for arg in argv:
        name, paths = arg.split("=", 1)
        val, check = (json.load(open(p)) for p in paths.split(","))
        print(f"{name} ({val['checkpoint']}):")
        print("\n".join(score(val, check)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
