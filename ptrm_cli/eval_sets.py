"""`ptrm eval`'s puzzles: the PPBench golden set, a PPBench JSONL file, any other source file
`ptrm build-data` reads (Sudoku-Extreme CSV, sudoku lists, janko) or a split of a built
dataset, each as an EvalSet - tokens in the model's family, labels, and a rules verifier per
puzzle - optionally a seeded sample of it (`--sample`). evaluate.py runs and scores them."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path

import numpy as np
import torch

from . import codec as registry
from .errors import ParseError, PtrmError
from .solver import LoadedModel, Verifier, family_for

#: the paper's PPBench filter: type -> (rows, cols)
GOLDEN_TYPES = {"sudoku": (9, 9), "lightup": (10, 10), "nurikabe": (10, 10),
                "heyawake": (10, 10), "tapa": (10, 10), "shakashaka": (10, 10)}
GOLDEN_IN_WHEEL = "ppbench/bundled/golden_300.jsonl"
PPBENCH_VERSION = "0.1.0"


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

    def rows(self, idx, **changes) -> EvalSet:
        """The puzzles at positions `idx` (in that order), other fields as `changes` say."""
        idx = list(idx)
        rows = torch.as_tensor(idx, dtype=torch.long)
        pick = lambda xs: [xs[i] for i in idx]  # noqa: E731
        return replace(self, inputs=self.inputs[rows], labels=self.labels[rows],
                       types=pick(self.types), keys=pick(self.keys),
                       verifiers=pick(self.verifiers),
                       puzzle_ids=None if self.puzzle_ids is None else self.puzzle_ids[rows],
                       **changes)

    def sample(self, n: int, seed: int = 0) -> EvalSet:
        """A seeded random n of the puzzles (`sample_rows`)."""
        if n >= len(self):
            return self
        return self.rows(sample_rows(len(self), n, seed).tolist(),
                         sampled={"n": n, "of": len(self), "seed": seed})

    def only(self, types: list[str]) -> EvalSet:
        """The puzzles of these types (`--types`); a type the set does not hold is an error."""
        missing = [t for t in types if t not in self.types]
        if missing:
            raise PtrmError(f"{self.name}: no {', '.join(missing)} puzzles to evaluate "
                            f"(it holds {', '.join(self.type_order())})")
        return self.rows([i for i, t in enumerate(self.types) if t in types])

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
                     sample: int | None = None, types: list[str] | None = None,
                     min_difficulty: int | None = None) -> EvalSet:
    """Any other source file `ptrm build-data` reads (sources.READERS: Sudoku-Extreme CSV,
    sudoku lists, janko JSON), every puzzle of it, in the model's token family. Rows that
    cannot be read or used are listed as unusable with their line, as build-data counts them.
    `sample`: a seeded n of the file's records, drawn before decoding (Sudoku-Extreme's test
    set has 423k rows; only the sample is decoded and held), after `types` and
    `min_difficulty` (records rated N or more, as build-data's --min-difficulty)."""
    from . import sources

    reader = sources.reader_for(path)
    if reader is None:  # (resolve_split sends only recognised files here)
        raise PtrmError(f"{path}: not a file any source reader recognises",
                        hint="`ptrm build-data --help` lists the source formats")
    codecs = _installed()
    inputs, labels, row_types, keys, verifiers, skipped, unusable = [], [], [], [], [], {}, []
    bad = lambda loc, why, t=None: unusable.append(  # noqa: E731
        {"line": loc, "type": t, "key": None, "reason": why})
    items = reader.read(path, bad)
    if types is not None:
        items = list(items)
        held = sorted({sources.resolve_type(it.type) for it in items})
        missing = [t for t in types if t not in held]
        if missing:
            raise PtrmError(f"{path}: no {', '.join(missing)} puzzles to evaluate "
                            f"(it holds {', '.join(held) or 'none'})")
        items = [it for it in items if sources.resolve_type(it.type) in types]
    source = str(path)
    if min_difficulty is not None:
        items = list(items)
        rated = [it for it in items if it.rating is not None and it.rating >= min_difficulty]
        if not rated:
            unrated = sum(it.rating is None for it in items)
            raise PtrmError(f"{path}: no record rated {min_difficulty} or more "
                            f"({len(items)} read, {unrated} without a rating)")
        items, source = rated, f"{path} (rating >= {min_difficulty})"
    sampled = None
    if sample is not None:
        items = list(items)
        sampled = {"n": min(sample, len(items)), "of": len(items), "seed": 0}
        items = [items[i] for i in sample_rows(len(items), sample)]
    for item in items:
        if limit is not None and len(row_types) >= limit:
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
        row_types.append(t)
        keys.append(item.ident or codec.key(puzzle))
        verifiers.append(Verifier(codec, puzzle, family))
    if not row_types:
        why = f" (skipped: {', '.join(skipped)})" if skipped else ""
        first = f"; line {unusable[0]['line']}: {unusable[0]['reason']}" if unusable else ""
        raise PtrmError(f"{path}: no puzzle to evaluate{why}{first}")
    return EvalSet(path.stem, source, torch.as_tensor(np.stack(inputs), dtype=torch.long),
                   torch.as_tensor(np.stack(labels), dtype=torch.long), row_types, keys,
                   verifiers, skipped=skipped, unusable=unusable, sampled=sampled)


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
                  limit: int | None = None, sample: int | None = None,
                  types: list[str] | None = None, min_difficulty: int | None = None) -> EvalSet:
    """--split golden | FILE.jsonl (PPBench) | another source file (Sudoku-Extreme CSV, ...) |
    DATASET_DIR | NAME (with --data DIR); then only `types` (`EvalSet.only`), then a seeded
    `sample` of what is left (`sample_rows`). `min_difficulty`: source files with ratings."""
    p = Path(split).expanduser()
    if min_difficulty is not None and not (data is None and p.is_file()):
        raise PtrmError("--min-difficulty applies to a rated source file (a Sudoku-Extreme "
                        "CSV given as --split FILE)")
    if split == "golden" and data is None:
        ev = load_ppbench_jsonl(golden_path(), loaded, name="golden", limit=limit)
    elif data is None and p.is_file():
        from . import sources

        reader = sources.reader_for(p)
        if reader is not None and reader.kind != sources.JsonlRecords.kind:
            return load_source_file(p, loaded, limit=limit, sample=sample, types=types,
                                    min_difficulty=min_difficulty)
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
    if types is not None:
        ev = ev.only(types)
    return ev if sample is None else ev.sample(sample)
