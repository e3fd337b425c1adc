"""`ptrm eval`'s pipeline: a benchmark split -> PTRM runs over (sigma, seed) and deterministic
TRM baselines -> metrics per puzzle type and aggregated -> one JSON report (+ plots.py).

    split       golden (PPBench golden, six types at 9x9/10x10: 61 puzzles), a PPBench JSONL
                file (same filter), or a split of a `ptrm build-data` dataset
    PTRM        for each sigma, for each seed: K rollouts of D steps for every puzzle, judged
                by label match and by the rules verifier, under every selector
    baselines   deterministic TRM (K=1, sigma=0) at depth D and at equal compute (K*D steps)
    extras      the width curve (pass@k, best-Q@k, mode@k, verified@k for k <= K, subsampled
                from the runs at the first sigma), and sigmoid(Q) over supervision steps for
                correct vs incorrect rollouts (first sigma, first seed)

Aggregates are sample-weighted (every puzzle counts once), as in the paper. Time is measured
on the device used; cost converts it at $2.50 per H100-hour (paper §5.1), so it is only an
H100 cost when the device is an H100.
"""

from __future__ import annotations

import datetime
import json
import os
import time
import warnings
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from . import codec as registry
from .errors import ParseError, PtrmError
from .solver import LoadedModel, Verifier, family_for, valid_matrix

FORMAT = "ptrm-eval/1"
USD_PER_H100_HOUR = 2.50
#: the paper's PPBench filter: type -> (rows, cols)
GOLDEN_TYPES = {"sudoku": (9, 9), "lightup": (10, 10), "nurikabe": (10, 10),
                "heyawake": (10, 10), "tapa": (10, 10), "shakashaka": (10, 10)}
GOLDEN_IN_WHEEL = "ppbench/bundled/golden_300.jsonl"
PPBENCH_VERSION = "0.1.0"
#: the paper reports its aggregate without shakashaka (TRM already solves all of it)
PAPER_EXCLUDES = "shakashaka"
METRICS = ("pass", "best_q", "mode", "q_vote", "verified")
WIDTH_KS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


# -- the puzzles -----------------------------------------------------------------------------

@dataclass
class EvalSet:
    name: str
    source: str
    inputs: torch.Tensor        # [P, L] int64
    labels: torch.Tensor        # [P, L] int64, 0 = ignored
    types: list[str]            # [P]
    keys: list[str]             # [P] puzzle identity (URL or dataset key)
    verifiers: list[Verifier]   # [P]
    puzzle_ids: torch.Tensor | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # type -> why it is not evaluated
    #: puzzles of an evaluated type that cannot be encoded for this model, with the reason
    unusable: list[dict] = field(default_factory=list)
    #: {"n", "of", "seed"} when this is a seeded sample of a larger split (`--sample`)
    sampled: dict | None = None

    def __len__(self) -> int:
        return len(self.types)

    def sample(self, n: int, seed: int = 0) -> EvalSet:
        """A seeded random n of the puzzles (`sample_rows`)."""
        if n >= len(self):
            return self
        idx = sample_rows(len(self), n, seed)
        rows = torch.as_tensor(idx)
        pick = lambda xs: [xs[i] for i in idx]  # noqa: E731
        return replace(self, inputs=self.inputs[rows], labels=self.labels[rows],
                       types=pick(self.types), keys=pick(self.keys),
                       verifiers=pick(self.verifiers),
                       puzzle_ids=None if self.puzzle_ids is None else self.puzzle_ids[rows],
                       sampled={"n": n, "of": len(self), "seed": seed})

    def type_order(self) -> list[str]:
        known = [t for t in GOLDEN_TYPES if t in self.types]
        return known + sorted(set(self.types) - set(known))


def sample_rows(total: int, n: int, seed: int = 0) -> np.ndarray:
    """Which n of `total` puzzles `--sample n` keeps, in split order. The seed is its own (not
    the rollouts'), so every setting and seed of a report sees the same puzzles."""
    return np.sort(np.random.default_rng(seed).choice(total, min(n, total), replace=False))


def golden_path() -> Path:
    """golden_300.jsonl inside the installed ppbench wheel, found through its metadata (the
    ppbench module itself is never imported: it pulls in gymnasium and a JS bridge)."""
    hint = (f"pip install --no-deps ppbench=={PPBENCH_VERSION}, or pass --split "
            "PATH/golden_300.jsonl")
    try:
        dist = metadata.distribution("ppbench")
    except metadata.PackageNotFoundError:
        raise PtrmError("the PPBench golden set comes with the ppbench wheel, which is not "
                        "installed", hint=hint) from None
    if dist.version != PPBENCH_VERSION:
        warnings.warn(f"ppbench {dist.version} is installed; the golden set of the paper is "
                      f"the one in {PPBENCH_VERSION}", stacklevel=2)
    path = Path(dist.locate_file(GOLDEN_IN_WHEEL))
    if not path.is_file():
        raise PtrmError(f"the installed ppbench wheel has no {GOLDEN_IN_WHEEL}", hint=hint)
    return path


def _installed() -> dict:
    with warnings.catch_warnings():  # plugins that fail to load are reported by `ptrm codecs`
        warnings.simplefilter("ignore")
        return {name: reg.codec for name, reg in registry.registered().items()}


def load_ppbench_jsonl(path: Path, loaded: LoadedModel, *, name: str = "golden",
                       limit: int | None = None) -> EvalSet:
    """PPBench records, filtered to the paper's six types at their sizes."""
    codecs = _installed()
    inputs, labels, types, keys, verifiers, skipped, unusable = [], [], [], [], [], {}, []
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        raise PtrmError(f"cannot read {path}: {e.strerror or e}") from None
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise ParseError(f"not valid JSON: {e.msg}", source=str(path), line=n) from None
            pid = rec.get("pid") if isinstance(rec, dict) else None
            size = (rec.get("height"), rec.get("width"))
            if pid not in GOLDEN_TYPES or size != GOLDEN_TYPES[pid]:
                continue
            if pid not in codecs:
                skipped[pid] = "codec not installed"
                continue
            if limit is not None and len(types) >= limit:
                break
            codec = codecs[pid]
            family = family_for(codec, loaded)  # a model of another family: stop, say why
            try:
                puzzle, solution = codec.from_record(rec, source=str(path), line=n)
                x = codec.encode(puzzle, family=family)
                y = codec.encode_label(puzzle, solution, family=family)
            except PtrmError as e:  # e.g. a clue the vocabulary has no token for
                unusable.append({"line": n, "type": pid, "key": rec.get("puzzlink_url"),
                                 "reason": str(e)})
                continue
            inputs.append(x)
            labels.append(y)
            types.append(pid)
            keys.append(rec.get("puzzlink_url") or codec.key(puzzle))
            verifiers.append(Verifier(codec, puzzle, family))
    if not types:
        why = f" (skipped: {', '.join(skipped)})" if skipped else ""
        raise PtrmError(f"{path}: no puzzles of the six PPBench types at 9x9/10x10 with an "
                        f"installed codec{why}")
    return EvalSet(name, str(path), torch.as_tensor(np.stack(inputs), dtype=torch.long),
                   torch.as_tensor(np.stack(labels), dtype=torch.long), types, keys, verifiers,
                   skipped=skipped, unusable=unusable)


def load_source_file(path: Path, loaded: LoadedModel, *, limit: int | None = None,
                     sample: int | None = None) -> EvalSet:
    """Any other source file `ptrm build-data` reads (sources.READERS: Sudoku-Extreme CSV,
    sudoku lists, janko JSON), every puzzle of it, in the model's token family. Rows that
    cannot be read or used are listed as unusable with their line, as build-data counts them.
    `sample`: a seeded n of the file's records, drawn before decoding (Sudoku-Extreme's test
    set has 423k rows; only the sample is decoded and held)."""
    from . import sources

    reader = sources.reader_for(path)
    if reader is None:  # (resolve_split sends only recognised files here)
        raise PtrmError(f"{path}: not a file any source reader recognises",
                        hint="`ptrm build-data --help` lists the source formats")
    codecs = _installed()
    inputs, labels, types, keys, verifiers, skipped, unusable = [], [], [], [], [], {}, []
    bad = lambda loc, why, t=None: unusable.append(  # noqa: E731
        {"line": loc, "type": t, "key": None, "reason": why})
    items = reader.read(path, bad)
    sampled = None
    if sample is not None:
        items = list(items)
        sampled = {"n": min(sample, len(items)), "of": len(items), "seed": 0}
        items = [items[i] for i in sample_rows(len(items), sample)]
    for item in items:
        if limit is not None and len(types) >= limit:
            break
        t = sources.resolve_type(item.type)
        if t not in codecs:
            skipped[t] = "codec not installed"
            continue
        codec = codecs[t]
        family = family_for(codec, loaded)  # a model of another family: stop, say why
        try:
            puzzle, solution = reader.decode(item, codec)
            x = codec.encode(puzzle, family=family)
            y = codec.encode_label(puzzle, solution, family=family)
        except (PtrmError, sources.Drop) as e:
            bad(item.loc, str(e), t)
            continue
        inputs.append(x)
        labels.append(y)
        types.append(t)
        keys.append(item.ident or codec.key(puzzle))
        verifiers.append(Verifier(codec, puzzle, family))
    if not types:
        why = f" (skipped: {', '.join(skipped)})" if skipped else ""
        first = f"; line {unusable[0]['line']}: {unusable[0]['reason']}" if unusable else ""
        raise PtrmError(f"{path}: no puzzle to evaluate{why}{first}")
    return EvalSet(path.stem, str(path), torch.as_tensor(np.stack(inputs), dtype=torch.long),
                   torch.as_tensor(np.stack(labels), dtype=torch.long), types, keys, verifiers,
                   skipped=skipped, unusable=unusable, sampled=sampled)


def load_dataset_split(path: Path, split: str | None, loaded: LoadedModel, *,
                       limit: int | None = None) -> EvalSet:
    """A split of a `ptrm build-data` dataset; rows of types without an installed codec are
    skipped (they could be judged by label, but not by the rules)."""
    from .engine.data import load_dataset

    if split is None:
        try:
            names = list(json.loads((path / "meta.json").read_text())["splits"])
        except (OSError, ValueError, KeyError, TypeError):
            load_dataset(path)  # raises the dataset reader's own clear error
            raise PtrmError(f"{path}: cannot read the split names from meta.json") from None
        only = names[0] if len(names) == 1 else None
        split = next((s for s in ("val", "test") if s in names), only)
        if split is None:
            raise PtrmError(f"dataset {path} has splits {', '.join(names)}: say which one",
                            hint="--split NAME --data DIR")
    ds = load_dataset(path, splits=[split])
    loaded.vocab.check_same(ds.vocab, what=f"checkpoint {loaded.path}",
                            other_what=f"dataset {path}")
    if ds.seq_len != loaded.config.seq_len:
        raise PtrmError(f"dataset {path} has sequences of {ds.seq_len} tokens, the model reads "
                        f"{loaded.config.seq_len}")
    s = ds.split(split)
    codecs = _installed()
    rows, types, keys, verifiers, skipped, parsed = [], [], [], [], {}, {}
    for i in range(len(s)):
        t = ds.types[int(s.type[i])]
        if t not in codecs:
            skipped[t] = "codec not installed"
            continue
        if limit is not None and len(rows) >= limit:
            break
        codec, j = codecs[t], int(s.puzzle[i])
        if j not in parsed:
            rec = s.puzzles[j]
            parsed[j] = codec.parse(rec["text"], source=f"{path}/{split}/puzzles.jsonl").puzzle
        puzzle = parsed[j]
        tf = int(s.transform[i])
        if tf:
            puzzle, _ = codec.transform(puzzle, None, tf)
        rows.append(i)
        types.append(t)
        keys.append(str(s.puzzles[j].get("key", j)) + (f"#t{tf}" if tf else ""))
        verifiers.append(Verifier(codec, puzzle, family_for(codec, loaded)))
    if not rows:
        raise PtrmError(f"dataset {path} split {split!r}: nothing to evaluate"
                        + (f" (skipped: {', '.join(skipped)})" if skipped else ""))
    idx = np.asarray(rows)
    ids = None
    if loaded.config.puzzle_emb_ndim > 0:
        ids = torch.as_tensor(np.asarray(s.puzzle_id)[idx].astype(np.int64))
        if int(ids.max()) >= loaded.config.num_puzzle_identifiers:
            raise PtrmError(f"dataset {path} uses puzzle ids up to {int(ids.max())}, the model "
                            f"knows {loaded.config.num_puzzle_identifiers}")
    return EvalSet(split, f"{path}/{split}",
                   torch.as_tensor(np.asarray(s.inputs)[idx].astype(np.int64)),
                   torch.as_tensor(np.asarray(s.labels)[idx].astype(np.int64)),
                   types, keys, verifiers, ids, skipped)


def resolve_split(split: str, data: str | None, loaded: LoadedModel, *,
                  limit: int | None = None, sample: int | None = None) -> EvalSet:
    """--split golden | FILE.jsonl (PPBench) | another source file (Sudoku-Extreme CSV, ...) |
    DATASET_DIR | NAME (with --data DIR); `sample`: a seeded n of its puzzles (`sample_rows`)."""
    p = Path(split).expanduser()
    if split == "golden" and data is None:
        ev = load_ppbench_jsonl(golden_path(), loaded, name="golden", limit=limit)
    elif data is None and p.is_file():
        from . import sources

        reader = sources.reader_for(p)
        if reader is not None and reader.kind != sources.JsonlRecords.kind:
            return load_source_file(p, loaded, limit=limit, sample=sample)
        ev = load_ppbench_jsonl(p, loaded, name=p.stem, limit=limit)
    elif data is None and p.is_dir():
        ev = load_dataset_split(p, None, loaded, limit=limit)
    elif data is not None:
        d = Path(data).expanduser()
        if not d.is_dir():
            raise PtrmError(f"--data {data}: no such dataset folder")
        ev = load_dataset_split(d, split, loaded, limit=limit)
    else:
        raise PtrmError(f"--split {split}: not golden, a JSONL file or a dataset folder",
                        hint=f"for a named split, give its dataset: --split {split} --data DIR")
    return ev if sample is None else ev.sample(sample)


# -- scoring ---------------------------------------------------------------------------------

def sigma_from_report(path: Path, judge: str = "rules") -> tuple[float, str]:
    """The noise scale a validation sweep chose: the sigma of `path` (a report.json of `ptrm
    eval` with several sigmas) with the highest aggregate best-Q@K, ties to the smaller sigma.
    Returns (sigma, the split it was chosen on). The paper's protocol picks sigma on
    validation only, so a report of the golden set is refused."""
    try:
        report = json.loads(Path(path).read_text())
        runs = report["ptrm"]
        split = report["split"]["name"]
        scored = [(r["summary"]["aggregate"][judge]["best_q"]["mean"], -r["sigma"], r["sigma"])
                  for r in runs]
    except OSError as e:
        raise PtrmError(f"--sigma-from {path}: cannot read it ({e.strerror or e})") from None
    except (ValueError, KeyError, TypeError):
        raise PtrmError(f"--sigma-from {path}: not a `ptrm eval` report.json") from None
    if not scored:
        raise PtrmError(f"--sigma-from {path}: the report has no PTRM runs")
    if split == "golden":
        raise PtrmError(f"--sigma-from {path}: that sweep ran on the golden set; choose sigma "
                        "on a validation split (--split val --data DIR)")
    return max(scored)[2], split


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
                **{judge: {k: float(v[m].float().mean()) for k, v in d.items()}
                   for judge, d in scored.items()}}
            for g, m in groups.items()}


def summarize(values: list[float], n: int) -> dict:
    """Mean and spread over seeds, with a 95% Wilson interval for the mean accuracy over the
    n puzzles (seeds are not independent samples, so n is not multiplied by them)."""
    from .engine.metrics import wilson

    a = np.asarray(values, dtype=float)
    mean = float(a.mean())
    return {"mean": mean, "std": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
            "min": float(a.min()), "max": float(a.max()),
            "wilson": list(wilson(round(mean * n), n))}


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

    def __post_init__(self):
        if not self.det_D:
            self.det_D = [self.D, self.K * self.D] if self.K > 1 else [self.D]
        self.det_D = list(dict.fromkeys(self.det_D))


def run_eval(loaded: LoadedModel, ev: EvalSet, s: EvalSettings, *,
             progress: Callable[[float], None] | None = None) -> dict:
    """Every run, scored. `progress(fraction)` is called as compute completes."""
    from .engine import metrics
    from .engine.distributed import sample  # sharded over the ranks of a torchrun launch
    from .engine.model import count_parameters, flops_per_step
    from .engine.sampler import SamplerConfig

    cfg = loaded.config
    P = len(ev)
    groups = groups_of(ev)
    fps = flops_per_step(cfg)
    units_total = P * (s.K * s.D * len(s.sigmas) * len(s.seeds) + sum(s.det_D))
    units_done = 0.0

    def run(K, D, sigma, seed, record, chunk_rows):
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
                                   chunk_rows=chunk_rows, record_steps=record),
                     seed=seed, puzzle_ids=ev.puzzle_ids, on_chunk=on_chunk)
        t_model = time.perf_counter() - t0
        t0 = time.perf_counter()
        valid = valid_matrix(ev.verifiers, out.preds)
        t_verify = time.perf_counter() - t0
        units_done = base + P * K * D
        return out, valid, t_model, t_verify

    # warm-up (kernel selection, allocator, first-call overheads) so the first timed run,
    # the deterministic baseline, is not charged for it
    sample(loaded.model, ev.inputs[:1], SamplerConfig(K=1, D=1, sigma=0.0),
           puzzle_ids=None if ev.puzzle_ids is None else ev.puzzle_ids[:1])

    det = []
    for d in s.det_D:
        out, valid, t_model, t_verify = run(1, d, 0.0, 0, False, s.det_chunk_rows)
        sc = score(out.preds, out.q, ev.labels, valid)
        cell = metrics.cell_accuracy(out.preds[:, 0], ev.labels)
        gr = {}
        for g, m in groups.items():
            n = int(m.sum())
            gr[g] = {"n": n, "cell_accuracy": float(cell[m].mean())}
            for judge in ("label", "rules"):
                acc = float(sc[judge]["best_q"][m].float().mean())
                gr[g][judge] = {"acc": acc, "wilson": list(metrics.wilson(round(acc * n), n))}
        det.append({"D": d, "K": 1, "sigma": 0.0, "equal_compute": d == s.K * s.D and s.K > 1,
                    "flops_per_puzzle": d * fps, **_timing(t_model, t_verify, P), "groups": gr,
                    "per_puzzle": {"label": sc["label"]["best_q"].tolist(),
                                   "rules": sc["rules"]["best_q"].tolist()}})

    ptrm, width, qsteps = [], None, None
    for si, sigma in enumerate(s.sigmas):
        runs, curves, per_puzzle = [], [], None
        for seed in s.seeds:
            record = si == 0 and seed == s.seeds[0]
            out, valid, t_model, t_verify = run(s.K, s.D, sigma, seed, record, s.chunk_rows)
            sc = score(out.preds, out.q, ev.labels, valid)
            runs.append({"seed": seed, **_timing(t_model, t_verify, P),
                         "groups": by_group(sc, groups)})
            per_puzzle = _add(per_puzzle, sc)
            if si == 0:
                ks = sorted({k for k in WIDTH_KS if k <= s.K} | {s.K})
                curves.append(metrics.width_curve(canonical(out.preds, ev.labels), out.q,
                                                  ev.labels, ks, valid=valid,
                                                  draws=s.draws, seed=seed))
            if record:
                qsteps = _q_steps(out, ev.labels, sigma, seed)
        summary = {}
        for g in groups:
            n = runs[0]["groups"][g]["n"]
            summary[g] = {"n": n}
            for judge in ("label", "rules"):
                summary[g][judge] = {k: summarize([r["groups"][g][judge][k] for r in runs], n)
                                     for k in METRICS}
        t_mean = float(np.mean([r["time_per_puzzle_s"] for r in runs]))
        ptrm.append({"sigma": sigma, "K": s.K, "D": s.D, "perturb": s.perturb,
                     "flops_per_puzzle": s.K * s.D * fps, "time_per_puzzle_s": t_mean,
                     "time_per_puzzle_std_s": float(np.std([r["time_per_puzzle_s"] for r in runs])),
                     "cost_per_puzzle_usd": t_mean * USD_PER_H100_HOUR / 3600,
                     "verify_time_per_puzzle_s": float(np.mean([r["verify_time_per_puzzle_s"]
                                                               for r in runs])),
                     "runs": runs, "summary": summary,
                     "per_puzzle": {j: {k: (v / len(s.seeds)).tolist() for k, v in d.items()}
                                    for j, d in per_puzzle.items()}})
        if si == 0:
            width = _width(curves, sigma)

    counts = {t: ev.types.count(t) for t in ev.type_order()}
    return {
        "format": FORMAT,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "checkpoint": loaded.path, "device": _device_name(loaded.device),
        "torch": torch.__version__,
        "model": {"parameters": count_parameters(loaded.model), "flops_per_step": fps,
                  "config": cfg.to_dict()},
        "split": {"name": ev.name, "source": ev.source, "n": P, "types": counts,
                  "skipped": ev.skipped, "unusable": ev.unusable, "keys": ev.keys,
                  "row_types": ev.types, "sample": ev.sampled},
        "settings": {"K": s.K, "D": s.D, "sigmas": s.sigmas, "seeds": s.seeds,
                     "perturb": s.perturb, "det_D": s.det_D, "chunk_rows": s.chunk_rows,
                     "width_draws": s.draws},
        "usd_per_h100_hour": USD_PER_H100_HOUR,
        "groups": list(groups),
        "deterministic": det, "ptrm": ptrm, "width_curve": width, "q_steps": qsteps,
    }


def _timing(t_model: float, t_verify: float, P: int) -> dict:
    return {"time_s": t_model, "time_per_puzzle_s": t_model / P,
            "cost_per_puzzle_usd": t_model / P * USD_PER_H100_HOUR / 3600,
            "verify_time_per_puzzle_s": t_verify / P}


def _add(acc, sc):
    new = {j: {k: v.float() for k, v in d.items()} for j, d in sc.items()}
    if acc is None:
        return new
    return {j: {k: acc[j][k] + new[j][k] for k in d} for j, d in new.items()}


def _width(curves: list[dict], sigma: float) -> dict:
    ks = sorted(curves[0])
    names = list(curves[0][ks[0]])
    return {"sigma": sigma, "ks": ks,
            "metrics": {m: {"mean": [float(np.mean([c[k][m] for c in curves])) for k in ks],
                            "std": [float(np.std([c[k][m] for c in curves])) for k in ks]}
                        for m in names}}


def _q_steps(out, labels: torch.Tensor, sigma: float, seed: int) -> dict:
    """sigmoid(Q) and cell accuracy per supervision step, for rollouts whose final answer is
    correct vs incorrect (by label)."""
    from .engine import metrics

    ok = metrics.correct(out.preds, labels[:, None, :]).reshape(-1)  # [P*K]
    q = torch.sigmoid(out.step_q.float()).reshape(-1, out.step_q.shape[-1])  # [P*K, D]
    P, K, D, L = out.step_preds.shape
    cell = metrics.cell_accuracy(out.step_preds.long(), labels[:, None, None, :]).reshape(-1, D)
    res = {"sigma": sigma, "seed": seed, "steps": list(range(1, D + 1))}
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

def write_report(report: dict, out_dir: Path, *, plots: bool = True) -> dict[str, str]:
    """report.json and the PNG plots into out_dir; returns {name: path} of what was written."""
    from .atomic import write_text
    from .solver import to_json

    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, str] = {}
    if plots:
        from . import plots as plotting

        files.update(plotting.write_all(report, out_dir))
    files["report"] = str(out_dir / "report.json")
    report["files"] = dict(files)
    write_text(out_dir / "report.json", to_json(report) + "\n")
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(out_dir / "report.json", 0o666 & ~umask)  # the atomic temp file was 0600
    return files


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def fmt_cost(usd: float) -> str:
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
    heads = {"pass": "pass", "best_q": "best-Q", "mode": "mode", "q_vote": "Q-vote",
             "verified": "verified"}
    for judge, title in (("label", "label match"), ("rules", "rules verifier")):
        spread = f", mean±std over {seeds} seeds" if seeds > 1 else ""
        t = Table(title=f"{report['split']['name']}: % correct by {title} (@K: K={st['K']} "
                        f"D={st['D']} σ={main['sigma']:g}{spread})",
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
        t = Table(title="σ sweep: aggregate % correct by label match", title_justify="left",
                  box=box.SIMPLE_HEAD, pad_edge=False)
        t.add_column("σ", justify="right")
        for m in METRICS:
            t.add_column(heads[m], justify="right")
        for r in report["ptrm"]:
            a = r["summary"]["aggregate"]["label"]
            t.add_row(f"{r['sigma']:g}", *[ms(a[m]) for m in METRICS])
        out.append(t)
    t = Table(title=f"compute per puzzle on {report['device']} (cost at "
                    f"${report['usd_per_h100_hour']:.2f}/H100-hour)", title_justify="left",
              box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("run", "time", "cost", "FLOPs", "verify"):
        t.add_column(col, justify="left" if col == "run" else "right")
    for d in dets:
        t.add_row(f"TRM K=1 D={d['D']}", fmt_time(d["time_per_puzzle_s"]),
                  fmt_cost(d["cost_per_puzzle_usd"]), fmt_flops(d["flops_per_puzzle"]),
                  fmt_time(d["verify_time_per_puzzle_s"]))
    for r in report["ptrm"]:
        t.add_row(f"PTRM K={r['K']} D={r['D']} σ={r['sigma']:g}", fmt_time(r["time_per_puzzle_s"]),
                  fmt_cost(r["cost_per_puzzle_usd"]), fmt_flops(r["flops_per_puzzle"]),
                  fmt_time(r["verify_time_per_puzzle_s"]))
    out.append(t)
    return out


def fmt_time(s: float) -> str:
    return f"{s:.2f} s" if s >= 1 else f"{s * 1e3:.1f} ms"
