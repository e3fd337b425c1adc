"""ARC evaluation as in the paper (§5.3) on a dataset from `ptrm_cli.arc_data.build_arc`.

PTRM: K stochastic rollouts per augmented test view (the sampler with the view's puzzle id),
keep the rollout with the highest Q within each view, crop it at (0, 0) and undo the view's
augmentation, then vote across the views of each original test pair, ranking candidates by
(count, mean sigmoid q) descending (TRM's evaluator, TRM_REFERENCE.md §6). pass@k: a test pair
is solved when its true output is among the top k candidates; a puzzle's score is the fraction
of its test pairs solved; pass@k is the mean over puzzles. The deterministic TRM pipeline is the
same with K=1 and sigma=0 (one rollout per view).

Views come from an identifier table (ptrm_cli/arc_ids.py): every version of a task that the
table names is one view. For a model trained on the dataset the table is the dataset's, and the
views are exactly its test rows; for an official checkpoint with its own identifiers.json they
are the views of TRM's own test split, whatever our build drew. `ptrm solve --task` runs the same
steps on one task (ptrm_cli/arc_solve.py).
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .errors import PtrmError
from .paths import report_path

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


@dataclass
class Views:
    """Rows to run: one test input of a task as one view sees it (augmented the way the view's
    name says, on the canvas at (0, 0) as in TRM's test split), with the view's identifier."""

    inputs: np.ndarray  # [n, 900] int64 tokens
    ids: np.ndarray     # [n] int64 puzzle identifiers
    names: list[str]    # [n] the view's name: how to undo its augmentation
    keys: list[tuple]   # [n] (task, example) of the original test pair

    def __len__(self) -> int:
        return len(self.names)


def build_views(table, tests: dict, max_views: int | None = None) -> tuple[Views, list[str]]:
    """tests: {task: {example: input grid}}; table: an arc_ids.IdTable. Every version of a task
    that the table names is a view (the first `max_views` in table order, if given). Rows are
    view-major (a view's test inputs are adjacent), so a run cut short by a time limit has
    whole views but perhaps the last. Returns the views and the tasks the table has no
    identifier for."""
    from ptrm_codecs.arc import augment_grid, parse_aug_name, to_canvas

    inputs, ids, names, keys, missing = [], [], [], [], []
    for task, pairs in tests.items():
        views = table.views(task)[:max_views]
        if not views:
            missing.append(task)
        for pid, name in views:
            try:
                _, t, mapping = parse_aug_name(name)
            except ValueError as e:
                raise PtrmError(f"{table.source}: identifier {pid}: {e}") from None
            for ex, grid in pairs.items():
                inputs.append(to_canvas(augment_grid(np.asarray(grid), t, mapping)).reshape(-1))
                ids.append(pid)
                names.append(name)
                keys.append((task, ex))
    arr = np.stack(inputs) if inputs else np.zeros((0, 900), np.int64)
    return Views(arr, np.asarray(ids, dtype=np.int64), names, keys), missing


def best_rollouts(model, inputs: torch.Tensor, puzzle_ids: torch.Tensor | None, *, K: int,
                  D: int, sigma: float, perturb: str = "z", seed: int = 0,
                  chunk_rows: int | None = None, time_limit: float | None = None,
                  on_progress=None) -> tuple[np.ndarray, np.ndarray]:
    """K rollouts per row, keeping the highest-Q one: (tokens [n, L], sigmoid q [n] float64)
    for the first n rows. With `time_limit` (seconds) rows go in chunks and it stops after the
    chunk that passes the limit (n may be < rows); a row's noise depends only on (seed, its
    tokens, k), so the rows done are those of a full run, and under torchrun the rows are
    sharded over the ranks with the same result. on_progress(rows done, rows)."""
    from .engine.distributed import sample  # this process's rows only, gathered from all
    from .engine.sampler import SamplerConfig

    cfg = SamplerConfig(K=K, D=D, sigma=sigma, perturb=perturb, chunk_rows=chunk_rows)
    total = len(inputs)
    step = total if time_limit is None else max(1, (chunk_rows or K) // K)
    t0 = time.perf_counter()
    preds, qs = [np.zeros((0, inputs.shape[1]), np.int64)], [np.zeros(0)]
    for start in range(0, total, step):
        stop = min(total, start + step)
        ids = None if puzzle_ids is None else puzzle_ids[start:stop]
        report = None if on_progress is None else \
            (lambda done, _n, start=start: on_progress(start + done, total))
        r = sample(model, inputs[start:stop], cfg, seed=seed, puzzle_ids=ids, on_chunk=report)
        best = r.q.argmax(dim=1)  # the highest-Q rollout of each row
        rows = torch.arange(len(best))
        preds.append(r.preds[rows, best].numpy())
        qs.append(torch.sigmoid(r.q[rows, best].double()).numpy())
        if time_limit is not None and time.perf_counter() - t0 >= time_limit:
            break
    return np.concatenate(preds), np.concatenate(qs)


def view_answers(names: list[str], preds: np.ndarray) -> list[np.ndarray]:
    """Each row's prediction cropped at (0, 0) (TRM's `_crop`) and taken back to the original
    task's frame (the inverse of the view's augmentation)."""
    from ptrm_codecs.arc import crop, deaugment

    return [deaugment(name, crop(p))[1] for name, p in zip(names, preds)]


def run_pipeline(model, views: Views, truths: dict, *, K: int, D: int, sigma: float,
                 perturb: str = "z", seed: int = 0, chunk_rows: int | None = None,
                 ks=PASS_KS) -> dict:
    """One pipeline (K rollouts per view, best Q per view, crop, de-augment, vote, pass@k)."""
    t0 = time.perf_counter()
    preds, q = best_rollouts(model, torch.as_tensor(views.inputs), _view_ids(model, views),
                             K=K, D=D, sigma=sigma, perturb=perturb, seed=seed,
                             chunk_rows=chunk_rows)
    ranked = vote(zip(views.keys, view_answers(views.names, preds), q))
    return {"K": K, "D": D, "sigma": sigma, "perturb": perturb, "seed": seed,
            **pass_at(ranked, truths, ks),
            "seconds": time.perf_counter() - t0}


def _view_ids(model, views: Views) -> torch.Tensor | None:
    """Each view's puzzle identifier, for a model with puzzle embeddings."""
    return None if model.config.puzzle_emb_ndim == 0 else torch.as_tensor(views.ids)


def _test_pairs(path: Path, split: str, limit: int | None):
    """The split's test pairs: the dataset, {task: {example: input grid}} (the first `limit`
    tasks) and {(task, example): true output} for the pairs with a known output."""
    from .engine.data import load_dataset

    ds = load_dataset(path, splits=[split])
    if ds.meta.get("family") != "arc" or "identifiers" not in ds.meta:
        raise PtrmError(f"{path} is not an ARC dataset from `ptrm build-data --family arc`")
    tests: dict[str, dict] = {}
    truths = {}
    for rec in ds.split(split).puzzles:  # the original pairs; demonstrations are not scored
        if rec.get("split") != "test":
            continue
        if limit is not None and rec["task"] not in tests and len(tests) >= limit:
            continue
        pair = json.loads(rec["text"])
        tests.setdefault(rec["task"], {})[int(rec["example"])] = pair["input"]
        if "output" in pair:
            truths[(rec["task"], int(rec["example"]))] = np.asarray(pair["output"])
    return ds, tests, truths


def _placeholder_for(vocab, dataset_vocab) -> bool:
    """Whether `vocab` is the generic `trm-v{V}` table of an official step file (or of one
    converted without --family) of the dataset's size: such a model takes the dataset's
    table, as `ptrm solve`, the other evaluations and a warm start do."""
    from .engine.checkpoint import placeholder_vocab

    return vocab == placeholder_vocab(len(vocab)) and len(vocab) == len(dataset_vocab)


def evaluate_arc(model, path: str | Path, split: str = "test", *, table=None, K: int = 25,
                 D: int | None = None, sigma: float = 0.2, perturb: str = "z",
                 seed: int = 0, limit: int | None = None, chunk_rows: int | None = None,
                 ks=PASS_KS, vocab=None) -> dict:
    """PTRM (K, sigma) and deterministic TRM (K=1, sigma=0) on the test pairs of an ARC dataset
    split. `table` (arc_ids.IdTable): the checkpoint's identifiers; None: the dataset's (a
    model trained on this dataset). Tasks the table has no identifier for score 0."""
    from .arc_ids import IdTable, check_rows

    path = Path(path)
    where = report_path(path)  # the report's, absolute: it is read later from elsewhere
    ds, tests, truths = _test_pairs(path, split, limit)
    if vocab is not None and not _placeholder_for(vocab, ds.vocab):
        vocab.check_same(ds.vocab, what="the model", other_what=f"dataset {path}")
    if ds.seq_len != model.config.seq_len:
        raise PtrmError(f"dataset {path} has sequences of {ds.seq_len} tokens, the model reads "
                        f"{model.config.seq_len}")
    if not tests:
        raise PtrmError(f"dataset {path} split {split!r}: no test pairs to evaluate",
                        hint="the test set's test pairs are in split 'test' (--split test); "
                             "build-data --test-set NAME chooses that subset")
    if table is None:
        table = IdTable(ds.meta["identifiers"], f"dataset {where}")
    if model.config.puzzle_emb_ndim > 0:  # without a table the names only say the augmentation
        check_rows(table, model.config.num_puzzle_identifiers)
    views, missing = build_views(table, tests)
    if not len(views):
        raise PtrmError(f"{table.source} has no identifiers for any of the {len(tests)} tasks "
                        f"of {path} split {split!r} (e.g. {next(iter(tests))!r})",
                        hint="TRM ARC models can only solve tasks that were in their training "
                             "build")
    D = D or model.config.halt_max_steps
    # untimed warm-up, one supervision step of both pipelines' shapes, so neither time
    # includes compiling (1/D of their cost; as `ptrm eval` does for puzzle splits)
    for k, s in ((K, sigma), (1, 0.0)):
        best_rollouts(model, torch.as_tensor(views.inputs), _view_ids(model, views), K=k, D=1,
                      sigma=s, perturb=perturb, seed=seed, chunk_rows=chunk_rows)
    common = dict(D=D, seed=seed, chunk_rows=chunk_rows, ks=ks)
    ptrm = run_pipeline(model, views, truths, K=K, sigma=sigma, perturb=perturb, **common)
    trm = run_pipeline(model, views, truths, K=1, sigma=0.0, **common)
    from .engine.model import count_parameters, flops_per_step

    # the model described as eval's puzzle reports, bench and convert describe it
    described = {"config": model.config.to_dict(), "parameters": count_parameters(model),
                 "flops_per_step": flops_per_step(model.config)}
    return {"kind": "arc", "dataset": where, "split": split, "model": described,
            "puzzles": len({k[0] for k in truths}), "test_pairs": len(truths),
            "views": len(views), "identifiers": table.source, "tasks_without_views": missing,
            "ptrm": ptrm, "trm": trm}


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def table(report: dict):
    from rich.table import Table

    ks = [k for k in report["ptrm"] if k.startswith("pass@")]
    t = Table(title=f"ARC {report['split']}: {_count(report['puzzles'], 'puzzle')}, "
                    f"{_count(report['test_pairs'], 'test pair')}, "
                    f"{_count(report['views'], 'view')}", title_justify="left")
    for col in ["pipeline", "K", "σ", *ks, "time"]:
        t.add_column(col, justify="left" if col == "pipeline" else "right")
    for name, r in (("PTRM", report["ptrm"]), ("TRM (deterministic)", report["trm"])):
        # the noise target when it is not z (reports before --perturb reached ARC have none)
        on = "" if r["sigma"] == 0 or r.get("perturb", "z") == "z" else f" on {r['perturb']}"
        t.add_row(name, str(r["K"]), f"{r['sigma']:g}{on}", *(f"{100 * r[k]:.2f}" for k in ks),
                  f"{r['seconds']:.1f}s")
    return t


def write_report(report: dict, out_dir: Path) -> str:
    from .atomic import write_text
    from .solver import to_json

    out_dir.mkdir(parents=True, exist_ok=True)
    write_text(out_dir / "report.json", to_json(report) + "\n")
    return str(out_dir / "report.json")
