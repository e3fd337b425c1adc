"""`ptrm eval`'s pipeline: a benchmark split -> PTRM runs over (sigma, seed) and deterministic
TRM baselines -> metrics per puzzle type and aggregated -> one JSON report (+ plots.py).

    split       an EvalSet (eval_sets.py): golden (PPBench golden, six types at 9x9/10x10: 61
                puzzles), a PPBench JSONL file (same filter), another source file, or a split
                of a `ptrm build-data` dataset
    PTRM        for each sigma, for each seed: K rollouts of D steps for every puzzle, judged
                by label match and by the rules verifier, under every selector
    baselines   deterministic TRM (K=1, sigma=0) at depth D and at equal compute (K*D steps)
    extras      the width curve (pass@k, best-Q@k, mode@k, verified@k for k <= K, subsampled
                from the runs at the first sigma), and sigmoid(Q) over supervision steps for
                correct vs incorrect rollouts (first sigma, first seed)

Aggregates are sample-weighted (every puzzle counts once), as in the paper. Time is measured
on the device used; cost converts it at $2.50 per H100-hour (paper §5.1) only when that device
is an H100 (else it is null, `-` in the table): CPU or another GPU's time at the H100 rate
would be a cost nobody pays.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

import numpy as np
import torch

from . import __version__
from .engine.sampler import PERTURB
from .errors import PtrmError
from .eval_resume import FORMAT as PARTIAL_FORMAT, NAME as PARTIAL, SavedRuns, \
    refuse_unfinished, weights_sha256
from .eval_sets import EvalSet
from .paths import report_path
from .solver import LoadedModel, valid_matrix

FORMAT = "ptrm-eval/1"
USD_PER_H100_HOUR = 2.50
#: the paper reports its aggregate without shakashaka (TRM already solves all of it)
PAPER_EXCLUDES = "shakashaka"
METRICS = ("pass", "best_q", "mode", "q_vote", "verified")
WIDTH_KS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
#: how the width curve and Q over steps judge a rollout: the rules, as the tables first do
#: (reports before 2026-11-27 judged them by label match, and say nothing)
CURVE_JUDGE = "rules"
#: how a σ sweep is ranked: --sigma-from's choice, the σ-sweep table and sigma_sweep.png
SWEEP_JUDGE = "rules"


# -- scoring ---------------------------------------------------------------------------------

class SigmaChoice(NamedTuple):
    sigma: float
    split: str          # the split the sweep ran on
    tied: list[float]   # every sigma at the best score (more than one: the sweep saturated)
    swept: list[float]  # every sigma of the sweep, ascending
    halt: float | None = None  # the sweep's --halt (None: answers at the last step)
    perturb: str = "z"  # where the sweep put the noise (reports before --perturb: z)

    @property
    def at_edge(self) -> bool:
        """The sweep's largest sigma (or its smallest above 0) won outright among three or
        more: the best may lie beyond what was swept."""
        return len(self.swept) >= 3 and self.tied == [self.sigma] and \
            (self.sigma == self.swept[-1] or 0 < self.sigma == self.swept[0])


def report_file(path: Path) -> Path:
    """A report.json given as itself or as the folder `ptrm eval --out` wrote it into."""
    path = Path(path)
    return path / "report.json" if path.is_dir() else path


def sigma_from_report(path: Path, judge: str = SWEEP_JUDGE, option: str = "--sigma-from") \
        -> SigmaChoice:
    """The noise scale a validation sweep chose: the sigma of `path` (a report.json of `ptrm
    eval` with several sigmas, or its folder) with the highest aggregate best-Q@K, ties to the
    smaller sigma (the least departure from deterministic TRM that scores as well). The paper's
    protocol picks sigma on validation only, so a report of the golden set is refused. Errors
    name `path` as the `option` that gave it."""
    def number(x) -> float:  # a sigma or a score as `ptrm eval` writes them: finite, >= 0
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 <= x < math.inf:
            raise ValueError(x)
        return float(x)

    file = report_file(path)
    try:
        report = json.loads(file.read_text())
        if isinstance(report, dict) and report.get("kind") == "arc":
            raise PtrmError(f"{option} {path}: an ARC evaluation (one σ, pass@K over its test "
                            "pairs), not a σ sweep of puzzles",
                            hint="choose σ for an ARC model by running `ptrm eval --data DIR "
                                 "--sigma S` for each σ and comparing their pass@K")
        if isinstance(report, dict) and report.get("format") == PARTIAL_FORMAT:
            refuse_unfinished(file, f"give {option}")
        runs = report["ptrm"]
        split = report["split"]["name"]
        scored = [(number(r["summary"]["aggregate"][judge]["best_q"]["mean"]),
                   -number(r["sigma"]), number(r["sigma"])) for r in runs]
        halt = report["settings"].get("halt")  # reports before --halt have none
        perturb = report["settings"].get("perturb", "z")
        if perturb not in PERTURB:
            raise ValueError(perturb)
    except OSError as e:
        if isinstance(e, FileNotFoundError):
            refuse_unfinished(file.parent / PARTIAL, f"give {option}")
        raise PtrmError(f"{option} {path}: cannot read {file} ({e.strerror or e})") \
            from None
    except (ValueError, KeyError, TypeError, AttributeError):  # settings not a mapping too
        raise PtrmError(f"{option} {path}: not a `ptrm eval` report.json") from None
    if not scored:
        raise PtrmError(f"{option} {path}: the report has no PTRM runs")
    if split == "golden":
        raise PtrmError(f"{option} {path}: that sweep ran on the golden set; choose sigma "
                        "on a validation split (--split val --data DIR)")
    top = max(scored)
    return SigmaChoice(top[2], split, sorted(sig for q, _, sig in scored if q == top[0]),
                       sorted(sig for _, _, sig in scored), halt, perturb)


def sweep_model_differs(path: Path, loaded: LoadedModel) -> str | None:
    """Why the sweep of `path` (already read by `sigma_from_report`) may not suit `loaded`, or
    None. A warning, not an error: choosing sigma on an earlier checkpoint of the same run is
    legitimate. Reports before `model.weights_sha256` existed compare by model config only."""
    report = json.loads(report_file(path).read_text())
    model = report.get("model") or {}
    if model.get("config") is not None and model["config"] != loaded.config.to_dict():
        return (f"--sigma-from {path}: that sweep was made with another kind of model "
                f"({report.get('checkpoint')}, a different config) than {loaded.path}")
    if model.get("weights_sha256") not in (None, weights_sha256(loaded.path)):
        return (f"--sigma-from {path}: that sweep was made with other weights "
                f"({report.get('checkpoint')}) than {loaded.path}; its sigma was chosen for "
                "those")
    return None


def score(preds: torch.Tensor, q: torch.Tensor, labels: torch.Tensor,
          valid: torch.Tensor) -> dict[str, dict[str, torch.Tensor]]:
    """Per puzzle, for every metric: was it right, by label match and by the rules verifier.
    pass = any rollout right (the oracle); the others: the rollout that selector picks."""
    from .engine import metrics

    preds = canonical(preds, labels)
    ok = metrics.correct(preds, labels[:, None, :])
    ar = torch.arange(preds.shape[0])
    out = {"label": {"pass": metrics.pass_at_k(ok)}, "rules": {"pass": metrics.pass_at_k(valid)}}
    for how in metrics.SELECTORS:
        ch = metrics.select(preds, q, how, valid)
        out["label"][how] = ok[ar, ch]
        out["rules"][how] = valid[ar, ch]
    return out


def canonical(preds: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Predictions with the positions the label ignores (pad: sudoku's padding) set to pad, so
    mode@K and agreement compare answers, not the untrained junk a model writes there."""
    return torch.where(labels[:, None, :] == 0, torch.zeros_like(preds), preds)


def groups_of(ev: EvalSet) -> dict[str, torch.Tensor]:
    """Row masks: one per type, the aggregate, and the paper's aggregate without shakashaka
    (only when both shakashaka and other types are present)."""
    t = np.asarray(ev.types)
    out = {name: torch.as_tensor(t == name) for name in ev.type_order()}
    out["aggregate"] = torch.ones(len(t), dtype=torch.bool)
    if PAPER_EXCLUDES in out and len(out) > 2:
        out[f"aggregate_excl_{PAPER_EXCLUDES}"] = torch.as_tensor(t != PAPER_EXCLUDES)
    return out


def by_group(scored: dict, groups: dict[str, torch.Tensor]) -> dict:
    return {g: {"n": int(m.sum()),
                **{judge: {k: float(v[m].double().mean()) for k, v in d.items()}
                   for judge, d in scored.items()}}
            for g, m in groups.items()}


def summarize(values: list[float], n: int) -> dict:
    """Mean and spread over seeds, with a 95% Wilson interval for the mean accuracy over the
    n puzzles (seeds are not independent samples, so n is not multiplied by them)."""
    a = np.asarray(values, dtype=float)
    mean = float(a.mean())
    return {"mean": mean, "std": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
            "min": float(a.min()), "max": float(a.max()), "wilson": wilson_of(mean, n)}


def wilson_of(p: float, n: int) -> list[float]:
    """The 95% Wilson interval of an observed proportion p over n puzzles. A mean over seeds is
    fractional (2/9 for n=3): it goes in as is, since rounding to a whole count of successes
    (1/3) would give the interval of another proportion."""
    from .engine.metrics import wilson

    return list(wilson(p * n, n))


# -- running ---------------------------------------------------------------------------------

@dataclass
class EvalSettings:
    K: int
    D: int
    sigmas: list[float]
    seeds: list[int]
    perturb: str = "z"
    det_D: list[int] = field(default_factory=list)  # deterministic baselines; [] = [D, K*D]
    chunk_rows: int | None = None
    det_chunk_rows: int | None = None
    draws: int = 8
    #: sigmoid(Q) threshold: each rollout's answer at its first step above it (sampler.halted);
    #: None: at its last step, the paper's protocol
    halt: float | None = None
    #: RMSNorm summed in a fixed order (TRM.fixed_order_norm): the compiled engine on a GPU
    #: gives the eager loop's rollouts bit for bit
    exact: bool = True

    def __post_init__(self):
        if not self.det_D:
            self.det_D = [self.D, self.K * self.D] if self.K > 1 else [self.D]
        self.det_D = list(dict.fromkeys(self.det_D))


def det_key(D: int) -> str:
    """Where a deterministic TRM run at depth D is saved (eval_resume.SavedRuns)."""
    return f"det/{D}"


def ptrm_key(sigma: float, seed: int) -> str:
    """Where the PTRM run at (sigma, seed) is saved."""
    return f"ptrm/{sigma!r}/{seed}"


def run_keys(s: "EvalSettings") -> list[str]:
    """Every saved run an evaluation with settings `s` reads."""
    return [det_key(d) for d in s.det_D] + [ptrm_key(sg, sd) for sg in s.sigmas for sd in s.seeds]


def provenance(loaded: LoadedModel) -> dict:
    """What made a report: when, from which checkpoint, on what, with which versions (as a
    checkpoint records them; "ptrm" in a report holds the PTRM runs, hence `ptrm_version`),
    and torch's CPU threads (a CPU evaluation repeats bit for bit only with as many)."""
    return {"created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "checkpoint": report_path(loaded.path), "device": _device_name(loaded.device),
            "cpu_threads": torch.get_num_threads(),
            "ptrm_version": __version__, "torch": torch.__version__}


def steps_to_run(P: int, s: EvalSettings, saved: SavedRuns) -> int:
    """The supervision steps (of one puzzle's row) that an evaluation of P puzzles still has
    to run: each TRM baseline's D, and K*D for each σ and seed, less the runs `saved` holds."""
    det_steps = sum(d for d in s.det_D if saved.get(det_key(d)) is None)
    ptrm_runs = sum(_stale(saved.get(ptrm_key(sg, sd)), *_records(s, si, sd))
                    for si, sg in enumerate(s.sigmas) for sd in s.seeds)
    return P * (det_steps + s.K * s.D * ptrm_runs)


def run_eval(loaded: LoadedModel, ev: EvalSet, s: EvalSettings, *,
             progress: Callable[[float], None] | None = None,
             saved: SavedRuns | None = None) -> dict:
    """Every run, scored. `progress(fraction)` is called as compute completes. Each finished
    run goes into `saved` at once, and a run already there is restored, not run again. The
    model's RMSNorm is set to sum as `s.exact` says (`TRM.fixed_order_norm`), and stays so."""
    from .engine.distributed import sample, world  # sharded over a torchrun launch's ranks
    from .engine.model import count_parameters, flops_per_step
    from .engine.sampler import SamplerConfig, halted

    # the model sums RMSNorm as the settings (and so the report) say, whoever loaded it
    loaded.model.fixed_order_norm(s.exact)
    cfg = loaded.config
    P = len(ev)
    groups = groups_of(ev)
    price = usd_per_hour(loaded.device)
    cards = world()[1]  # the cards of a --gpus N launch, sharing the puzzles
    fps = flops_per_step(cfg)
    saved = saved or SavedRuns.disabled()
    # progress counts only what this command computes: restored runs counted as done made a
    # resumed run's time left an estimate from the warm-up alone (~12 s left where 40 s were)
    units_total = steps_to_run(P, s, saved)
    units_done = 0.0

    def run(K, D, sigma, seed, record, chunk_rows):
        """One run, halted if the settings say so: then `used` is {"halt_steps": the mean
        steps a rollout used}, else empty."""
        nonlocal units_done
        base = units_done

        def on_chunk(stop, total):
            if progress is not None:
                progress(min(1.0, (base + stop * K * D) / units_total))

        if loaded.device.startswith("cuda"):
            torch.cuda.synchronize(loaded.device)
        t0 = time.perf_counter()
        out = sample(loaded.model, ev.inputs,
                     SamplerConfig(K=K, D=D, sigma=sigma, perturb=s.perturb,
                                   chunk_rows=chunk_rows,
                                   record_steps=record or s.halt is not None),
                     seed=seed, puzzle_ids=ev.puzzle_ids, on_chunk=on_chunk)
        t_model = time.perf_counter() - t0
        used = {}
        if s.halt is not None:
            out, steps = halted(out, s.halt)
            used["halt_steps"] = float(steps.double().mean()) if steps.numel() else float(D)
        t0 = time.perf_counter()
        valid = valid_matrix(ev.verifiers, out.preds)
        t_verify = time.perf_counter() - t0
        units_done = base + P * K * D
        return out, valid, t_model, t_verify, used

    _warm_up(sample, loaded, ev, s)

    det = []
    for d in s.det_D:
        if (entry := saved.get(det_key(d))) is not None:
            det.append(entry)
            continue
        out, valid, t_model, t_verify, used = run(1, d, 0.0, 0, False, s.det_chunk_rows)
        det.append({"D": d, "K": 1, "sigma": 0.0, "equal_compute": d == s.K * s.D and s.K > 1,
                    "flops_per_puzzle": d * fps, **_timing(t_model, t_verify, P, price, cards),
                    **used, **_det_scores(out, valid, ev.labels, groups)})
        saved.put(det_key(d), det[-1])

    ptrm, width, qsteps = [], None, None
    for si, sigma in enumerate(s.sigmas):
        runs, curves, per_puzzle = [], [], None
        for seed in s.seeds:
            record, curve = _records(s, si, seed)
            key = ptrm_key(sigma, seed)
            done = saved.get(key)
            if _stale(done, record, curve):
                out, valid, t_model, t_verify, used = run(s.K, s.D, sigma, seed, record,
                                                          s.chunk_rows)
                done = _ptrm_run(out, valid, ev.labels, groups, s, sigma, seed,
                                 timing={**_timing(t_model, t_verify, P, price, cards), **used},
                                 curve=curve, record=record)
                saved.put(key, done)
            runs.append(done["run"])
            per_puzzle = _add(per_puzzle, {j: {k: torch.tensor(v) for k, v in d.items()}
                                           for j, d in done["scores"].items()})
            if si == 0:
                curves.append({int(k): v for k, v in done["curve"]["points"].items()})
            if record:
                qsteps = done["q_steps"]
        ptrm.append(ptrm_entry(
            {"sigma": sigma, "K": s.K, "D": s.D, "perturb": s.perturb,
             "flops_per_puzzle": s.K * s.D * fps}, runs, list(groups),
            {j: {k: (v / len(s.seeds)).tolist() for k, v in d.items()}
             for j, d in per_puzzle.items()}))
        if si == 0:
            width = _width(curves, sigma)

    counts = {t: ev.types.count(t) for t in ev.type_order()}
    return {
        "format": FORMAT, **provenance(loaded),
        "model": {"parameters": count_parameters(loaded.model), "flops_per_step": fps,
                  "config": cfg.to_dict(), "weights_sha256": weights_sha256(loaded.path)},
        "split": {"name": ev.name, "source": ev.source, "n": P, "types": counts,
                  "skipped": ev.skipped, "unusable": ev.unusable, "keys": ev.keys,
                  "row_types": ev.types, "sample": ev.sampled},
        "settings": {"K": s.K, "D": s.D, "sigmas": s.sigmas, "seeds": s.seeds,
                     "perturb": s.perturb, "det_D": s.det_D, "chunk_rows": s.chunk_rows,
                     "width_draws": s.draws, "halt": s.halt,
                     **({"exact": True} if s.exact else {})},  # absent: off, as before it
        "usd_per_h100_hour": price,
        "groups": list(groups),
        "deterministic": det, "ptrm": ptrm, "width_curve": width, "q_steps": qsteps,
    }


def _warm_up(sample, loaded: LoadedModel, ev: EvalSet, s: EvalSettings) -> None:
    """Untimed: one supervision step of every configuration the timed runs use (the same chunk
    shapes, each sigma, the recording run), so no run is charged for compiling, for a recompile
    on a new shape or sigma value, or for first-call overheads; it costs 1/D of a seed per
    sigma."""
    from .engine.sampler import SamplerConfig

    halting = s.halt is not None  # every run records its steps
    sample(loaded.model, ev.inputs, SamplerConfig(K=1, D=1, sigma=0.0,
                                                  chunk_rows=s.det_chunk_rows,
                                                  record_steps=halting),
           puzzle_ids=ev.puzzle_ids)
    for si, sigma in enumerate(s.sigmas):
        sample(loaded.model, ev.inputs,
               SamplerConfig(K=s.K, D=1, sigma=sigma, perturb=s.perturb,
                             chunk_rows=s.chunk_rows, record_steps=si == 0 or halting),
               seed=s.seeds[0], puzzle_ids=ev.puzzle_ids)


def _det_scores(out, valid: torch.Tensor, labels: torch.Tensor, groups: dict) -> dict:
    """A deterministic run's accuracy per group (cell, label, rules with Wilson intervals) and
    per puzzle."""
    from .engine import metrics

    sc = score(out.preds, out.q, labels, valid)
    cell = metrics.cell_accuracy(out.preds[:, 0], labels)
    gr = {}
    for g, m in groups.items():
        n = int(m.sum())
        gr[g] = {"n": n, "cell_accuracy": float(cell[m].mean())}
        for judge in ("label", "rules"):
            acc = float(sc[judge]["best_q"][m].double().mean())
            gr[g][judge] = {"acc": acc, "wilson": wilson_of(acc, n)}
    return {"groups": gr, "per_puzzle": {"label": sc["label"]["best_q"].tolist(),
                                         "rules": sc["rules"]["best_q"].tolist()}}


def _ptrm_run(out, valid: torch.Tensor, labels: torch.Tensor, groups: dict, s: EvalSettings,
              sigma: float, seed: int, *, timing: dict, curve: bool, record: bool) -> dict:
    """One PTRM run (a sigma and seed) as saved (JSON): its record for the report, every
    puzzle's score per selector, its width curve (first sigma) and Q over steps (the recorded
    run). The aggregation over seeds reads only this, fresh or restored."""
    from .engine import metrics

    sc = score(out.preds, out.q, labels, valid)
    ks = sorted({k for k in WIDTH_KS if k <= s.K} | {s.K})
    return {"run": {"seed": seed, **timing, "groups": by_group(sc, groups)},
            "scores": {j: {k: v.tolist() for k, v in d.items()} for j, d in sc.items()},
            "curve": None if not curve else {"judge": CURVE_JUDGE, "points": {
                str(k): v for k, v in metrics.width_curve(
                    canonical(out.preds, labels), out.q, labels, ks, valid=valid, ok=valid,
                    draws=s.draws, seed=seed).items()}},
            "q_steps": _q_steps(out, labels, valid, sigma, seed) if record else None}


def ptrm_entry(setting: dict, runs: list[dict], groups: list[str], per_puzzle: dict) -> dict:
    """One sigma's PTRM record: its settings, every seed's run, their summary per group and
    judgment (mean, spread, Wilson interval), mean time and cost; `per_puzzle` is each
    puzzle's score averaged over the seeds. Also what `eval_merge` rebuilds merged seeds with."""
    summary = {}
    for g in groups:
        n = runs[0]["groups"][g]["n"]
        summary[g] = {"n": n}
        for judge in ("label", "rules"):
            summary[g][judge] = {k: summarize([r["groups"][g][judge][k] for r in runs], n)
                                 for k in METRICS}
    times = [r["time_per_puzzle_s"] for r in runs]
    t_mean = float(np.mean(times))
    costs = [r.get("cost_per_puzzle_usd") for r in runs]  # None: not timed on an H100
    if all("halt_steps" in r for r in runs):  # halted runs: the mean steps a rollout used
        setting = {**setting, "halt_steps": float(np.mean([r["halt_steps"] for r in runs]))}
    return {**setting, "time_per_puzzle_s": t_mean, "time_per_puzzle_std_s": float(np.std(times)),
            "cost_per_puzzle_usd": None if None in costs else float(np.mean(costs)),
            "verify_time_per_puzzle_s": float(np.mean([r["verify_time_per_puzzle_s"]
                                                      for r in runs])),
            "runs": runs, "summary": summary, "per_puzzle": per_puzzle}


def _timing(t_model: float, t_verify: float, P: int, usd_per_hour: float | None,
            cards: int = 1) -> dict:
    """Times of a run (wall time: with --gpus N, of all N cards at once) and its cost, which
    pays for every card the run held."""
    return {"time_s": t_model, "time_per_puzzle_s": t_model / P,
            "cost_per_puzzle_usd": None if usd_per_hour is None
            else t_model / P * usd_per_hour * cards / 3600,
            "verify_time_per_puzzle_s": t_verify / P}


def usd_per_hour(device: str) -> float | None:
    """What an hour of `device` costs: the paper's H100 rate on an H100, else None (unpriced)."""
    if device.startswith("cuda") and \
            "H100" in torch.cuda.get_device_name(torch.device(device)).upper():
        return USD_PER_H100_HOUR
    return None


def _add(acc, sc):
    new = {j: {k: v.float() for k, v in d.items()} for j, d in sc.items()}
    if acc is None:
        return new
    return {j: {k: acc[j][k] + new[j][k] for k in d} for j, d in new.items()}


def _records(s: EvalSettings, si: int, seed: int) -> tuple[bool, bool]:
    """(record, curve) of the PTRM run at σ number `si` and `seed`: the first σ draws the
    width curve, and its first seed also records Q over steps."""
    return si == 0 and seed == s.seeds[0], si == 0


def _stale(done: dict | None, record: bool, curve: bool) -> bool:
    """A PTRM run to compute: not saved, or saved without what this run records (its Q over
    steps, its width curve) or with them judged otherwise."""
    return done is None or (record and _judge(done["q_steps"]) != CURVE_JUDGE) or \
        (curve and _judge(done["curve"]) != CURVE_JUDGE)


def _judge(saved: dict | None) -> str | None:
    """How a saved run's curve or Q over steps judged rollouts (None: not saved; "label" for
    runs saved before CURVE_JUDGE)."""
    return None if saved is None else saved.get("judge", "label")


def _width(curves: list[dict], sigma: float) -> dict:
    ks = sorted(curves[0])
    names = list(curves[0][ks[0]])
    return {"sigma": sigma, "ks": ks, "judge": CURVE_JUDGE,
            "metrics": {m: {"mean": [float(np.mean([c[k][m] for c in curves])) for k in ks],
                            "std": [float(np.std([c[k][m] for c in curves])) for k in ks]}
                        for m in names}}


def _q_steps(out, labels: torch.Tensor, valid: torch.Tensor, sigma: float, seed: int) -> dict:
    """sigmoid(Q) and cell accuracy (by label) per supervision step, for rollouts whose final
    answer is correct vs incorrect by the rules."""
    from .engine import metrics

    ok = valid.reshape(-1)  # [P*K]
    q = torch.sigmoid(out.step_q.float()).reshape(-1, out.step_q.shape[-1])  # [P*K, D]
    P, K, D, L = out.step_preds.shape
    cell = metrics.cell_accuracy(out.step_preds.long(), labels[:, None, None, :]).reshape(-1, D)
    res = {"sigma": sigma, "seed": seed, "judge": CURVE_JUDGE, "steps": list(range(1, D + 1))}
    for name, m in (("correct", ok), ("incorrect", ~ok)):
        n = int(m.sum())
        if n == 0:
            res[name] = {"n": 0}
            continue
        qm = q[m]
        res[name] = {"n": n, "q_mean": qm.mean(0).tolist(),
                     "q_p25": torch.quantile(qm, 0.25, dim=0).tolist(),
                     "q_p75": torch.quantile(qm, 0.75, dim=0).tolist(),
                     "cell_accuracy": cell[m].mean(0).tolist()}
    return res


def _device_name(device: str) -> str:
    if device.startswith("cuda"):
        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    return device


# -- writing ---------------------------------------------------------------------------------

def _remove_old_plots(out_dir: Path) -> None:
    """The plots an earlier report in out_dir listed: a new report must not sit beside plots
    of another evaluation (a σ sweep plot left from a run with several σ). Only files that
    report named, and only PNGs, are removed."""
    try:
        old = json.loads((out_dir / "report.json").read_text()).get("files") or {}
    except (OSError, ValueError, AttributeError):
        return
    # by name in out_dir: reports before 2026-11-28 recorded them relative to where their run
    # started, and a folder may have moved since its report was written
    for name in old.values():
        f = out_dir / Path(str(name)).name
        if f.suffix == ".png":
            f.unlink(missing_ok=True)


def write_report(report: dict, out_dir: Path, *, plots: bool = True) -> dict[str, str]:
    """report.json and the PNG plots into out_dir; returns {name: path} of what was written."""
    from .atomic import write_text
    from .solver import to_json

    out_dir.mkdir(parents=True, exist_ok=True)
    _remove_old_plots(out_dir)
    files: dict[str, str] = {}
    if plots:
        from . import plots as plotting

        files.update(plotting.write_all(report, out_dir))
    files["report"] = str(out_dir / "report.json")
    files = {name: report_path(path) for name, path in files.items()}
    report["files"] = dict(files)
    write_text(out_dir / "report.json", to_json(report) + "\n")
    return files


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def fmt_cost(usd: float | None) -> str:
    if usd is None:  # not measured on an H100
        return "-"
    return f"${usd:.2e}" if usd < 0.01 else f"${usd:.4f}"


def fmt_flops(f: float) -> str:
    for unit, scale in (("PFLOP", 1e15), ("TFLOP", 1e12), ("GFLOP", 1e9), ("MFLOP", 1e6)):
        if f >= scale:
            return f"{f / scale:.3g} {unit}"
    return f"{f:.3g} FLOP"


def tables(report: dict):
    """Rich renderables for the terminal: per-type accuracy (by label, by rules), the sigma
    sweep when there is one, and compute per puzzle."""
    from rich import box
    from rich.table import Table

    st = report["settings"]
    main = report["ptrm"][0]
    dets = report["deterministic"]
    seeds = len(st["seeds"])

    def ms(x: dict):
        """mean, with the spread over seeds under it (keeps the table inside 80 columns)"""
        from rich.text import Text

        if seeds == 1:
            return pct(x["mean"])
        return Text.assemble(pct(x["mean"]), "\n", (f"±{pct(x['std'])}", "dim"))

    out = []
    # halted runs (--halt): the rule in the titles, the mean steps used in the compute table
    halting = f", halted at sigmoid(Q) > {st['halt']:g}" if st.get("halt") is not None else ""
    # the noise target when it is not the paper's z: a y run's σ is no z σ (report_tables too)
    on = "" if st.get("perturb", "z") == "z" else f" on {st['perturb']}"

    def steps_note(run: dict) -> str:
        return f" ({run['halt_steps']:.1f} steps)" if "halt_steps" in run else ""

    heads = {"pass": "pass", "best_q": "best-Q", "mode": "mode", "q_vote": "Q-vote",
             "verified": "verified"}
    for judge, title in (("label", "label match"), ("rules", "rules verifier")):
        spread = f", mean±std over {seeds} seeds" if seeds > 1 else ""
        t = Table(title=f"{report['split']['name']}: % correct by {title} (@K: K={st['K']} "
                        f"D={st['D']} σ={main['sigma']:g}{on}{halting}{spread})",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                  caption="* equal compute: one rollout of K·D steps"
                  if any(d["equal_compute"] for d in dets) else None, caption_justify="left")
        t.add_column("type")
        t.add_column("n", justify="right")
        for d in dets:
            t.add_column(f"TRM D={d['D']}" + ("*" if d["equal_compute"] else ""), justify="right")
        for m in METRICS:
            t.add_column(heads[m], justify="right")
        for g in report["groups"]:
            sm = main["summary"][g]
            name = g.replace(f"aggregate_excl_{PAPER_EXCLUDES}", f"agg. w/o {PAPER_EXCLUDES[:5]}.")
            cells = [name, str(sm["n"])] + [pct(d["groups"][g][judge]["acc"]) for d in dets]
            cells += [ms(sm[judge][m]) for m in METRICS]
            t.add_row(*cells, style="bold" if g == "aggregate" else None,
                      end_section=g == report["groups"][-1])
        agg = main["summary"]["aggregate"]
        ci = lambda w: f"{100 * w[0]:.0f}-{100 * w[1]:.0f}"  # noqa: E731
        t.add_row("95% CI", "", *[ci(d["groups"]["aggregate"][judge]["wilson"]) for d in dets],
                  *[ci(agg[judge][m]["wilson"]) for m in METRICS], style="dim")
        out.append(t)
    if len(report["ptrm"]) > 1:
        # by the rules, as sigma_sweep.png and --sigma-from judge a sweep: a table by label
        # match showed another ranking of σ than the one --sigma-from then took
        by = {"rules": "rules verifier", "label": "label match"}[SWEEP_JUDGE]
        t = Table(title=f"σ sweep{on}: aggregate % correct by {by}",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        t.add_column("σ", justify="right")
        for m in METRICS:
            t.add_column(heads[m], justify="right")
        for r in report["ptrm"]:
            a = r["summary"]["aggregate"][SWEEP_JUDGE]
            t.add_row(f"{r['sigma']:g}", *[ms(a[m]) for m in METRICS])
        out.append(t)
    price = report.get("usd_per_h100_hour")
    priced = f"cost at ${price:.2f}/H100-hour" if price is not None else "cost: H100 only"
    t = Table(title=f"compute per puzzle on {report['device']} ({priced})", title_justify="left",
              box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("run", "time", "cost", "FLOPs", "verify"):
        t.add_column(col, justify="left" if col == "run" else "right")
    for d in dets:
        t.add_row(f"TRM K=1 D={d['D']}{steps_note(d)}", fmt_time(d["time_per_puzzle_s"]),
                  fmt_cost(d["cost_per_puzzle_usd"]), fmt_flops(d["flops_per_puzzle"]),
                  fmt_time(d["verify_time_per_puzzle_s"]))
    for r in report["ptrm"]:
        t.add_row(f"PTRM K={r['K']} D={r['D']} σ={r['sigma']:g}{on}{steps_note(r)}",
                  fmt_time(r["time_per_puzzle_s"]),
                  fmt_cost(r["cost_per_puzzle_usd"]), fmt_flops(r["flops_per_puzzle"]),
                  fmt_time(r["verify_time_per_puzzle_s"]))
    out.append(t)
    return out


def fmt_time(s: float) -> str:
    return f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.1f} ms"
