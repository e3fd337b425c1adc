"""ARC datasets with TRM's recipe (TRM_REFERENCE.md §5.4; docs/MAZE_ARC.md "ARC datasets").

`build_arc(challenges, out, ...)` reads Kaggle-layout challenge files (each with its sibling
`_solutions.json` when present) and writes a ptrm dataset (engine/data.py format, family `arc`):

* subsets: one per file, named from the file (`arc-agi_training2_challenges.json` ->
  `training2`). Every subset's tasks go whole (demonstration and test pairs) to the `train`
  split, except the test subset (`test_set_name`): its demonstrations go to `train`, its test
  pairs to `test`.
* augmentation: per task, the original plus up to `num_aug` distinct versions from
  `ptrm_codecs.arc.augment_task` (dihedral + colour permutation, TRM's names
  `<task>|||t<t>|||<map>`); one version = one puzzle identifier, shared by its train and test
  rows. Identifier 0 is the blank; names are in meta["identifiers"] and identifiers.json.
* translation: train rows sit at a random offset where input and output fit, except one
  randomly chosen example per puzzle version, which sits at (0, 0); test rows sit at (0, 0).
* per row: `puzzle` points to a line of `<split>/puzzles.jsonl` holding the *original*
  (unaugmented) pair {"input", "output"} with its task, subset and example index;
  `transform` is the version's dihedral id. The original test puzzles are also in
  test_puzzles.json ({task: {"test": [{"input", "output"}]}}) for evaluators.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .atomic import write_text
from .engine.data import Split, write_dataset
from .errors import PtrmError

BLANK = "<blank>"
TYPE = "arc"


def subset_name(path: str | Path) -> str:
    """`arc-agi_training2_challenges.json` -> `training2` (any other name: its stem)."""
    stem = Path(path).name.removesuffix(".json")
    return stem.removeprefix("arc-agi_").removesuffix("_challenges")


def challenge_files(sources: list[str | Path]) -> list[Path]:
    """The challenge files among `sources`: a folder gives its `*_challenges.json` (the
    `*_solutions.json` beside each are read with it), a file is taken as it is."""
    out = []
    for src in map(Path, sources):
        if not src.is_dir():
            out.append(src)
            continue
        found = sorted(src.glob("*_challenges.json"))
        if not found:
            raise PtrmError(f"{src}: no ARC challenge files (*_challenges.json) in this folder")
        out += found
    return out


def _grid_key(grid) -> str:
    return json.dumps(grid, separators=(",", ":"))


def _check_some_tasks(paths: list[Path], names: list[str], loaded: list[dict],
                      test_set: str | None) -> None:
    """Tasks to build from, and in the test set: else a dataset without rows (or without its
    test split) is written, and found out only by train or eval. A stray empty file beside
    others is harmless."""
    from ptrm_codecs.arc import CHALLENGES_HINT

    if not any(loaded):
        files = ", ".join(map(str, paths))
        raise PtrmError(f"{files}: no ARC tasks to build from (every challenges file is empty)",
                        hint=CHALLENGES_HINT)
    for path, name, tasks in zip(paths, names, loaded):
        if name == test_set and not tasks:
            raise PtrmError(f"{path}: the ARC test set {name!r} holds no tasks",
                            hint="--test-set NAME names a subset with tasks to evaluate")


def _no_solution(path: Path, subset: str, task: str, i: int) -> PtrmError:
    """A test pair without its output in a subset that trains on its test pairs."""
    from ptrm_codecs.arc import solutions_path

    sols = solutions_path(path)
    where = f"put its outputs in {sols.name} beside it" if sols is not None else \
        (f"name it <set>_challenges.json and put the outputs in <set>_solutions.json beside "
         "it")
    return PtrmError(f"ARC task {task!r} ({path}): test pair {i} has no solution; only the "
                     "test set may lack them", hint=f"{where}, or make {subset!r} the test set "
                                                    f"(--test-set {subset})")


def default_test_set(names: list[str]) -> str | None:
    """The first subset named evaluation*, else the last one when there are several."""
    for n in names:
        if n.startswith("evaluation"):
            return n
    return names[-1] if len(names) > 1 else None


def build_arc(challenges: list[str | Path], out: str | Path | None, *, num_aug: int = 8,
              seed: int = 42, test_set_name: str | None = None) -> dict:
    """Build the dataset into `out` (None: count only). Returns a summary dict."""
    from ptrm_codecs import arc as A
    from ptrm_codecs.families import ARC

    paths = challenge_files(challenges)
    names = [subset_name(p) for p in paths]
    if len(set(names)) != len(names):
        raise PtrmError(f"ARC subsets must have distinct names, got {names}")
    evaluations = [n for n in names if n.startswith("evaluation")]
    if test_set_name is None and len(evaluations) > 1:  # a whole folder of ARC-AGI-1 and -2
        raise PtrmError(f"several evaluation subsets ({', '.join(evaluations)}): say which is "
                        "the test set", hint="--test-set evaluation (ARC-AGI-1) or "
                                             "--test-set evaluation2 (ARC-AGI-2)")
    if test_set_name is None:
        test_set_name = default_test_set(names)
    if test_set_name is not None and test_set_name not in names:
        raise PtrmError(f"ARC test set {test_set_name!r} is not one of the subsets {names}")
    if num_aug < 0:
        raise PtrmError(f"--augment must be 0 or more for ARC, not {num_aug}")
    rng = np.random.default_rng(seed)
    identifiers = [BLANK]
    rows = {"train": [], "test": []}  # (input grid, output grid|None, offset, pid, puzzle, t)
    records = {"train": [], "test": []}
    test_puzzles: dict[str, dict] = {}
    seen: set[str] = set()
    n_tasks = 0
    loaded = [A.load_tasks(path) for path in paths]
    _check_some_tasks(paths, names, loaded, test_set_name)
    # a test task must not train under another subset's name (ARC-AGI-2's training set holds
    # ARC-AGI-1's evaluation tasks): told by its test inputs, whatever its id
    held = {_grid_key(ex["input"]) for tasks, subset in zip(loaded, names)
            if subset == test_set_name for task in tasks.values() for ex in task["test"]}
    overlap: list[str] = []
    for path, subset, tasks in zip(paths, names, loaded):
        is_test = subset == test_set_name
        for tid, task in tasks.items():
            if not is_test and any(_grid_key(ex["input"]) in held for ex in task["test"]):
                overlap.append(f"{subset}:{tid}")
                continue
            name = tid if tid not in seen else f"{subset}:{tid}"
            seen.add(name)
            n_tasks += 1
            # one record per original pair, per split it lands in
            where = []  # (split, example kind, index, record line)
            for kind in ("train", "test"):
                for i, ex in enumerate(task[kind]):
                    split = "test" if (is_test and kind == "test") else "train"
                    rec = {"type": TYPE, "key": f"arc/{name}/{kind}/{i}", "task": name,
                           "subset": subset, "split": kind, "example": i,
                           "text": json.dumps({k: ex[k] for k in ("input", "output") if k in ex},
                                              separators=(",", ":"))}
                    records[split].append(rec)
                    where.append((split, kind, i, len(records[split]) - 1))
            if is_test:
                test_puzzles[name] = {"test": [{k: ex[k] for k in ("input", "output") if k in ex}
                                               for ex in task["test"]]}
            versions = [(name, task)] + A.augment_task(task, rng, num_aug, name=name)
            for vname, vtask in versions:
                identifiers.append(vname)
                pid = len(identifiers) - 1
                t = A.parse_aug_name(vname)[1]
                train_here = [w for w in where if w[0] == "train"]
                keep = int(rng.integers(0, len(train_here))) if train_here else -1
                for j, (split, kind, i, line) in enumerate(
                        [w for w in where if w[0] == "train"] +
                        [w for w in where if w[0] == "test"]):
                    ex = vtask[kind][i]
                    inp = np.asarray(ex["input"])
                    outp = np.asarray(ex["output"]) if "output" in ex else None
                    offset = (0, 0)
                    if split == "train" and j != keep:
                        shapes = [inp.shape] + ([outp.shape] if outp is not None else [])
                        offset = A.random_offset(rng, shapes)
                    if split == "train" and outp is None:
                        raise _no_solution(path, subset, name, i)
                    rows[split].append((inp, outp, offset, pid, line, t))
    splits = {}
    for split in ("train", "test"):
        rs = rows[split]
        if split == "test" and not rs:
            continue
        size = (ARC.rows, ARC.cols)
        L = ARC.rows * ARC.cols
        inputs = np.zeros((len(rs), L), np.uint16)
        labels = np.zeros((len(rs), L), np.uint16)
        for r, (inp, outp, off, *_rest) in enumerate(rs):
            inputs[r] = A.to_canvas(inp, off, size).reshape(-1)
            if outp is not None:  # no known output: an all-pad label (ignored by the loss)
                labels[r] = A.to_canvas(outp, off, size).reshape(-1)
        splits[split] = Split(inputs=inputs, labels=labels, type=np.zeros(len(rs)),
                              puzzle=np.array([x[4] for x in rs], dtype=np.int32),
                              transform=np.array([x[5] for x in rs], dtype=np.uint8),
                              puzzle_id=np.array([x[3] for x in rs], dtype=np.int32),
                              puzzles=records[split])
    summary = {"family": "arc", "subsets": names, "test_set": test_set_name, "tasks": n_tasks,
               "num_aug": num_aug, "seed": seed, "num_puzzle_ids": len(identifiers),
               "rows": {k: len(v) for k, v in rows.items()},
               "test_puzzles": len(test_puzzles), "test_tasks_elsewhere": len(overlap),
               "test_tasks_elsewhere_first": overlap[:10],
               "out": None if out is None else str(out)}
    if out is None:
        return summary
    meta = {"builder": "arc", "seed": seed, "num_puzzle_ids": len(identifiers),
            "identifiers": identifiers,
            "sources": [str(p) for p in paths],
            "options": {"num_aug": num_aug, "test_set_name": test_set_name, "subsets": names}}
    out = write_dataset(out, vocab=ARC.vocab, seq_len=ARC.rows * ARC.cols, types=[TYPE],
                        splits=splits, meta=meta)
    write_text(out / "identifiers.json", json.dumps(identifiers) + "\n")
    write_text(out / "test_puzzles.json", json.dumps(test_puzzles) + "\n")
    return summary
