"""One report from `ptrm eval` runs that split their seeds across jobs (`ptrm eval --merge`).

A 3-seed PTRM evaluation of a large split can outlast a job's time limit; run it as one job per
seed (`--seed S --seeds 1`, same split, checkpoint and settings) and merge the reports: the
seeds' runs are pooled and everything computed over seeds is recomputed from them (summaries,
mean time, per-puzzle scores, the width curve), so the merged report reads as if one job had
run every seed. Deterministic baselines do not depend on the seed: each depth is taken from the
first report that has it. The `q_steps` record (first sigma, first seed) is that of the report
holding the smallest seed, the one a single job of every seed records, whatever the order of the
reports.

One checkpoint is told by the content of its weights (`model.weights_sha256`), not its path:
the jobs may run on machines where the same weights live at other paths. A report written before
reports recorded that can only be checked by model config and size; the merged report says so
in `warnings` (and the command on stderr).
"""

from __future__ import annotations

import copy
import datetime
import json
import os
from pathlib import Path

import numpy as np

from .errors import PtrmError
from .eval_resume import FORMAT as PARTIAL_FORMAT, NAME as PARTIAL, refuse_unfinished, \
    setting_text
from .evaluate import FORMAT, METRICS, ptrm_entry, report_file
from .paths import report_path

# what must agree for runs to belong to one evaluation
SAME_SETTINGS = ("K", "D", "sigmas", "perturb", "width_draws", "halt", "exact")


def load_report(path: Path) -> dict:
    """A report.json, or the folder `ptrm eval -o` wrote it into."""
    file = report_file(path)
    try:
        report = json.loads(file.read_text())
    except FileNotFoundError:
        refuse_unfinished(file.parent / PARTIAL, "merge")
        raise PtrmError(f"{file}: no such report (a report.json, or the folder holding "
                        "one)") from None
    except (OSError, ValueError) as e:
        raise PtrmError(f"{file}: not a readable report.json ({e})") from None
    if isinstance(report, dict) and report.get("format") == PARTIAL_FORMAT:
        refuse_unfinished(file, "merge")
    if not isinstance(report, dict) or report.get("format") != FORMAT:
        raise PtrmError(f"{file}: not a `ptrm eval` report (format {FORMAT!r} expected; "
                        "ARC reports do not merge)")
    if (why := _incomplete(report)) is not None:
        raise PtrmError(f"{file}: not a complete `ptrm eval` report ({why}); only reports "
                        "as `ptrm eval` wrote them merge")
    # absolute: it is recorded (`merged_from[].report`, `warnings`) in a report read later
    # from elsewhere, where `-o s0` as typed named nothing
    report["_path"] = report_path(file)
    return report


# Every path a merge reads: `[]` is every item of a list, `*` every value of a dict, `{a,b}`
# each of a and b, GROUPS the report's groups and METRICS the metrics of evaluate.py.
REQUIRED = ("settings.{K,D,sigmas,perturb,det_D}", "split.keys", "model.{config,parameters}",
            "device", "checkpoint", "deterministic.[].D",
            "ptrm.[].{sigma,K,D,perturb,flops_per_puzzle,per_puzzle}",
            "ptrm.[].runs.[].{seed,time_per_puzzle_s,verify_time_per_puzzle_s}",
            "ptrm.[].runs.[].groups.GROUPS.n",
            "ptrm.[].runs.[].groups.GROUPS.{label,rules}.METRICS",
            "width_curve.metrics.*.{mean,std}")


def _incomplete(report: dict) -> str | None:
    """What a merge would miss in `report` (a report cut short or edited by hand), or None."""
    settings = report.get("settings")
    seeds = settings.get("seeds") if isinstance(settings, dict) else None
    if seeds is None:
        return "no settings.seeds"
    if not isinstance(seeds, list) or not seeds or not all(type(x) is int for x in seeds):
        return "settings.seeds is not a list of whole numbers"
    groups = report.get("groups")
    if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
        return "no list groups"
    names = {"GROUPS": groups, "METRICS": METRICS}
    for path in REQUIRED:
        if (lack := _missing(report, path.split("."), "", names)) is not None:
            return f"no {lack}"
    sigmas = settings["sigmas"]
    if not isinstance(sigmas, list) or len(report["ptrm"]) != len(sigmas):
        return "not one ptrm entry per sigma of settings.sigmas"
    for i, entry in enumerate(report["ptrm"]):
        if sorted((run["seed"] for run in entry["runs"]), key=repr) != sorted(seeds, key=repr):
            return f"the runs of ptrm[{i}] are not the seeds {seeds} of settings.seeds"
    return None


def _missing(obj, parts: list[str], at: str, names: dict) -> str | None:
    """The first path of `parts` (REQUIRED's syntax) that `obj` lacks, named in full."""
    if not parts:
        return None
    head, rest = parts[0], parts[1:]
    if head in ("[]", "*"):
        if head == "[]" and isinstance(obj, list):
            kids = [(f"{at}[{i}]", x) for i, x in enumerate(obj)]
        elif head == "*" and isinstance(obj, dict):
            kids = [(f"{at}.{k}", x) for k, x in obj.items()]
        else:
            return f"{'list' if head == '[]' else 'mapping'} {at}"
        return next((m for where, x in kids
                     if (m := _missing(x, rest, where, names)) is not None), None)
    keys = (names[head] if head in names else
            head[1:-1].split(",") if head.startswith("{") else [head])
    for key in keys:
        where = f"{at}.{key}" if at else key
        if not isinstance(obj, dict) or key not in obj:
            return where
        if (m := _missing(obj[key], rest, where, names)) is not None:
            return m
    return None


def merge(reports: list[dict]) -> dict:
    """The reports (from `load_report`) as one; PtrmError when they are not one evaluation."""
    if len(reports) < 2:
        raise PtrmError("--merge needs two or more reports")
    first = reports[0]
    seen: dict[int, str] = {}
    for r in reports:
        _check_same(first, r)
    warnings = _check_weights(reports)
    for r in reports:
        for seed in r["settings"]["seeds"]:
            if seed in seen:
                raise PtrmError(f"seed {seed} is in both {seen[seed]} and {r['_path']}: "
                                "merged reports must hold different seeds")
            seen[seed] = r["_path"]

    out = copy.deepcopy({k: v for k, v in first.items()
                         if k not in ("_path", "files", "warnings")})
    out["created"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    out["device"] = " + ".join(dict.fromkeys(r["device"] for r in reports))
    # where the checkpoint and the puzzles are: an absolute path where a report has one (reports
    # before 2026-11-28 recorded them as typed, relative to a folder the merge cannot know)
    out["checkpoint"] = _located(reports, lambda r: r["checkpoint"])
    out["split"]["source"] = _located(reports, lambda r: r["split"].get("source"))
    # priced only when every run was (an H100's); each run's own cost is kept in its record
    prices = {r.get("usd_per_h100_hour") for r in reports}
    out["usd_per_h100_hour"] = prices.pop() if len(prices) == 1 else None
    out["model"]["weights_sha256"] = None if warnings else first["model"]["weights_sha256"]
    out["settings"]["seeds"] = sorted(seen)
    out["settings"]["det_D"] = list(dict.fromkeys(
        d for r in reports for d in r["settings"]["det_D"]))
    out["deterministic"] = list({d["D"]: d for r in reversed(reports)
                                 for d in r["deterministic"]}.values())
    out["deterministic"].sort(key=lambda d: out["settings"]["det_D"].index(d["D"]))
    # q_steps: the first sigma's first seed, as one job of every seed records it
    lowest = min(reports, key=lambda r: min(r["settings"]["seeds"]))
    out["q_steps"] = copy.deepcopy(lowest.get("q_steps"))
    out["ptrm"] = [_merge_sigma([r["ptrm"][i] for r in reports], first["groups"])
                   for i in range(len(first["ptrm"]))]
    if first.get("width_curve"):
        out["width_curve"] = _merge_width([r["width_curve"] for r in reports],
                                          [len(r["settings"]["seeds"]) for r in reports])
    out["merged_from"] = [{"report": r["_path"], "seeds": r["settings"]["seeds"],
                           "created": r.get("created"), "device": r["device"],
                           "checkpoint": r["checkpoint"],
                           "weights_sha256": r["model"].get("weights_sha256")} for r in reports]
    if warnings:
        out["warnings"] = warnings
    return out


def _located(reports: list[dict], value):
    """`value(report)` of the first report where it begins with an absolute path (a split's
    source may go on: `/data/x.csv (rating >= 2)`), else of the first report: the runs of one
    evaluation (`_check_same`) differ only in where they ran."""
    return next((value(r) for r in reports
                 if isinstance(value(r), str) and os.path.isabs(value(r))), value(reports[0]))


def _check_weights(reports: list[dict]) -> list[str]:
    """PtrmError when two reports name different weights; the warnings for reports that name
    none (written before reports recorded them)."""
    known: dict[str, str] = {}  # digest -> the first report holding it
    for r in reports:
        digest = r["model"].get("weights_sha256")
        if digest is not None and known and digest not in known:
            other = next(iter(known.values()))
            raise PtrmError(f"{r['_path']} and {other}: different weights (checkpoints); only "
                            "runs of one evaluation (same split, model and settings, other "
                            "seeds) merge")
        if digest is not None:
            known.setdefault(digest, r["_path"])
    old = [r["_path"] for r in reports if r["model"].get("weights_sha256") is None]
    if not old:
        return []
    return [f"the weights could not be compared: {', '.join(old)} predate(s) the weights "
            "fingerprint (model.weights_sha256); only the model config and parameter count "
            "were checked"]


def _check_same(first: dict, r: dict) -> None:
    def differ(what: str, hint: str | None = None):
        raise PtrmError(f"{r['_path']} and {first['_path']}: different {what}; only runs of "
                        "one evaluation (same split, model and settings, other seeds) merge",
                        hint=hint)

    if r["split"].get("keys") != first["split"].get("keys"):
        differ("puzzles (split, --sample, --types or --limit)")
    if r["model"]["config"] != first["model"]["config"] or \
            r["model"]["parameters"] != first["model"]["parameters"]:
        differ("models")
    for key in SAME_SETTINGS:
        if r["settings"].get(key) != first["settings"].get(key):
            differ(f"settings ({key} {setting_text(r['settings'].get(key))} vs "
                   f"{setting_text(first['settings'].get(key))})",
                   _exact_hint(first, r) if key == "exact" else None)
    if r["groups"] != first["groups"]:
        differ("puzzle types")
    judged = [(x.get("width_curve") or {}).get("judge", "label") for x in (r, first)]
    if judged[0] != judged[1]:  # a report from before the curves were judged by the rules
        differ(f"width-curve judgments ({judged[0]} vs {judged[1]})")


def _exact_hint(first: dict, r: dict) -> str:
    """Two reports that differ in `exact`: one summed RMSNorm by a reduction (written before
    the fixed order became the default on 2026-11-28, or with --no-exact), which the other's
    seeds can be run again to match."""
    older = first if not first["settings"].get("exact") else r
    return (f"{older['_path']} summed RMSNorm by a reduction (written before the fixed order "
            "became the default on 2026-11-28, or with --no-exact): run the other report's "
            "seeds again with --no-exact to merge them with it")


def _merge_sigma(entries: list[dict], groups: list[str]) -> dict:
    """One sigma's records of several reports: runs pooled, everything over seeds recomputed."""
    runs = sorted((run for e in entries for run in e["runs"]), key=lambda run: run["seed"])
    weights = [len(e["runs"]) for e in entries]
    per_puzzle = {judge: {k: _weighted([e["per_puzzle"][judge][k] for e in entries], weights)
                          for k in d}
                  for judge, d in entries[0]["per_puzzle"].items()}
    setting = {k: entries[0][k] for k in ("sigma", "K", "D", "perturb", "flops_per_puzzle")}
    return ptrm_entry(setting, runs, groups, per_puzzle)


def _weighted(values: list[list[float]], weights: list[int]) -> list[float]:
    a = np.asarray(values, dtype=float)
    w = np.asarray(weights, dtype=float)[:, None]
    return ((a * w).sum(0) / w.sum()).tolist()


def _merge_width(curves: list[dict], seeds: list[int]) -> dict:
    """Width curves (mean and population std over each report's seeds) pooled exactly:
    mean = weighted mean, variance = weighted mean of (std^2 + (mean - pooled mean)^2)."""
    first = curves[0]
    w = np.asarray(seeds, dtype=float)[:, None]
    metrics = {}
    for m in first["metrics"]:
        mean = np.asarray([c["metrics"][m]["mean"] for c in curves])
        std = np.asarray([c["metrics"][m]["std"] for c in curves])
        pooled = (mean * w).sum(0) / w.sum()
        var = ((std ** 2 + (mean - pooled) ** 2) * w).sum(0) / w.sum()
        metrics[m] = {"mean": pooled.tolist(), "std": np.sqrt(var).tolist()}
    return {"sigma": first["sigma"], "ks": first["ks"], "metrics": metrics,
            **({"judge": first["judge"]} if "judge" in first else {})}
