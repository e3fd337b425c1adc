#!/usr/bin/env python3
"""Score models on validation' (docs/TRAINING.md, stage 4's selection): validation's puzzles
of every type but sudoku (its 100 sudoku came from the old generator) plus data/sudoku-check
(100 of the fixed generator). Each model gives two `ptrm eval` reports of the same settings:
validation (VAL, sudoku and other types) and sudoku-check (CHECK, sudoku only); prints TRM at
each depth both hold and, per sigma both hold, PTRM pass / best-Q / verified, as correct counts
and percentages.

    python3 scripts/gpu/validation_prime.py NAME=VAL.json,CHECK.json [NAME=...]
"""

from __future__ import annotations

import json
import sys

SELECTORS = ("pass", "best_q", "verified")


class Mismatch(ValueError):
    """Two reports that do not make one validation' score."""


def correct(groups: dict, drop: str | None) -> float:
    """Correct puzzles by the rules over a deterministic run's types, less `drop`."""
    return sum(g["n"] * g["rules"]["acc"] for name, g in groups.items()
               if not name.startswith("aggregate") and name != drop)


def types_of(report: dict) -> set[str]:
    return {t for t in report["deterministic"][0]["groups"] if not t.startswith("aggregate")}


def check_pair(val: dict, check: dict) -> None:
    if types_of(check) != {"sudoku"}:
        raise Mismatch(f"CHECK holds {sorted(types_of(check))}: expected sudoku only "
                       "(VAL,CHECK in that order?)")
    if val.get("split", {}).get("name") == "golden":  # a selection score: never the test set
        raise Mismatch("VAL is the golden set: models are chosen on validation only")
    if "sudoku" not in types_of(val) or len(types_of(val)) < 2:
        raise Mismatch(f"VAL holds {sorted(types_of(val))}: expected sudoku and other types")
    for key in ("halt", "K", "D", "perturb"):
        a, b = val["settings"].get(key), check["settings"].get(key)
        if a != b:
            raise Mismatch(f"the two reports ran with different {key} ({a} vs {b})")


def score(val: dict, check: dict) -> list[str]:
    check_pair(val, check)
    sizes = val["deterministic"][0]["groups"]
    n = sizes["aggregate"]["n"] - sizes["sudoku"]["n"] + \
        check["deterministic"][0]["groups"]["sudoku"]["n"]
    lines = []
    dets = {d["D"]: d for d in check["deterministic"]}
    for dv in val["deterministic"]:
        dc = dets.get(dv["D"])
        if dc is None:
            lines.append(f"  TRM D={dv['D']}: no sudoku-check run at that depth")
            continue
        c = correct(dv["groups"], "sudoku") + correct(dc["groups"], None)
        lines.append(f"  TRM D={dv['D']}: {c:.0f}/{n} ({100 * c / n:.1f}%)")
    checks = {p["sigma"]: p for p in check["ptrm"]}
    halt = val["settings"].get("halt")
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
        lines.append(f"  PTRM K={p['K']} D={p['D']} sigma {p['sigma']:g}"
                     + (f" halt {halt:g}" if halt is not None else "") + ": " + ", ".join(cells))
    return lines


def load(path: str) -> dict:
    try:
        report = json.load(open(path))
        report["deterministic"], report["ptrm"], report["settings"]  # noqa: B018 (a check)
        return report
    except OSError as e:
        raise Mismatch(f"{path}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError):
        raise Mismatch(f"{path}: not a `ptrm eval` report") from None


def main(argv: list[str]) -> int:
    if not argv or any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0 if argv else 2
    try:
        for arg in argv:
            name, eq, paths = arg.partition("=")
            files = paths.split(",")
            if not eq or not name or len(files) != 2:
                raise Mismatch(f"{arg!r}: expected NAME=VAL.json,CHECK.json")
            val, check = (load(p) for p in files)
            lines = score(val, check)
            print(f"{name} ({val['checkpoint']}):")
            print("\n".join(lines))
    except Mismatch as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
