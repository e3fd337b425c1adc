"""ARC evaluation as in the paper (§5.3) on a dataset from `ptrm_cli.arc_data.build_arc`.

PTRM: K stochastic rollouts per augmented test view (the sampler with the view's puzzle id),
keep the rollout with the highest Q within each view, crop it at (0, 0) and undo the view's
augmentation, then vote across the views of each original test pair, ranking candidates by
(count, mean sigmoid q) descending (TRM's evaluator, TRM_REFERENCE.md §6). pass@k: a test pair
is solved when its true output is among the top k candidates; a puzzle's score is the fraction
of its test pairs solved; pass@k is the mean over puzzles. The deterministic TRM pipeline is the
same with K=1 and sigma=0 (one rollout per view).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import torch

from .errors import PtrmError

PASS_KS = (1, 2, 100)


def vote(entries) -> dict:
    """entries: iterable of (pair key, grid, sigmoid q). Returns {pair key: [(hash, count,
    mean q, grid), ...]} ranked by (count, mean q) descending."""
    from ptrm_codecs.arc import grid_hash

    acc: dict = defaultdict(dict)
    for key, grid, q in entries:
        h = grid_hash(grid)
        c = acc[key].setdefault(h, [0, 0.0, np.asarray(grid)])
        c[0] += 1
        c[1] += float(q)
    return {key: sorted(((h, n, s / n, g) for h, (n, s, g) in cands.items()),
                        key=lambda x: (x[1], x[2]), reverse=True)
            for key, cands in acc.items()}


def pass_at(ranked: dict, truths: dict, ks=PASS_KS) -> dict:
    """truths: {(task, example): true output grid}. Mean over tasks of the fraction of their
    test pairs whose true output is in the top k; a pair without votes counts as unsolved."""
    from ptrm_codecs.arc import grid_hash

    by_task: dict = defaultdict(list)
    for (task, ex), grid in truths.items():
        top = [c[0] for c in ranked.get((task, ex), [])]
        h = grid_hash(grid)
        by_task[task].append([h in top[:k] for k in ks])
    if not by_task:
        return {f"pass@{k}": 0.0 for k in ks}
    scores = np.array([np.mean(v, axis=0) for v in by_task.values()])  # [tasks, len(ks)]
    return {f"pass@{k}": float(scores[:, i].mean()) for i, k in enumerate(ks)}


def _views(path: Path, split: str, limit: int | None):
    """The split's rows, their pair keys and the true outputs (pairs with a known output)."""
    from .engine.data import load_dataset

    ds = load_dataset(path, splits=[split])
    if ds.meta.get("family") != "arc" or "identifiers" not in ds.meta:
        raise PtrmError(f"{path} is not an ARC dataset from `ptrm build-data --family arc`")
    s = ds.split(split)
    keys, truths = [], {}
    for j in np.asarray(s.puzzle):
        rec = s.puzzles[int(j)]
        key = (rec["task"], int(rec["example"]))
        keys.append(key)
        pair = json.loads(rec["text"])
        if "output" in pair:
            truths[key] = np.asarray(pair["output"])
    rows = np.arange(len(s))
    if limit is not None:  # the first `limit` tasks, all their views
        tasks = list(dict.fromkeys(k[0] for k in keys))[:limit]
        rows = np.array([i for i, k in enumerate(keys) if k[0] in set(tasks)], dtype=np.int64)
        truths = {k: v for k, v in truths.items() if k[0] in set(tasks)}
    return ds, s, rows, keys, truths


def run_pipeline(model, inputs: torch.Tensor, puzzle_ids: torch.Tensor | None, names: list[str],
                 keys: list, truths: dict, *, K: int, D: int, sigma: float, seed: int = 0,
                 chunk_rows: int | None = None, ks=PASS_KS) -> dict:
    """One pipeline (K rollouts per view, best Q per view, crop, de-augment, vote, pass@k).
    names[i] is row i's augmented puzzle name, keys[i] its original (task, example)."""
    from ptrm_codecs.arc import crop, deaugment

    from .engine.sampler import SamplerConfig, sample

    t0 = time.perf_counter()
    r = sample(model, inputs, SamplerConfig(K=K, D=D, sigma=sigma, chunk_rows=chunk_rows),
               seed=seed, puzzle_ids=puzzle_ids)
    best = r.q.argmax(dim=1)  # [P] highest-Q rollout of each view
    rows = torch.arange(len(best))
    preds = r.preds[rows, best].numpy()
    q = torch.sigmoid(r.q[rows, best].double()).numpy()
    entries = [(keys[i], deaugment(names[i], crop(preds[i]))[1], q[i]) for i in range(len(preds))]
    ranked = vote(entries)
    out = {"K": K, "D": D, "sigma": sigma, "seed": seed, **pass_at(ranked, truths, ks),
           "seconds": time.perf_counter() - t0}
    return out


def evaluate_arc(model, path: str | Path, split: str = "test", *, K: int = 25, D: int | None = None,
                 sigma: float = 0.2, seed: int = 0, limit: int | None = None,
                 chunk_rows: int | None = None, ks=PASS_KS, vocab=None) -> dict:
    """PTRM (K, sigma) and deterministic TRM (K=1, sigma=0) on an ARC dataset split."""
    path = Path(path)
    ds, s, rows, keys, truths = _views(path, split, limit)
    if vocab is not None:
        vocab.check_same(ds.vocab, what="the model", other_what=f"dataset {path}")
    if ds.seq_len != model.config.seq_len:
        raise PtrmError(f"dataset {path} has sequences of {ds.seq_len} tokens, the model reads "
                        f"{model.config.seq_len}")
    if not len(rows):
        raise PtrmError(f"dataset {path} split {split!r}: nothing to evaluate")
    ident = ds.meta["identifiers"]
    pid = np.asarray(s.puzzle_id)[rows].astype(np.int64)
    names = [ident[int(i)] for i in pid]
    ids = None
    if model.config.puzzle_emb_ndim > 0:
        ids = torch.as_tensor(pid)
        if int(ids.max()) >= model.config.num_puzzle_identifiers:
            raise PtrmError(f"dataset {path} uses puzzle ids up to {int(ids.max())}, the model "
                            f"knows {model.config.num_puzzle_identifiers}")
    inputs = torch.as_tensor(np.asarray(s.inputs)[rows].astype(np.int64))
    keys = [keys[int(i)] for i in rows]
    D = D or model.config.halt_max_steps
    common = dict(D=D, seed=seed, chunk_rows=chunk_rows, ks=ks)
    ptrm = run_pipeline(model, inputs, ids, names, keys, truths, K=K, sigma=sigma, **common)
    trm = run_pipeline(model, inputs, ids, names, keys, truths, K=1, sigma=0.0, **common)
    return {"kind": "arc", "dataset": str(path), "split": split,
            "puzzles": len({k[0] for k in truths}), "test_pairs": len(truths),
            "views": len(rows), "ptrm": ptrm, "trm": trm}


def table(report: dict):
    from rich.table import Table

    ks = [k for k in report["ptrm"] if k.startswith("pass@")]
    t = Table(title=f"ARC {report['split']}: {report['puzzles']} puzzles, "
                    f"{report['test_pairs']} test pairs, {report['views']} views",
              title_justify="left")
    for col in ["pipeline", "K", "σ", *ks, "time"]:
        t.add_column(col, justify="left" if col == "pipeline" else "right")
    for name, r in (("PTRM", report["ptrm"]), ("TRM (deterministic)", report["trm"])):
        t.add_row(name, str(r["K"]), f"{r['sigma']:g}", *(f"{100 * r[k]:.2f}" for k in ks),
                  f"{r['seconds']:.1f}s")
    return t


def write_report(report: dict, out_dir: Path) -> str:
    from .atomic import write_text
    from .solver import to_json

    out_dir.mkdir(parents=True, exist_ok=True)
    write_text(out_dir / "report.json", to_json(report) + "\n")
    return str(out_dir / "report.json")
