"""The on-disk dataset format (see docs/DATASET_FORMAT.md) and batching.

    DIR/meta.json                 format, family, seq_len, vocab table, types, splits, counts,
                                  seed, sources (path + sha256), builder options
    DIR/counts.json               {split: {type: examples}}
    DIR/<split>/inputs.npy        [N, seq_len] uint16 input tokens
    DIR/<split>/labels.npy        [N, seq_len] uint16 label tokens (0 = pad = ignored by the loss)
    DIR/<split>/type.npy          [N] uint8, index into meta["types"]
    DIR/<split>/puzzle.npy        [N] int32, line of <split>/puzzles.jsonl this row comes from
    DIR/<split>/transform.npy     [N] uint8, dihedral symmetry applied to that puzzle (0..7)
    DIR/<split>/puzzle_id.npy     [N] int32, puzzle-embedding identifier (0 = the shared blank id)
    DIR/<split>/puzzles.jsonl     one base puzzle per line: {"type", "key", "text", "source", ...}
                                  where "text" is codec-parsable (a puzz.link URL or pzprv3 text)

A dataset directory is written whole into a temporary folder and renamed into place, so a
folder under the final name is always complete (`meta.json` is written last, too).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..atomic import atomic_dir, old_copy
from ..errors import PtrmError
from ..vocab import Vocab

FORMAT = "ptrm-dataset/1"
ARRAYS = ("inputs", "labels", "type", "puzzle", "transform", "puzzle_id")
DTYPES = {"inputs": np.uint16, "labels": np.uint16, "type": np.uint8, "puzzle": np.int32,
          "transform": np.uint8, "puzzle_id": np.int32}


@dataclass
class Split:
    """One split's arrays, plus the base puzzles its rows point to."""

    inputs: np.ndarray
    labels: np.ndarray
    type: np.ndarray
    puzzle: np.ndarray
    transform: np.ndarray
    puzzle_id: np.ndarray
    puzzles: list[dict] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.inputs)

    def __post_init__(self):
        n = len(self.inputs)
        for name in ARRAYS:
            arr = getattr(self, name)
            if len(arr) != n:
                raise ValueError(f"split array {name!r} has {len(arr)} rows, inputs has {n}")

    @classmethod
    def empty(cls, seq_len: int) -> "Split":
        z = {k: np.zeros((0, seq_len) if k in ("inputs", "labels") else (0,), DTYPES[k])
             for k in ARRAYS}
        return cls(**z)


#: the kept size of a type whose puzzles may have any size (build-data's `--sizes` TYPE=any),
#: where meta.json (builder.options.sizes) and checkpoints (meta.trained_on) hold "ROWSxCOLS"
ANY_SIZE = "any"


@dataclass
class Dataset:
    path: Path
    meta: dict
    vocab: Vocab
    splits: dict[str, Split]

    @property
    def seq_len(self) -> int:
        return int(self.meta["seq_len"])

    @property
    def types(self) -> list[str]:
        return list(self.meta["types"])

    @property
    def num_puzzle_ids(self) -> int:
        return int(self.meta.get("num_puzzle_ids", 1))

    def trained_on(self, split: str = "train") -> dict[str, str] | None:
        """{type: "ROWSxCOLS" or "any"} of the puzzles in `split` (the one a run trains on), as
        `ptrm build-data` kept them (its --sizes); None for a dataset that does not record both
        (an ARC build, a hand-made one). Checkpoints carry it so that `ptrm solve` can say
        when a puzzle is of a kind the model never saw."""
        builder = self.meta.get("builder")   # build-data's record; other writers differ
        options = builder.get("options") if isinstance(builder, dict) else None
        sizes = options.get("sizes") if isinstance(options, dict) else None
        counts = (self.meta.get("counts") or {}).get(split)
        if not isinstance(sizes, dict) or not isinstance(counts, dict):
            return None
        return {t: sizes.get(t, sizes.get("*", ANY_SIZE)) for t, n in sorted(counts.items())
                if n}

    def split(self, name: str) -> Split:
        if name not in self.splits:
            raise PtrmError(f"dataset {self.path} has no split {name!r} "
                            f"(it has: {', '.join(self.splits) or 'none'})")
        return self.splits[name]


def write_dataset(out: str | Path, *, vocab: Vocab, seq_len: int, types: list[str],
                  splits: dict[str, Split], meta: dict | None = None) -> Path:
    """Write a complete dataset atomically. `meta` adds builder facts (seed, sources, options).
    Same inputs give byte-identical files."""
    out = Path(out)
    counts = {name: {t: int((s.type == i).sum()) for i, t in enumerate(types)}
              for name, s in splits.items()}
    full_meta = {"format": FORMAT, "family": vocab.family, "seq_len": int(seq_len),
                 "types": list(types),
                 "splits": {name: len(s) for name, s in splits.items()},
                 "counts": counts, **(meta or {}), "vocab": vocab.to_json()}
    with atomic_dir(out) as tmp:
        for name, s in splits.items():
            d = tmp / name
            d.mkdir()
            for key in ARRAYS:
                arr = np.ascontiguousarray(getattr(s, key), dtype=DTYPES[key])
                if key in ("inputs", "labels") and arr.shape[1:] != (seq_len,):
                    raise ValueError(f"{name}/{key} has shape {arr.shape}, expected [N, {seq_len}]")
                if key in ("inputs", "labels") and arr.size and int(arr.max()) >= len(vocab):
                    # what would reach the model as an index out of range, much later
                    raise PtrmError(f"{name}/{key}: token id {int(arr.max())} is outside the "
                                    f"{vocab.family!r} vocabulary (0..{len(vocab) - 1})",
                                    hint="a codec's encode wrote it (types: "
                                         f"{', '.join(types)}); nothing was written")
                np.save(d / f"{key}.npy", arr, allow_pickle=False)
            with open(d / "puzzles.jsonl", "w") as f:
                for rec in s.puzzles:
                    f.write(json.dumps(rec, sort_keys=True) + "\n")
        (tmp / "counts.json").write_text(json.dumps(counts, indent=1) + "\n")
        (tmp / "meta.json").write_text(json.dumps(full_meta, indent=1) + "\n")
    return out


def load_dataset(path: str | Path, *, splits: list[str] | None = None,
                 mmap: bool = True) -> Dataset:
    """Read a dataset directory. Arrays are memory-mapped; puzzles.jsonl is read eagerly."""
    path = Path(path)
    meta_path = path / "meta.json"
    if not meta_path.is_file():
        if not path.exists() and (old := old_copy(path)).is_dir():
            raise PtrmError(f"{path}: no such dataset; a rebuild stopped at its last step left "
                            f"the previous one in {old}",
                            hint=f"rename it back (mv {old} {path}) or build again")
        raise PtrmError(f"{path} is not a ptrm dataset (no meta.json)",
                        hint="build one with `ptrm build-data`")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as e:
        raise PtrmError(f"{meta_path}: not valid JSON ({e})") from None
    if meta.get("format") != FORMAT:
        raise PtrmError(f"{path}: dataset format {meta.get('format')!r}, this ptrm reads {FORMAT!r}")
    vocab = Vocab.from_json(meta["vocab"])
    out: dict[str, Split] = {}
    for name in (splits or list(meta["splits"])):
        d = path / name
        if not d.is_dir():
            raise PtrmError(f"dataset {path} has no split {name!r} (it has: "
                            f"{', '.join(meta['splits']) or 'none'})")
        out[name] = _load_split(d, int(meta["seq_len"]), mmap)
    return Dataset(path, meta, vocab, out)


def _load_split(d: Path, seq_len: int, mmap: bool) -> Split:
    """One split's files; a missing, unreadable or inconsistent one is a damaged dataset (one
    message naming the file), not a traceback at some later step."""
    damaged = "build it again with `ptrm build-data` (the same command writes the same bytes)"
    arrays = {}
    for k in ARRAYS:
        f = d / f"{k}.npy"
        try:
            arrays[k] = np.load(f, mmap_mode="r" if mmap else None, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise PtrmError(f"{f}: damaged dataset file ({type(e).__name__}: {e})",
                            hint=damaged) from None
    if arrays["inputs"].ndim != 2 or arrays["inputs"].shape[1:] != (seq_len,) \
            or arrays["labels"].shape != arrays["inputs"].shape:
        raise PtrmError(f"{d}: damaged dataset: inputs {arrays['inputs'].shape} and labels "
                        f"{arrays['labels'].shape}, where meta.json says rows of {seq_len}",
                        hint=damaged)
    try:
        with open(d / "puzzles.jsonl") as f:
            puzzles = [json.loads(line) for line in f if line.strip()]
        return Split(**arrays, puzzles=puzzles)
    except (OSError, ValueError) as e:   # json's errors are ValueErrors, as Split's are
        raise PtrmError(f"{d}: damaged dataset ({type(e).__name__}: {e})", hint=damaged) from None
