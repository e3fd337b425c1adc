"""Read: source paths -> the records worth decoding, with everything else counted.

    collect_sources   folders and files -> `SourceFile`s, golden ones marked
    default_types     --types when not given
    select_family     the installed codecs of those types and the token family they share
    read_records      every file through its reader (sources.py), --min-difficulty, --limit /
                      --subsample; records of other types, of types without a codec and
                      off-size ones are dropped here, before anything is decoded

Reading is sequential and cheap (decoding is the expensive part, done in workers by
build_decode.py); each record gets its position in reading order (`seq`), which fixes every
later order: de-duplication keeps the first, and validation samples candidates in that order.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import codec as registry
from . import sources as src
from .build_options import PPBENCH_TYPES, BuildOptions, Ledger, SourceFile
from .codec import Codec, Family
from .errors import PtrmError


def collect_sources(paths: Iterable[str | Path],
                    golden: Iterable[str | Path] = ()) -> list[SourceFile]:
    """Folders -> the files inside with a reader's suffix (sorted); files as given. A file named
    `golden*` or passed in `golden` is a golden file. The same file is read once."""
    out: list[SourceFile] = []
    seen: dict[Path, int] = {}
    golden_paths = {Path(g).resolve() for g in golden}

    def add(p: Path, role: str):
        rp = p.resolve()
        if rp in seen:
            if role == "golden":
                out[seen[rp]].role = "golden"
            return
        seen[rp] = len(out)
        out.append(SourceFile(p, p.name, role))

    for g in golden:
        g = Path(g)
        if g.is_dir():
            raise PtrmError(f"--golden {g} is a folder: name the golden file",
                            hint="a source folder's files named golden* are golden anyway")
        if not g.is_file():
            _not_a_file(g, "--golden")
        _refuse_unreadable_golden(g)
        add(g, "golden")
    suff = src.suffixes()
    for p in paths:
        p = Path(p)
        if _is_built_dataset(p):
            raise PtrmError(f"source {p} is a built dataset, not puzzle sources",
                            hint=f"its puzzles are in {p}/<split>/puzzles.jsonl (train, val, "
                                 "golden): pass those files")
        if p.is_dir():
            files = sorted(f for f in p.iterdir() if f.is_file()
                           and any(f.name.lower().endswith(s) for s in suff)
                           and not f.name.startswith("."))
            for f in files:
                add(f, "golden" if f.resolve() in golden_paths
                    or f.name.lower().startswith("golden") or _dataset_golden(f) else "pool")
        elif p.is_file():
            add(p, "golden" if p.resolve() in golden_paths
                or p.name.lower().startswith("golden") or _dataset_golden(p) else "pool")
        else:
            _not_a_file(p, "source")
    # a source is named by its file name (stable wherever the data lie, so a rebuild elsewhere
    # has the same meta.json and fingerprint), by its path as given where two share a name
    names = Counter(f.name for f in out)
    for f in out:
        if names[f.name] > 1:
            f.name = str(f.path)
    return out


def _refuse_unreadable_golden(g: Path) -> None:
    """A --golden file no reader takes would be a dropped row and a note, and the build would
    go on with its puzzles free to land in train and val: the user named it to keep them out.
    (A golden* file found in a source folder stays a note: nobody asked for it by name.)"""
    if src.reader_for(g) is not None:
        return
    meant = [r for r in src.READERS.values()
             if any(g.name.lower().endswith(s) for s in r.suffixes)]
    raise PtrmError(f"--golden {g}: no reader recognises this file (kinds: "
                    f"{', '.join(src.READERS)}), so its puzzles cannot be kept out of train "
                    "and val",
                    hint=f"a {g.suffix} file is read as "
                         + " or ".join(r.description for r in meant) if meant else
                         "a golden file is a puzzle source like any other, with a reader's "
                         f"suffix ({', '.join(sorted(src.suffixes()))}); PPBench's is "
                         "golden_300.jsonl")


def _dataset_golden(p: Path) -> bool:
    """A built dataset's `golden/puzzles.jsonl`: golden, as the file it came from was. The
    hint for a dataset given as a source says to pass its puzzles.jsonl files, and a rebuild
    from all three put every golden puzzle into train and val, silently."""
    folder = p.resolve().parent
    return p.name == "puzzles.jsonl" and folder.name == "golden" and \
        _is_built_dataset(folder.parent)


def _is_built_dataset(folder: Path) -> bool:
    """A folder `ptrm build-data` wrote (its meta.json and counts.json), not one of sources."""
    return folder.is_dir() and (folder / "meta.json").is_file() and \
        (folder / "counts.json").is_file()


def _not_a_file(p: Path, what: str):
    if p.exists():  # a pipe: `<(zcat full_dataset.jsonl.gz)` is one, and it read as missing
        raise PtrmError(f"{what} {p}: not a regular file (a pipe or a device)",
                        hint="a source is read more than once (its hash, then its records): "
                             "save it to a file first")
    raise PtrmError(f"{what} {p}: no such file" + (" or folder" if what == "source" else ""),
                    hint=_where_to_look(p))


def _where_to_look(p: Path) -> str:
    """A missing source's hint: the near names beside it (a typo), or the missing folder."""
    from .errors import did_you_mean

    parent = p.parent
    if parent.is_file():  # `a.jsonl/x`: "does not exist either" said of a file that does
        return f"{parent} is a file, not a folder: check the path"
    if not parent.is_dir():
        return f"the folder {parent} does not exist either: check the path"
    try:
        names = [f.name for f in parent.iterdir()]
    except OSError:  # a folder it may not list (a hint must not end in a traceback)
        names = []
    near = did_you_mean([p.name], names)
    return (f"{parent} holds no {p.name!r}{near}" if near else
            f"{parent} holds no {p.name!r}: check the path (relative paths start at the "
            "folder ptrm runs in)")


def default_types(family: str | None) -> tuple[str, ...]:
    """--types when not given: the six PPBench types, or with --family, every installed type
    that has that family (`--family sudoku-native` -> sudoku)."""
    if family is None:
        return PPBENCH_TYPES
    installed = registry.registered()
    found = tuple(name for name, reg in installed.items()
                  if family in [f.name for f in reg.codec.families])
    if not found:
        raise PtrmError(f"no installed codec has a {family!r} token family",
                        hint="`ptrm codecs` lists the codecs and their families")
    return found


def select_family(types: Iterable[str], family: str | None) -> tuple[dict[str, Codec], Family]:
    """Installed codecs for `types` and the family they share (`family` or the first codec's
    default). Types without a codec are left out (their records are dropped as "no codec")."""
    installed = registry.registered()
    codecs = {t: installed[t].codec for t in types if t in installed}
    if not codecs:
        return codecs, None  # reported by the caller after reading
    first = next(iter(codecs.values()))
    name = family or first.family().name
    fam = None
    for t, c in codecs.items():
        names = [f.name for f in c.families]
        if name not in names:
            raise PtrmError(f"types do not share a token family: {t} has {', '.join(names)}, "
                            f"not {name!r}", hint="pick --types of one family (or --family)")
        f = c.family(name)
        if fam is None:
            fam = f
        elif f.vocab != fam.vocab or f.seq_len != fam.seq_len:
            raise PtrmError(f"codecs disagree on the {name!r} family's vocabulary ({t})")
    return codecs, fam


@dataclass
class Records:
    """What reading hands on to decoding and the split."""
    #: (seq, file index, item, type): the records to decode
    pending: list[tuple[int, int, src.Item, str]] = field(default_factory=list)
    #: (seq, type, ident) of pool records of a kept type but off-size: `--val-pool all-sizes`
    #: samples validation among them too (decoding adds those whose size only it finds out)
    offsize: list[tuple[int, str, str | None]] = field(default_factory=list)
    #: PPBench ids read from golden files: an off-size pool record with one is not a candidate
    golden_idents: set[str] = field(default_factory=set)
    #: PPBench records were read into the pool (the build notes when no golden file was given)
    ppbench_pool: bool = False


def read_records(files: list[SourceFile], types: list[str], codecs: dict[str, Codec],
                 opts: BuildOptions, ledger: Ledger, tick: Callable[[int], None]) -> Records:
    """Every file in order; fills in each `SourceFile`'s hash, kind and record count."""
    rec = Records()
    seq = 0
    for fi, sf in enumerate(files):
        sf.sha256, sf.bytes = _sha256(sf.path)
        reader = src.reader_for(sf.path)
        if reader is None:
            ledger.drop(fi, None, "unrecognised file", None,
                        f"no reader recognises this file (kinds: {', '.join(src.READERS)})")
            continue
        sf.kind = reader.kind

        def report(loc, message, type_name=None, fi=fi, sf=sf):
            sf.records += 1
            ledger.drop(fi, type_name, "malformed", loc, message)

        items = _take(_rated(reader.read(sf.path, report), opts, sf, fi, ledger),
                      opts, sf, fi)
        for item in items:
            sf.records += 1
            seq += 1
            tick(1)
            t = src.resolve_type(item.type)
            golden = sf.role == "golden"
            rec.ppbench_pool |= item.form == "ppbench" and not golden
            if golden and item.ident:
                rec.golden_idents.add(item.ident)
            if t not in types:
                ledger.drop(fi, t, "other type")
                continue
            if t not in codecs:
                ledger.drop(fi, t, "no codec")
                continue
            want = opts.size_of(t)
            if want is not None and item.rows is not None and (item.rows, item.cols) != want:
                ledger.drop(fi, t, "wrong size")
                if not golden:
                    rec.offsize.append((seq, t, item.ident))
                continue
            rec.pending.append((seq, fi, item, t))
    return rec


def _rated(items: Iterator[src.Item], opts: BuildOptions, sf: SourceFile, fi: int,
           ledger: Ledger):
    """--min-difficulty, applied before --limit/--subsample (TRM filters, then subsamples)."""
    if opts.min_difficulty is None:
        yield from items
        return
    for item in items:
        if item.rating is None or item.rating < opts.min_difficulty:
            sf.records += 1
            ledger.drop(fi, src.resolve_type(item.type),
                        "no rating" if item.rating is None else "below min difficulty")
            continue
        yield item


def _take(items: Iterator[src.Item], opts: BuildOptions, sf: SourceFile, fi: int):
    """--limit (the first N records) and --subsample (a seeded random N) of a pool file."""
    if sf.role == "golden" or (opts.limit is None and opts.subsample is None):
        yield from items
        return
    if opts.limit is not None:
        for n, item in enumerate(items):
            if n >= opts.limit:
                return
            yield item
        return
    pool = list(items)
    if opts.subsample >= len(pool):
        yield from pool
        return
    rng = np.random.default_rng([opts.seed & 0xFFFFFFFF, fi, 0x5B5])
    yield from (pool[i] for i in sorted(rng.choice(len(pool), opts.subsample, replace=False)))


def _sha256(path: Path) -> tuple[str, int]:
    h, size = hashlib.sha256(), 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size
