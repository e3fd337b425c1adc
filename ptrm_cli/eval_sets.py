"""`ptrm eval`'s puzzles: the PPBench golden set, any source file `ptrm build-data` reads
(PPBench or ptrm JSONL, Sudoku-Extreme CSV, sudoku lists, janko), read by its own readers
(sources.py), or a split of a built dataset, each as an EvalSet - tokens in the model's family,
labels, and a rules verifier per puzzle - optionally a seeded sample of it (`--sample`).
evaluate.py runs and scores them."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path

import numpy as np
import torch

from . import codec as registry
from .errors import ParseError, PtrmError, UsageError, check_counts
from .paths import report_path
from .solver import LoadedModel, Verifier, adopt_vocab, family_for, has_no_table, reads_family

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
                       limit: int | None = None, types: list[str] | None = None) -> EvalSet:
    """A JSONL file through build-data's reader (sources.JsonlRecords): PPBench records
    filtered to the paper's six types at their sizes, ptrm records (`ptrm generate`) all."""
    from . import sources

    return load_source_file(path, loaded, limit=limit, types=types, name=name,
                            reader=sources.READERS[sources.JsonlRecords.kind])


def _paper_filter(items, off: list):
    """The paper's PPBench filter (GOLDEN_TYPES) on PPBench records; other records pass. The
    locations of the records it leaves out go to `off`."""
    from . import sources

    for it in items:
        if it.form == "ppbench" and (GOLDEN_TYPES.get(sources.resolve_type(it.type))
                                     != (it.rows, it.cols)):
            off.append(it.loc)
            continue
        yield it


def load_source_file(path: Path, loaded: LoadedModel, *, limit: int | None = None,
                     sample: int | None = None, types: list[str] | None = None,
                     min_difficulty: int | None = None, name: str | None = None,
                     reader=None) -> EvalSet:
    """A source file `ptrm build-data` reads (sources.READERS: PPBench/ptrm JSONL,
    Sudoku-Extreme CSV, sudoku lists, janko JSON), in the model's token family. Records
    that cannot be read or used (malformed, a solution that breaks the rules, a clue the
    vocabulary lacks) are listed as unusable with their line, as build-data counts them.
    `types` is applied first, so only those types' codecs must fit the model.
    `sample`: a seeded n of the file's records, drawn before decoding (Sudoku-Extreme's test
    set has 423k rows; only the sample is decoded and held), after `types` and
    `min_difficulty` (records rated N or more, as build-data's --min-difficulty)."""
    from . import sources
    from .build_decode import codec_failure, encoded

    reader = reader or sources.reader_for(path)
    if reader is None:  # (resolve_split sends only recognised files here)
        raise PtrmError(f"{path}: not a file any source reader recognises",
                        hint="`ptrm build-data --help` lists the source formats")
    codecs = _installed()
    inputs, labels, row_types, keys, verifiers, skipped, unusable = [], [], [], [], [], {}, []
    bad = lambda loc, why, t=None: unusable.append(  # noqa: E731
        {"line": loc, "type": t, "key": None, "reason": why})
    off_paper: list = []
    items = _paper_filter(reader.read(path, bad), off_paper)
    if types is not None:
        items = list(items)
        held = sorted({sources.resolve_type(it.type) for it in items})
        missing = [t for t in types if t not in held]
        if missing:
            raise PtrmError(f"{path}: no {', '.join(missing)} puzzles to evaluate "
                            f"(it holds {', '.join(held) or 'none'})")
        items = [it for it in items if sources.resolve_type(it.type) in types]

    # absolute, as the report records it: read later elsewhere, `data/x.csv` named nothing
    source = report_path(path)
    if min_difficulty is not None:
        items = list(items)
        rated = [it for it in items if it.rating is not None and it.rating >= min_difficulty]
        if not rated:
            unrated = sum(it.rating is None for it in items)
            raise PtrmError(f"{path}: no record rated {min_difficulty} or more "
                            f"({len(items)} read, {unrated} without a rating)")
        items, source = rated, f"{source} (rating >= {min_difficulty})"
    sampled = None
    if sample is not None:
        items = list(items)
        if sample < len(items):   # else all of them, as EvalSet.sample does
            sampled = {"n": sample, "of": len(items), "seed": 0}
            items = [items[i] for i in sample_rows(len(items), sample)]
    for item in items:
        if limit is not None and len(row_types) >= limit:
            break
        t = sources.resolve_type(item.type)
        if t not in codecs:
            skipped[t] = "codec not installed"
            continue
        codec = codecs[t]
        try:
            family = family_for(codec, loaded)  # a model of another family: stop, say why
        except PtrmError as e:  # the types this model reads, if the file has some
            held = {t} | set(row_types) | {sources.resolve_type(i.type) for i in items}  # (rest)
            theirs = [n for n, c in codecs.items() if any(
                reads_family(loaded, f) for f in c.families)]
            readable = sorted(held & set(theirs))
            where = "the PPBench golden set" if name == "golden" else str(path)
            order = [g for g in GOLDEN_TYPES if g in held] + sorted(held - set(GOLDEN_TYPES))
            if readable:  # e names the first puzzle's type only ("no heyawake family...")
                raise PtrmError(f"{where} holds {', '.join(order)}; this model reads only "
                                f"{', '.join(readable)} of them",
                                hint=f"--types {','.join(readable)} evaluates the "
                                     "puzzles of the types this model reads") from None
            if has_no_table(loaded):  # an official step_N file: its own message
                raise
            # a model of another family (a plugin's own): none of these puzzles is for it
            raise PtrmError(
                f"{where} holds no puzzles of the types a {loaded.vocab.family!r} model reads "
                f"({', '.join(theirs) or 'no installed codec reads that family'}): it holds "
                f"{', '.join(order)}",
                hint="evaluate it on puzzles of its types: --split FILE (records of them) or "
                     "--split val --data DATASET (the dataset it trained on)") from None
        try:  # what build-data's decode_task drops as malformed, too (a field of a wrong kind)
            puzzle, solution = reader.decode(item, codec)
            problem = sources.label_problem(codec, puzzle, solution)
            if problem:
                raise sources.Drop(problem[0], ": ".join(problem))
            x, y = encoded(codec, puzzle, solution, family)
        except registry.CodecBug:  # the codec's fault, not the record's: no eval with it
            raise
        except (PtrmError, sources.Drop, ValueError, KeyError, IndexError, TypeError) as e:
            unusable.append({"line": item.loc, "type": t, "key": item.ident,
                             "reason": str(e) or type(e).__name__})
            continue
        except Exception as e:  # any other, from from_record or parse: the codec's bug, named
            if (bug := codec_failure(codec, e)) is None:
                raise
            raise bug from e
        inputs.append(x)
        labels.append(y)
        row_types.append(t)
        if item.ident is None:
            with registry.contract(codec, "key"):
                keys.append(codec.key(puzzle))
        else:
            keys.append(item.ident)
        verifiers.append(Verifier(codec, puzzle, family))
    # read errors are found before decoding errors: list them all in file order
    unusable.sort(key=lambda u: (0, u["line"], "") if isinstance(u["line"], int)
                  else (1, 0, str(u["line"])))
    if not row_types:
        why = [f"skipped: {', '.join(skipped)}"] if skipped else []
        if off_paper:
            why.append(f"{len(off_paper)} PPBench record(s) outside the paper's six types at "
                       "9x9/10x10")
        if unusable:
            u = unusable[0]
            why.append(f"{len(unusable)} unusable, the first {path.name}:{u['line']}: "
                       f"{u['reason']}")
        raise PtrmError(f"{path}: no puzzles to evaluate"
                        + (f" ({'; '.join(why)})" if why else ""))
    return EvalSet(name or path.stem, source,
                   torch.as_tensor(np.stack(inputs), dtype=torch.long),
                   torch.as_tensor(np.stack(labels), dtype=torch.long), row_types, keys,
                   verifiers, skipped=skipped, unusable=unusable, sampled=sampled)


def _same_vocab(loaded: LoadedModel, vocab, path: Path) -> None:
    """The dataset's token table must be the checkpoint's: a model reads one vocabulary. The
    hint says which checkpoint or dataset would match (the app's generic one said nothing)."""
    from .errors import VocabError

    try:
        loaded.vocab.check_same(vocab, what=f"checkpoint {loaded.path}",
                                other_what=f"dataset {path}")
    except VocabError as e:
        mine, theirs = loaded.vocab.family, vocab.family
        hint = (f"evaluate a checkpoint trained on {theirs!r} data (-c), or this model on a "
                f"{mine!r} dataset (the one it trained on; `ptrm build-data --family {mine}` "
                "builds one)" if mine != theirs else
                f"two versions of the {mine!r} token table: evaluate this model on the dataset "
                "it trained on, or a checkpoint trained on this dataset (-c)")
        raise VocabError(str(e), hint=e.hint or hint) from None


def load_dataset_split(path: Path, split: str | None, loaded: LoadedModel, *,
                       limit: int | None = None, types: list[str] | None = None) -> EvalSet:
    """A split of a `ptrm build-data` dataset; rows of types without an installed codec are
    skipped (they could be judged by label, but not by the rules). `types`: only rows of
    these, picked before `limit` counts (the first N rows held none of a later type)."""
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
    adopt_vocab(loaded, ds.vocab)  # an official step_N file reads the dataset's token table
    _same_vocab(loaded, ds.vocab, path)
    if ds.seq_len != loaded.config.seq_len:
        raise PtrmError(f"dataset {path} has sequences of {ds.seq_len} tokens, the model reads "
                        f"{loaded.config.seq_len}")
    s = ds.split(split)
    codecs = _installed()
    rows, row_types, keys, verifiers, skipped, parsed = [], [], [], [], {}, {}
    for i in range(len(s)):
        t = ds.types[int(s.type[i])]
        if types is not None and t not in types:
            continue
        if t not in codecs:
            skipped[t] = "codec not installed"
            continue
        if limit is not None and len(rows) >= limit:
            break
        codec, j = codecs[t], int(s.puzzle[i])
        if j not in parsed:
            where = f"{path}/{split}/puzzles.jsonl"
            rec = s.puzzles[j] if 0 <= j < len(s.puzzles) else None
            if not isinstance(rec, dict) or not isinstance(rec.get("text"), str):
                raise PtrmError(
                    f"{where}: no puzzle text on line {j + 1}, which row {i} of {split}/"
                    f"puzzle.npy refers to ({len(s.puzzles)} lines): `ptrm eval` rebuilds "
                    "each puzzle from it to judge the answers",
                    hint="`ptrm build-data` writes one line per base puzzle "
                         "(docs/DATASET_FORMAT.md); a dataset without them trains, but "
                         "cannot be evaluated by the rules")
            # through the registry: a parse that breaks is named, odd text said to be the file's
            # (at its own line: the codec counts lines within the text)
            try:
                parsed[j] = registry.parse(rec["text"], codec=t)[1].puzzle
            except ParseError as e:  # the dataset's fault, not the user's input: how to mend it
                raise ParseError(str(e), source=where, line=j + 1,
                                 hint=f"build-data wrote this line as a {t} puzzle; a dataset "
                                      "edited by hand or built by another version: build it "
                                      "again with `ptrm build-data`") from None
        puzzle = parsed[j]
        tf = int(s.transform[i])
        if tf:
            with registry.contract(codec, "transform"):
                puzzle, _ = codec.transform(puzzle, None, tf)
        rows.append(i)
        row_types.append(t)
        keys.append(str(s.puzzles[j].get("key", j)) + (f"#t{tf}" if tf else ""))
        verifiers.append(Verifier(codec, puzzle, family_for(codec, loaded)))
    # said as `EvalSet.only` says it; a type held but read by no codec is said below
    if not rows and types is not None and len(s) and not skipped:
        held = sorted(ds.types[int(t)] for t in np.unique(np.asarray(s.type)))
        raise PtrmError(f"dataset {path} split {split!r}: no {', '.join(types)} puzzles to "
                        f"evaluate (it holds {', '.join(held)})",
                        hint="--types with some of those, or leave it out")
    if not rows:
        raise PtrmError(f"dataset {path} split {split!r}: nothing to evaluate"
                        + (f" (no installed codec reads its type(s) {', '.join(skipped)}: "
                           "the rules judge each answer)" if skipped else
                           " (the split holds no puzzles)"),
                        hint="install the plugin of that type (`ptrm codecs` lists the "
                             "installed ones; docs/PLUGINS.md)" if skipped else
                        _empty_split_hint(ds, split))
    idx = np.asarray(rows)
    ids = None
    if loaded.config.puzzle_emb_ndim > 0:
        ids = torch.as_tensor(np.asarray(s.puzzle_id)[idx].astype(np.int64))
        if int(ids.max()) >= loaded.config.num_puzzle_identifiers:
            raise PtrmError(f"dataset {path} uses puzzle ids up to {int(ids.max())}, the model "
                            f"knows {loaded.config.num_puzzle_identifiers}")

    return EvalSet(split, f"{report_path(path)}/{split}",  # absolute, as the report records it
                   torch.as_tensor(np.asarray(s.inputs)[idx].astype(np.int64)),
                   torch.as_tensor(np.asarray(s.labels)[idx].astype(np.int64)),
                   row_types, keys, verifiers, ids, skipped)


def _empty_split_hint(ds, split: str) -> str:
    """Where puzzles to evaluate are: the dataset's other splits that hold some, and how a
    validation split gets puzzles (build-data puts none there with --val-per-type 0)."""
    others = [n for n, rows in ds.meta["splits"].items() if n != split and rows]
    where = f"evaluate another split ({', '.join(others)})" if others else ""
    rebuild = "rebuild it with build-data's --val-per-type N" if split == "val" else ""
    return "; or ".join(x for x in (where, rebuild) if x) or \
        "this dataset holds no puzzles: build it again from its sources"


def resolve_split(split: str, data: str | None, loaded: LoadedModel, *,
                  limit: int | None = None, sample: int | None = None,
                  types: list[str] | None = None, min_difficulty: int | None = None) -> EvalSet:
    """--split golden | FILE.jsonl (PPBench or ptrm records) | another source file
    (Sudoku-Extreme CSV, ...) | DATASET_DIR | NAME (with --data DIR); only `types` (before any
    puzzle is encoded, so other types' codecs need not fit the model), then a seeded `sample`
    of what is left (`sample_rows`). `min_difficulty`: source files with ratings."""
    if isinstance(types, str) or (types is not None and not all(isinstance(t, str)
                                                                 for t in types)):
        # a bare "sudoku" was read letter by letter: "no s, u, d, o, k, u puzzles"
        raise UsageError(f"types must be a list of type names, e.g. ['sudoku'] (got "
                         f"{types!r})")
    check_counts(limit=limit, sample=sample)
    p = Path(split).expanduser()
    if min_difficulty is not None and not (data is None and p.is_file()):
        raise PtrmError("--min-difficulty applies to a rated source file (a Sudoku-Extreme "
                        "or Maze-Hard CSV given as --split FILE)")
    if split == "golden" and data is None:
        ev = load_ppbench_jsonl(golden_path(), loaded, name="golden", limit=limit, types=types)
    elif data is None and p.is_file():
        from . import sources

        reader = _file_reader(p)
        if reader.kind != sources.JsonlRecords.kind:
            return load_source_file(p, loaded, limit=limit, sample=sample, types=types,
                                    min_difficulty=min_difficulty)
        # sampled after decoding (a JSONL split is small): the same draw as the golden set's;
        # the golden file given by its path (without the wheel) is the golden set all the same
        name = "golden" if p.name == Path(GOLDEN_IN_WHEEL).name else p.stem
        ev = load_source_file(p, loaded, name=name, limit=limit, types=types,
                              min_difficulty=min_difficulty, reader=reader)
    else:
        if data is None and p.is_dir():
            ev = load_dataset_split(p, None, loaded, limit=limit, types=types)
        elif data is not None:
            d = Path(data).expanduser()
            if not d.is_dir():
                raise PtrmError(f"--data {data}: no such dataset folder")
            ev = load_dataset_split(d, split, loaded, limit=limit, types=types)
        elif p.exists():  # /dev/null, a pipe: not something a split is read from
            raise PtrmError(f"--split {split}: not a regular file or a dataset folder")
        elif "/" in split or "\\" in split or p.suffix:  # meant as a path
            raise PtrmError(f"--split {split}: no such file (not golden, a file or a dataset "
                            "folder)")
        else:
            raise PtrmError(f"--split {split}: not golden, a JSONL file or a dataset folder",
                            hint=f"for a named split, give its dataset: --split {split} --data DIR")
        if types is not None:
            ev = ev.only(types)
    return ev if sample is None else ev.sample(sample)


def _file_reader(path: Path):
    """build-data's reader for --split FILE (sources.reader_for). A file none recognises is
    read as JSONL (a PPBench file under another name). A .csv, or a file whose first line is
    a Sudoku-Extreme row (4 fields, not JSON), that no reader takes is missing its header:
    say so rather than report every line as bad JSON."""
    from . import sources

    jsonl = sources.READERS[sources.JsonlRecords.kind]
    try:
        reader = sources.reader_for(path)
        with open(path, encoding="utf-8-sig", errors="replace") as f:
            first = f.readline().strip()
    except OSError as e:
        raise PtrmError(f"cannot read {path}: {e.strerror or e}") from None
    csv_row = first[:1] not in "{[" and len(first.split(",")) == len(sources.SUDOKU_CSV_HEADER)
    if reader not in (None, jsonl):
        return reader
    if path.suffix.lower() == ".csv" or csv_row:
        header = ",".join(sources.SUDOKU_CSV_HEADER)
        raise PtrmError(f"{path}: the CSV header {header} is missing (a Sudoku-Extreme or "
                        f"Maze-Hard CSV starts with it; line 1 is {first[:40]!r})")
    return jsonl
