"""Split: decoded puzzles -> golden, validation and train, by identity (canonical key).

    golden      every puzzle of a golden file, its own repeats dropped
    pool        every other puzzle; one whose key is a golden puzzle's is dropped ("in golden"),
                so is one in a build given to --exclude ("excluded") and one whose key came
                earlier in reading order ("duplicate")
    validation  per type, a seeded sample of N (--val-per-type, --val-tapa), drawn with the
                paper among all records of the type before the size filter (--val-pool
                all-sizes) or among kept puzzles only (kept); or, with --val-from, exactly
                the puzzles whose keys an earlier build's validation holds
    train       the rest, optionally capped to a seeded N per type (--train-puzzles)

One generator seeded with `seed` draws validation, over types in a fixed order and candidates
in reading order, so the split depends on neither --workers nor chunking. Only the split
decides which puzzle goes where; build_augment.py then makes the rows.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .build_decode import Entry
from .errors import PtrmError


def split_puzzles(decoded: list[Entry], offsize, golden_idents, files, types, opts, ledger):
    """Golden first (its own duplicates dropped), then the pool: drop golden puzzles and
    repeats by canonical key, sample validation per type, the rest is train."""
    decoded.sort(key=lambda e: e.seq)
    golden: list[Entry] = []
    golden_keys: set[str] = set()
    for e in decoded:
        if files[e.fi].role != "golden":
            continue
        if e.canon in golden_keys:
            ledger.drop(e.fi, e.type, "duplicate")
            continue
        golden_keys.add(e.canon)
        golden.append(e)
    pool: list[Entry] = []
    seen: set[str] = set()
    for e in decoded:
        if files[e.fi].role == "golden":
            continue
        if e.canon in golden_keys:
            ledger.drop(e.fi, e.type, "in golden")
        elif e.canon in opts.exclude_keys:
            ledger.drop(e.fi, e.type, "excluded")
        elif e.canon in seen:
            ledger.drop(e.fi, e.type, "duplicate")
        else:
            seen.add(e.canon)
            pool.append(e)
    rng = np.random.default_rng(opts.seed & 0xFFFFFFFF)
    val_seq: set[int] = set()
    if opts.val_keys is not None:
        val_seq = {e.seq for e in pool if e.canon in opts.val_keys}
        missing = len(opts.val_keys) - len(val_seq)
        if missing:
            raise PtrmError(f"--val-from: {missing} of its {len(opts.val_keys)} validation "
                            "puzzles are not among the sources (or are golden / off-size)",
                            hint="pass the sources that earlier build read, plus new ones")
    for t in types if opts.val_keys is None else ():
        cands = [e.seq for e in pool if e.type == t]
        if opts.val_pool == "all-sizes":
            cands += [s for s, tt, ident in offsize if tt == t and ident not in golden_idents]
        cands.sort()
        n = min(opts.val_count(t), len(cands))
        if n > 0:
            val_seq.update(cands[i] for i in rng.choice(len(cands), n, replace=False).tolist())
    val = [e for e in pool if e.seq in val_seq]
    train = [e for e in pool if e.seq not in val_seq]
    if opts.train_puzzles is not None:
        # TRM's --subsample-size: a seeded random N of the training puzzles, per type, drawn
        # after validation so the held-out set does not depend on N
        rng = np.random.default_rng([opts.seed & 0xFFFFFFFF, 0x7A1])
        keep: set[int] = set()
        for t in types:
            cands = [e.seq for e in train if e.type == t]
            n = min(opts.train_puzzles, len(cands))
            keep.update(cands[i] for i in rng.choice(len(cands), n, replace=False).tolist())
        for e in train:
            if e.seq not in keep:
                ledger.drop(e.fi, e.type, "train cap")
        train = [e for e in train if e.seq in keep]
    return {"train": train, "val": val, "golden": golden}


def read_val_keys(dataset: str | Path, augmentation: str) -> frozenset[str]:
    """The canonical keys of a built dataset's validation puzzles (`val/puzzles.jsonl`); that
    build's --augmentation must be this one's (`_splits_of`)."""
    dataset = Path(dataset)
    _splits_of(dataset, augmentation, flag="--val-from")
    return _read_keys(dataset, ["val"], flag="--val-from")


def read_dataset_keys(dataset: str | Path, augmentation: str) -> frozenset[str]:
    """The canonical keys of every puzzle of a built dataset, all splits (`--exclude`)."""
    dataset = Path(dataset)
    return _read_keys(dataset, _splits_of(dataset, augmentation, flag="--exclude"),
                      flag="--exclude")


def _splits_of(dataset: Path, augmentation: str, *, flag: str) -> list[str]:
    """A built dataset's splits, once its meta.json shows it was built with `augmentation`:
    keys compare only under one identity (a sudoku-trm key is never a dihedral one, so every
    puzzle would look new, or missing)."""
    try:
        meta = json.loads((dataset / "meta.json").read_text())
        splits = list(meta["splits"])
        theirs = meta["builder"]["options"].get("augmentation", "dihedral")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise PtrmError(f"{flag} {dataset}: no readable meta.json there",
                        hint="pass a folder written by `ptrm build-data`") from None
    if theirs != augmentation:
        raise PtrmError(f"{flag} {dataset} was built with --augmentation {theirs}, this build "
                        f"uses {augmentation}: their puzzle identities do not compare",
                        hint=f"build with --augmentation {theirs}")
    return splits


def _read_keys(dataset: Path, splits: list[str], *, flag: str) -> frozenset[str]:
    keys = set()
    for split in splits:
        path = dataset / split / "puzzles.jsonl"
        if not path.is_file():
            raise PtrmError(f"{flag} {dataset}: no {path.relative_to(dataset)} there",
                            hint="pass a folder written by `ptrm build-data`")
        with path.open(encoding="utf-8") as f:
            for i, line in enumerate(f, 1):
                try:
                    keys.add(json.loads(line)["key"])
                except (ValueError, KeyError, TypeError):
                    raise PtrmError(f"{path}:{i}: expected a JSON object with a 'key'",
                                    hint="pass a folder written by `ptrm build-data`, "
                                         "unedited") from None
    return frozenset(keys)
