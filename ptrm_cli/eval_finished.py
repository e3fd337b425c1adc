"""`ptrm eval --resume` on an --out whose evaluation already finished. partial.json goes away
once report.json is written, so the report itself is read back: its fingerprint
(`eval_resume.report_fingerprint`) and its runs say whether it is this very evaluation, done
(nothing to run), or another one (run again, saying how it differs)."""

from __future__ import annotations

import json
from pathlib import Path

from .eval_resume import NAME as PARTIAL, differences, report_fingerprint
from .evaluate import FORMAT, det_key, ptrm_key


def finished_report(out: Path, fp: dict, n_puzzles: int, run_keys: list[str]) -> dict | None:
    """The report.json in `out` when it is the evaluation `fp` names, of `n_puzzles` puzzles,
    with every one of `run_keys` done; else None (the runs go ahead). Only without a
    partial.json: an interrupted evaluation's --resume continues from that."""
    if (out / PARTIAL).exists():
        return None
    report = read_report(out)
    if report is None or report_differences(report, fp, n_puzzles) != []:
        return None
    return report if _report_runs(report) == set(run_keys) else None


def how_it_differs(out: Path, fp: dict, n_puzzles: int) -> str:
    """How the finished report in `out`, which --resume does not take, differs from this
    evaluation, for the note that replaces it ("" where it does not say)."""
    report = read_report(out)
    why = None if report is None else report_differences(report, fp, n_puzzles)
    if why:
        return f" of other settings (different {'; '.join(why)})"
    return "" if why is None else " of other σ, seeds or TRM depths"


def read_report(out: Path) -> dict | None:
    """The report.json in `out`; None when there is none, or it is no puzzle evaluation's (an
    ARC one, a broken file)."""
    try:
        report = json.loads((out / "report.json").read_text())
    except (OSError, ValueError):
        return None
    return report if isinstance(report, dict) and report.get("format") == FORMAT else None


def report_differences(report: dict, fp: dict, n_puzzles: int) -> list[str] | None:
    """What differs between the evaluation a finished report holds and `fp` (of `n_puzzles`
    puzzles), as --resume says it of partial.json; None when the report does not say (one
    written before reports held all of it)."""
    try:
        saved = {"fingerprint": report_fingerprint(report),
                 "n_puzzles": len(report["split"]["keys"])}
    except (KeyError, TypeError, AttributeError):
        return None
    # as the report stores it: the puzzle keys' tuples are lists there
    return differences(saved, json.loads(json.dumps(fp)), n_puzzles, where="the report")


def _report_runs(report: dict) -> set[str] | None:
    """The runs a finished report holds, keyed as partial.json keys them."""
    try:
        return {det_key(d["D"]) for d in report["deterministic"]} | \
            {ptrm_key(p["sigma"], r["seed"]) for p in report["ptrm"] for r in p["runs"]}
    except (KeyError, TypeError):
        return None
