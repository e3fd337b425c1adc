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

import contextlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..atomic import atomic_dir, old_copy, write_problem
from ..errors import PtrmError, json_problem
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
            raise no_split(self.path, name, list(self.splits), self.meta)
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
    with _write_failures(out), atomic_dir(out) as tmp:
        for name, s in splits.items():
            d, arrays = tmp / name, {}
            d.mkdir()
            for key in ARRAYS:
                src = np.asarray(getattr(s, key))
                arr = np.ascontiguousarray(src, dtype=DTYPES[key])
                if arr.shape == src.shape and not np.array_equal(arr, src):
                    # a 2.5 or a -1 would be written as 2 or 65535: not what the caller meant
                    bad = src[arr != src].flat[0].item()
                    raise PtrmError(f"{name}/{key}: value {bad!r} is not a "
                                    f"{np.dtype(DTYPES[key])} (the format's dtype for {key})",
                                    hint="nothing was written")
                if key in ("inputs", "labels") and arr.shape[1:] != (seq_len,):
                    raise ValueError(f"{name}/{key} has shape {arr.shape}, expected [N, {seq_len}]")
                if key in ("inputs", "labels") and arr.size and int(arr.max()) >= len(vocab):
                    # what would reach the model as an index out of range, much later
                    raise PtrmError(f"{name}/{key}: token id {int(arr.max())} is outside the "
                                    f"{vocab.family!r} vocabulary (0..{len(vocab) - 1})",
                                    hint="a codec's encode wrote it (types: "
                                         f"{', '.join(types)}); nothing was written")
                np.save(d / f"{key}.npy", arr, allow_pickle=False)
                arrays[key] = arr
            # what load_dataset would refuse is not written (named by the final path)
            _check_split(out / name, arrays, s.puzzles, full_meta, len(vocab),
                         problem="not written", hint="nothing was written")
            with open(d / "puzzles.jsonl", "w") as f:
                for rec in s.puzzles:
                    f.write(json.dumps(rec, sort_keys=True) + "\n")
        (tmp / "counts.json").write_text(json.dumps(counts, indent=1) + "\n")
        (tmp / "meta.json").write_text(json.dumps(full_meta, indent=1) + "\n")
    return out


@contextlib.contextmanager
def _write_failures(out: Path):
    """A dataset write that the file system refuses as one message naming the folder. numpy
    reports a write cut short by a full disk as an OSError without an errno ("N requested and
    M written"), which would otherwise end the build in a traceback. atomic_dir has removed
    its temporary folder by then, so nothing half-written is left."""
    try:
        yield
    except OSError as e:
        why = write_problem(out, e) if e.strerror or not str(e) else f"{e}: is the disk full?"
        raise PtrmError(f"{out}: cannot write the dataset ({why})",
                        hint="nothing was written there (an earlier build in it is unchanged); "
                             "free some space or choose a folder you can write") from None


def load_dataset(path: str | Path, *, splits: list[str] | None = None,
                 mmap: bool = True) -> Dataset:
    """Read a dataset directory. Arrays are memory-mapped; puzzles.jsonl is read eagerly.
    Everything docs/DATASET_FORMAT.md requires is checked here (keys, dtypes, shapes, ids in
    range), so a hand-written dataset with a mistake is one message naming the file, never a
    traceback at some later step, nor a run that trains on what it misreads."""
    path = Path(path)
    meta_path = path / "meta.json"
    if not meta_path.is_file():
        if not path.exists() and (old := old_copy(path)).is_dir():
            raise PtrmError(f"{path}: no such dataset; a rebuild stopped at its last step left "
                            f"the previous one in {old}",
                            hint=f"rename it back (mv {old} {path}) or build again")
        raise PtrmError(f"{path}: no such dataset folder" if not path.exists() else
                        f"{path} is not a ptrm dataset (no meta.json)",
                        hint="build one with `ptrm build-data`, or write one "
                             "(docs/DATASET_FORMAT.md, \"Writing one yourself\")")
    meta = _read_meta(meta_path)
    if "format" in meta and meta["format"] != FORMAT:
        raise PtrmError(f"{path}: dataset format {meta['format']!r}, this ptrm reads {FORMAT!r}",
                        hint=_format_hint(meta["format"]))
    vocab = _check_meta(meta_path, meta)   # a missing "format" among the other missing keys
    listed = meta["splits"]
    out: dict[str, Split] = {}
    for name in (splits or list(listed)):
        if name not in listed:
            raise no_split(path, name, list(listed), meta)
        d = path / name
        if not d.is_dir():
            raise PtrmError(f"{d}: missing: {meta_path.name} lists split {name!r} "
                            f"({listed[name]} rows) but there is no such folder",
                            hint=FORMAT_HINT)
        out[name] = _load_split(d, meta, vocab, mmap)
    return Dataset(path, meta, vocab, out)


def _read_meta(meta_path: Path) -> dict:
    """meta.json as a dict; one that is not JSON (a hand edit, a copy cut short, another
    file under its name) is a message naming it, with where the format is written down."""
    try:
        meta = json.loads(meta_path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:  # bytes that are not text, too
        why = f"{e.lineno}: {json_problem(e)}" if isinstance(e, json.JSONDecodeError) \
            else " not UTF-8 text"
        raise PtrmError(f"{meta_path}:{why}", hint=FORMAT_HINT) from None
    except OSError as e:
        raise PtrmError(f"{meta_path}: cannot read it ({e.strerror or e})",
                        hint="check that you may read the dataset folder's files") from None
    if not isinstance(meta, dict):
        raise PtrmError(f"{meta_path}: expected a JSON object, found {type(meta).__name__}",
                        hint=FORMAT_HINT)
    return meta


def _format_hint(found) -> str:
    """Another "format" than FORMAT: a later version of ours was written by a later ptrm;
    anything else is not a ptrm dataset's meta.json at all."""
    if isinstance(found, str) and found.startswith(FORMAT.split("/")[0] + "/"):
        return ("another version of ptrm wrote it: read it with that version, or build it "
                "again with this one (`ptrm build-data`)")
    return f'a ptrm dataset\'s meta.json says "format": "{FORMAT}"; ' + FORMAT_HINT


def no_split(path: Path, name: str, have: list[str], meta: dict) -> PtrmError:
    """A split the dataset does not hold, with the ones it does and why the one asked for may
    not be there: `test` is what ARC builds hold out (`--test-set`), `val` the others. Said
    without a command's option: eval and train name splits differently."""
    from ..errors import did_you_mean

    msg = f"dataset {path} has no split {name!r} (it has: {', '.join(have) or 'none'})"
    if not have:
        return PtrmError(msg, hint=FORMAT_HINT)
    return PtrmError(msg, hint=did_you_mean([name], have).strip(" ()")
                     or _missing_split_hint(name, meta))


def _missing_split_hint(name: str, meta: dict) -> str:
    arc = meta.get("family") == "arc"
    if name == "test" and arc:
        return _arc_test_hint(meta)
    if name == "test":
        return ("only ARC builds (`ptrm build-data --family arc`) have a test split; the "
                "others hold puzzles out in val (--val-per-type) and golden (golden files)")
    if arc:
        return "an ARC build holds train and, when it had a test set (--test-set), test"
    return ("name one of the splits it has; `ptrm build-data` writes train, val and golden "
            "(ARC: train and test)")


def _arc_test_hint(meta: dict) -> str:
    """An ARC build without a test split: none of its subsets was the test set (no
    evaluation* file among its sources, and no --test-set)."""
    options = meta.get("options")
    subsets = options.get("subsets") if isinstance(options, dict) else None
    built = f" (its subsets: {', '.join(map(str, subsets))})" if isinstance(subsets, list) \
        and subsets else ""
    return (f"this ARC build had no test set{built}: build it again with an evaluation "
            "challenges file among its sources, or --test-set SUBSET naming one of them")


#: where a hand-written dataset's author looks; build-data's output is rebuilt instead
FORMAT_HINT = ("docs/DATASET_FORMAT.md says what each file holds (\"Writing one yourself\"); "
               "a dataset `ptrm build-data` wrote: build it again (the same command writes "
               "the same bytes)")
#: the keys of meta.json a reader needs; the others record how `ptrm build-data` built it
REQUIRED_META = ("format", "seq_len", "vocab", "types", "splits")
VOCAB_SHAPE = '{"family": NAME, "tokens": ["pad", ...]}'


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_meta(meta_path: Path, meta: dict) -> Vocab:
    """The keys a reader uses, with their types; returns the token table."""
    def bad(what: str) -> PtrmError:
        return PtrmError(f"{meta_path}: {what}", hint=FORMAT_HINT)

    missing = [k for k in REQUIRED_META if k not in meta]
    if missing:
        raise bad(f"missing key(s) {', '.join(map(repr, missing))} (a dataset needs "
                  f"{', '.join(REQUIRED_META)})")
    if not _is_int(meta["seq_len"]) or meta["seq_len"] < 1:
        raise bad(f"seq_len {meta['seq_len']!r}: expected a positive integer (tokens a row)")
    types = meta["types"]
    if not isinstance(types, list) or not types or not all(isinstance(t, str) for t in types):
        raise bad(f"types {types!r}: expected a non-empty list of type names "
                  "(type.npy indexes it)")
    splits = meta["splits"]
    if not isinstance(splits, dict) or not all(_is_int(n) and n >= 0 for n in splits.values()):
        raise bad(f"splits {splits!r}: expected {{split name: number of rows}}")
    n_ids = meta.get("num_puzzle_ids", 1)
    if not _is_int(n_ids) or n_ids < 1:
        raise bad(f"num_puzzle_ids {n_ids!r}: expected a positive integer (1, the default: "
                  "every row uses id 0)")
    try:
        vocab = Vocab.from_json(meta["vocab"])
    except PtrmError as e:   # VocabError: not a table, no pad first, a token twice
        raise bad(f"vocab: {e} (expected {VOCAB_SHAPE})") from None
    if "family" in meta and meta["family"] != vocab.family:
        raise bad(f"family {meta['family']!r}, but the vocab table's is {vocab.family!r}")
    return vocab


def _load_split(d: Path, meta: dict, vocab: Vocab, mmap: bool) -> Split:
    """One split's files; a missing, unreadable or inconsistent one is a damaged dataset (one
    message naming the file and what was expected), not a traceback at some later step."""
    arrays = {}
    for k in ARRAYS:
        f = d / f"{k}.npy"
        try:
            arrays[k] = a = np.load(f, mmap_mode="r" if mmap else None, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise PtrmError(f"{f}: damaged dataset file ({type(e).__name__}: {e})",
                            hint=FORMAT_HINT) from None
        want = np.dtype(DTYPES[k])
        if (a.dtype.kind, a.dtype.itemsize) != (want.kind, want.itemsize):  # any byte order
            negative = a.dtype.kind in "if" and a.size and bool((np.asarray(a) < 0).any())
            pad = (" (the loss ignores a label of 0 = pad, not a negative one like -100)"
                   if k == "labels" and negative else "")
            raise PtrmError(f"{f}: damaged dataset: dtype {a.dtype}, expected {want}{pad}",
                            hint=f"save arr.astype(np.{want}) once its values fit; "
                                 + FORMAT_HINT)
    f = d / "puzzles.jsonl"
    try:
        with open(f) as fh:
            puzzles = [json.loads(line) for line in fh if line.strip()]
    except (OSError, ValueError) as e:   # json's errors are ValueErrors
        raise PtrmError(f"{f}: damaged dataset file ({type(e).__name__}: {e})",
                        hint=FORMAT_HINT) from None
    _check_split(d, arrays, puzzles, meta, len(vocab), problem="damaged dataset",
                 hint=FORMAT_HINT)
    return Split(**arrays, puzzles=puzzles)


def _check_split(d: Path, arrays: dict, puzzles: list, meta: dict, vocab_size: int, *,
                 problem: str, hint: str) -> None:
    """Shapes that agree with meta.json and with each other, and every id inside its table:
    rows never reach the model as something other than what they say (an id past the token
    table, a type, puzzle line or puzzle id that does not exist)."""
    seq_len, types, n_ids = meta["seq_len"], meta["types"], meta.get("num_puzzle_ids", 1)

    def bad(name: str, what: str) -> PtrmError:
        return PtrmError(f"{d / name}: {problem}: {what}", hint=hint)

    n = len(arrays["inputs"])
    for k, a in arrays.items():
        want = (n, seq_len) if k in ("inputs", "labels") else (n,)
        if a.shape != want:
            what = (f"rows of seq_len {seq_len} (meta.json)" if k == "inputs" else
                    f"one per row of inputs.npy ({n})")
            raise bad(f"{k}.npy", f"shape {a.shape}, expected {list(want)}: {what}")
    if n != meta["splits"][d.name]:
        raise bad("inputs.npy", f"{n} rows, but meta.json says split {d.name!r} has "
                                f"{meta['splits'][d.name]}")
    if not all(isinstance(p, dict) for p in puzzles):
        raise bad("puzzles.jsonl", 'every line must be a JSON object {"type", "text", ...}')
    if not n:
        return
    for k in ("inputs", "labels"):
        if (top := int(arrays[k].max())) >= vocab_size:
            raise bad(f"{k}.npy", f"token id {top} is outside the vocabulary of meta.json "
                      f"(ids 0..{vocab_size - 1}, 0 = pad)")
    if (top := int(arrays["type"].max())) >= len(types):
        raise bad("type.npy", f"type index {top}, but meta.json lists {len(types)} type(s) "
                  f"({', '.join(types)}): expected 0..{len(types) - 1}")
    tf = np.asarray(arrays["transform"])
    if (odd := tf[(tf > 7) & (tf != 255)]).size:
        raise bad("transform.npy", f"transform {int(odd[0])}: expected 0..7 (a dihedral "
                  "symmetry) or 255 (a sudoku shuffle)")
    lo, hi = int(arrays["puzzle_id"].min()), int(arrays["puzzle_id"].max())
    if lo < 0 or hi >= n_ids:
        raise bad("puzzle_id.npy", f"puzzle ids {lo}..{hi}, expected 0..{n_ids - 1} "
                  f"(meta.json num_puzzle_ids: {n_ids}; 0 = the shared blank id)")
    lo, hi = int(arrays["puzzle"].min()), int(arrays["puzzle"].max())
    if lo < 0 or (puzzles and hi >= len(puzzles)):
        raise bad("puzzle.npy", f"puzzle lines {lo}..{hi}, but puzzles.jsonl has "
                  f"{len(puzzles)}: expected 0-based lines of it (any >= 0 where it is "
                  "empty, a dataset of tokens only)")
