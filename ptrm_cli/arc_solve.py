"""`ptrm solve --task`: one ARC task through the paper's ARC pipeline (§5.3), the steps of
ptrm_cli/arc_eval.py applied to a single task.

TRM's ARC models learn one embedding per augmented task version, so the views of a task are the
versions of it that the checkpoint's identifier table names (ptrm_cli/arc_ids.py); a task that
was not in the model's training build has none and cannot be solved (TRM's build holds the
evaluation tasks' demonstration pairs and test inputs, so those tasks are in it). Per test input
and view: K rollouts with the view's identifier, the highest-Q one kept, cropped at (0, 0) and
taken back to the task's frame; then the views vote, candidates ranked by (count, mean sigmoid
Q) as TRM's evaluator ranks them, and the top two are the answers (ARC's two attempts).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .errors import ParseError, PtrmError, json_problem, load_json

ATTEMPTS = 2  # ARC scores two attempts per test input


# -- reading the task ----------------------------------------------------------------------------

def read_task(path: str | Path | None, task_id: str | None = None, *, text: str | None = None,
              source: str | None = None) -> tuple[str, dict]:
    """(task id, task) from a Kaggle challenges file (test outputs from its _solutions.json
    sibling, when there is one) or a file holding one task {"train", "test"}, whose id is
    `task_id` or else the file's name (`00576224.json` -> 00576224: a downloaded task may be
    saved under any name). `text`: the content already read (stdin), with `source` naming it.
    A `task_id` a challenges file does not hold is refused here, before any model is loaded:
    the wrong id is the mistake to report, not what the model then lacks for it."""
    from ptrm_codecs import arc as A

    source = source or str(path)
    if text is None:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise PtrmError(f"cannot read {source}: {e.strerror or e}") from None
    try:
        obj = load_json(text)
    except json.JSONDecodeError as e:
        raise ParseError(f"ARC task file is {json_problem(e)}", source=source,
                         line=e.lineno, hint=A.TASK_HINT) from None
    if A.one_task(obj):  # one task (a malformed one too: _checked says what is wrong)
        name = task_id or (Path(path).stem if path is not None else None)
        if not name:
            raise PtrmError(f"{source} holds one ARC task without a name", hint="pass --task ID")
        return name, _checked(obj, name, source)
    if not isinstance(obj, dict) or not obj:
        raise ParseError("expected an ARC task {train, test} or a Kaggle challenges file "
                         "{task_id: task}", source=source)
    tasks = A.load_tasks(path) if path is not None else obj  # load_tasks adds the solutions
    ids = list(tasks)
    if task_id is None:
        if len(ids) > 1:
            raise PtrmError(f"{source} holds {len(ids)} ARC tasks; say which one",
                            hint=f"pass --task ID, e.g. --task {ids[0]}")
        task_id = ids[0]
    if task_id not in tasks:
        raise _no_such_task(source, task_id, ids)
    return task_id, _checked(tasks[task_id], task_id, source)


def _no_such_task(source: str, task_id: str, ids: list[str]) -> PtrmError:
    """--task naming a task that the challenges file `source` does not hold, with the ids it
    does hold."""
    import difflib

    shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
    held = f"its only task is {ids[0]}" if len(ids) == 1 else \
        f"it holds {len(ids)} tasks: {shown}"
    near = difflib.get_close_matches(task_id, ids, n=1)
    return PtrmError(f"{source} has no task {task_id!r} ({held})",
                     hint=f"did you mean --task {near[0]}?" if near else
                     "pass --task with one of the file's task ids (its keys)")


def task_shaped(text: str) -> bool:
    """Whether text is an ARC task {"train", "test": [...]} or a Kaggle file of them (what
    `ptrm solve` hands to the task pipeline when the model has per-task embeddings)."""
    from ptrm_codecs.arc import one_task

    if not text.lstrip().startswith("{"):
        return False
    try:
        obj = load_json(text)
    except ValueError:
        return False
    if one_task(obj):
        return True
    return bool(obj) and all(isinstance(v, dict) and isinstance(v.get("test"), list)
                             for v in obj.values())


def _checked(task, name: str, source: str) -> dict:
    """The task with its grids checked (ARC colours, at most 30x30) and at least one test."""
    from ptrm_codecs.arc import TASK_HINT, check_task

    task = check_task(task, name, source=source)
    if not task["test"]:
        raise ParseError(f"ARC task {name!r} has no test pair: its 'test' list is empty",
                         source=source, hint=TASK_HINT)
    return task


# -- the model -----------------------------------------------------------------------------------

def load_model(checkpoint, device: str):
    """solver.load_model for ARC data: an official step_N file, which has no token table of its
    own, takes TRM's ARC one (and its canvas length, where neither weights nor yaml say it)."""
    from ptrm_codecs.families import ARC

    from . import solver

    return solver.load_model(checkpoint, device, official_vocab=ARC.vocab, layouts=[ARC])


def check_model(loaded) -> None:
    """A TRM ARC model: the ARC token table and canvas, and per-task puzzle embeddings."""
    from ptrm_codecs.families import ARC

    from .arc_ids import has_table

    cfg = loaded.config
    if loaded.vocab.family != ARC.vocab.family:
        raise PtrmError(f"checkpoint {loaded.path} is a {loaded.vocab.family!r} model, not an "
                        f"ARC one: --task needs a TRM ARC model (vocabulary 'arc')",
                        hint="convert an official ARC step_N file with --family arc")
    ARC.vocab.check_same(loaded.vocab, what="the ARC codec", other_what=f"checkpoint "
                                                                        f"{loaded.path}")
    if cfg.seq_len != ARC.rows * ARC.cols:
        raise PtrmError(f"checkpoint {loaded.path} reads {cfg.seq_len} tokens, ARC's canvas is "
                        f"{ARC.rows}x{ARC.cols}")
    if not has_table(cfg):
        raise PtrmError(f"checkpoint {loaded.path} has no per-task puzzle embeddings "
                        f"(puzzle_emb_ndim={cfg.puzzle_emb_ndim}, num_puzzle_identifiers="
                        f"{cfg.num_puzzle_identifiers}), so it has no views of any task",
                        hint="without --task, ptrm solve runs one test input with this model")


def no_views_error(loaded, table, task_id: str) -> PtrmError:
    near = [t for t in table.tasks() if t.endswith(":" + task_id)]  # ours: <subset>:<task>
    hint = ("TRM ARC models learn one embedding per augmented task and can only solve tasks "
            "that were in their training build (TRM's build includes the evaluation tasks' "
            "demonstration pairs and test inputs)")
    if near:
        hint += f"; the table has {', '.join(near[:3])}: pass that as --task"
    return PtrmError(f"checkpoint {loaded.path} has no puzzle identifiers for ARC task "
                     f"{task_id!r}: its table ({table.source}) has {len(table):,} "
                     f"identifier{'' if len(table) == 1 else 's'} for "
                     f"{len(table.tasks()):,} task{'' if len(table.tasks()) == 1 else 's'}",
                     hint=hint)


# -- solving -------------------------------------------------------------------------------------

@dataclass
class Attempt:
    grid: np.ndarray
    votes: int   # views whose best rollout gave this grid
    q: float     # their mean sigmoid Q (the evaluator's tie-break)


@dataclass
class TestAnswer:
    example: int
    input: np.ndarray
    output: np.ndarray | None  # the known output, if any
    attempts: list[Attempt]    # the top ATTEMPTS candidates, best first
    candidates: int            # distinct grids voted for
    votes: int                 # views that voted

    @property
    def rank(self) -> int | None:
        """1-based place of the known output among the attempts; 0: not among them; None: no
        known output."""
        if self.output is None:
            return None
        return next((i + 1 for i, a in enumerate(self.attempts) if same(a.grid, self.output)), 0)


@dataclass
class TaskResult:
    task: str
    tests: list[TestAnswer]
    views: int        # views run (all or --views of them; fewer after a time limit)
    views_known: int  # views the identifier table has for the task
    rollouts: int
    K: int
    D: int
    sigma: float
    perturb: str
    seed: int
    time_s: float
    timed_out: bool
    identifiers: str  # where the table came from

    @property
    def answered(self) -> bool:
        """Every test input has a first attempt that is a grid (a crop can be empty)."""
        return all(t.attempts and t.attempts[0].grid.size for t in self.tests)

    @property
    def solved(self) -> bool | None:
        """Every known output among its two attempts (ARC's rule); None: no output known."""
        ranks = [t.rank for t in self.tests if t.rank is not None]
        return None if not ranks else all(ranks)


def same(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool((a == b).all())


def solve_task(loaded, task_id: str, task: dict, table, *, K: int, D: int, sigma: float,
               perturb: str = "z", seed: int = 0, max_views: int | None = None,
               chunk_rows: int | None = None, time_limit: float | None = None,
               on_progress=None) -> TaskResult:
    """The pipeline on one task; `table` is the checkpoint's arc_ids.IdTable."""
    from .arc_eval import best_rollouts, build_views, view_answers, vote

    t0 = time.perf_counter()
    check_model(loaded)
    known = len(table.views(task_id))
    if not known:
        raise no_views_error(loaded, table, task_id)
    tests = {i: ex["input"] for i, ex in enumerate(task["test"])}
    views, _ = build_views(table, {task_id: tests}, max_views)
    preds, q = best_rollouts(loaded.model, torch.as_tensor(views.inputs),
                             torch.as_tensor(views.ids), K=K, D=D, sigma=sigma, perturb=perturb,
                             seed=seed, chunk_rows=chunk_rows, time_limit=time_limit,
                             on_progress=on_progress)
    n = len(preds)  # rows done: all of them unless the time limit stopped early
    ranked = vote(zip(views.keys[:n], view_answers(views.names[:n], preds), q))
    answers = []
    for i, ex in enumerate(task["test"]):
        cands = ranked.get((task_id, i), [])
        answers.append(TestAnswer(
            example=i, input=np.asarray(ex["input"]),
            output=np.asarray(ex["output"]) if "output" in ex else None,
            attempts=[Attempt(g, c, float(mq)) for _, c, mq, g in cands[:ATTEMPTS]],
            candidates=len(cands), votes=sum(c for _, c, _, _ in cands)))
    return TaskResult(task=task_id, tests=answers, views=len(set(views.names[:n])),
                      views_known=known, rollouts=n * K, K=K, D=D, sigma=sigma,
                      perturb=perturb, seed=seed, time_s=time.perf_counter() - t0,
                      timed_out=n < len(views), identifiers=table.source)


# -- output --------------------------------------------------------------------------------------

def to_dict(res: TaskResult, **extra) -> dict:
    """--json: the answers (grids as lists), votes and Q per test input, the legend of the
    grids' values (as `ptrm solve --json` gives a puzzle's), and the settings."""
    from . import codec as registry

    def grid(g):
        return None if g is None else np.asarray(g).astype(int).tolist()

    return {
        "type": "arc", "task": res.task, "solved": res.solved, "answered": res.answered,
        "tests": [{"example": t.example, "input": grid(t.input), "output": grid(t.output),
                   "answers": [{"grid": grid(a.grid), "votes": a.votes, "q": round(a.q, 6)}
                               for a in t.attempts],
                   "rank": t.rank, "correct": None if t.rank is None else t.rank > 0,
                   "candidates": t.candidates, "votes": t.votes} for t in res.tests],
        "legend": registry.legend_json(registry.get("arc")),
        "views": res.views, "views_in_checkpoint": res.views_known, "rollouts": res.rollouts,
        "K": res.K, "D": res.D, "sigma": res.sigma, "perturb": res.perturb, "seed": res.seed,
        "selector": "best_q per view, vote across views", "identifiers": res.identifiers,
        "time_s": round(res.time_s, 4), "timed_out": res.timed_out, **extra,
    }


def render(res: TaskResult):
    """Rich renderables: per test input the input, the two attempts (and the known output when
    neither is it), then a verdict line."""
    from rich.columns import Columns
    from rich.console import Group
    from rich.text import Text

    from ptrm_codecs.arc import grid_text

    parts = []
    for t in res.tests:
        cols = [grid_text(t.input, f"test {t.example}: input")]
        for j, a in enumerate(t.attempts):
            mark = "" if t.output is None else (" ✓" if t.rank == j + 1 else " ✗")
            cell = grid_text(a.grid, f"attempt {j + 1}{mark}")
            cell.append(f"\n{a.votes}/{t.votes} votes · Q {a.q:.3f}", style="dim")
            cols.append(cell)
        if not t.attempts:
            cols.append(Text("no answer", style="red"))
        if t.output is not None and not t.rank:
            cols.append(grid_text(t.output, "expected"))
        # side by side while they fit the terminal, then on the next rows (30x30 grids are wide)
        parts += [Columns(cols, padding=(0, 2)), Text("")]
    n = len(res.tests)
    if res.solved:
        parts.append(Text.from_markup(f"[bold green]solved[/]: every known output is among the "
                                      f"{ATTEMPTS} attempts ({n} test input(s))"))
    elif res.solved is False:
        right = sum(1 for t in res.tests if t.rank)
        parts.append(Text.from_markup(f"[bold red]not solved[/]: {right} of "
                                      f"{sum(t.rank is not None for t in res.tests)} known "
                                      f"outputs among the {ATTEMPTS} attempts"))
    else:
        parts.append(Text(f"{n} test input(s) answered; no known output to check them against"))
    if res.timed_out:
        parts.append(Text.from_markup(f"[yellow]time limit reached[/]: {res.views} of "
                                      f"{res.views_known} views voted (--time-limit to change)"))
    return Group(*parts)
