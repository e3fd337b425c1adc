"""The `ptrm build-data` pipeline: source files -> puzzles -> splits -> augmented tokens ->
a dataset directory (docs/BUILD_DATA.md is the recipe, docs/DATASET_FORMAT.md the format).

    read      every source file through its reader (sources.py); drop other types, types
              without a codec and off-size records before decoding anything
    decode    record -> (puzzle, full solution) with the codec, in worker processes; check the
              solution with the codec's verifier, check that it fits the family's tokens, and
              compute the puzzle's canonical key (its identity up to symmetry)
    split     golden records form the golden split; a pool puzzle whose canonical key is a
              golden one, or one seen before, is dropped; validation samples N per type
              (PPBench paper: 100, 50 for tapa), the rest is train
    augment   each training puzzle -> the original (empty grid, t=0) plus `augment-1` samples:
              a random trajectory prefix of the required moves under a random dihedral
              transform (`--augmentation dihedral`), or TRM's sudoku shuffle: relabelling,
              transpose, band/stack and row/column shuffles of the whole puzzle
              (`--augmentation sudoku-trm`, sudoku_aug.py); validation and golden keep one
              unaugmented row each
    write     engine.data.write_dataset: arrays + puzzles.jsonl + counts.json + meta.json,
              atomically

Everything random comes from `seed`: validation sampling from one generator in a fixed order,
and each training puzzle's samples from a generator keyed by (seed, canonical key), so the
output does not depend on `workers` or on how work is chunked.

This file is the orchestration, `build()`, and what only it needs (option checks, notes,
meta.json, the output folder). Each phase's work lives in its own module:

    build_options.py   BuildOptions, BuildResult, SourceFile, the Ledger, drop REASONS
    build_read.py      source files, types and family; reading and filtering records
    build_decode.py    the decode worker, Entry, and identity (canonical_key)
    build_split.py     golden, de-duplication, validation (or --val-from), --train-puzzles
    build_augment.py   the augmentation workers (dihedral fast path, sudoku-trm), SplitBuilder
    build_pool.py      the ordered process map, the progress bar, default_workers

The names other code uses (`from ptrm_cli import build as B`: B.build, B.BuildOptions, ...)
are imported here, so callers need not know the layout.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from . import __version__, sudoku_aug
from . import build_augment as aug
from . import sources as src
from .atomic import refuse_file
from .build_decode import Entry, canonical_key, decode_task, puzzle_text
from .build_options import (AUGMENTATIONS, DEFAULT_SIZES, DEFAULT_VAL_OVERRIDES,
                            DEFAULT_VAL_PER_TYPE, MAX_MESSAGES, PPBENCH_TYPES, REASONS, SPLITS,
                            BuildError, BuildOptions, BuildResult, Ledger, SourceFile,
                            default_sizes)
from .build_pool import Progress, default_workers, pmap
from .build_read import collect_sources, default_types, read_records, select_family
from .build_split import read_dataset_keys, read_val_keys, split_puzzles
from .engine.data import Split, write_dataset
from .errors import PtrmError

__all__ = ["AUGMENTATIONS", "DEFAULT_SIZES", "DEFAULT_VAL_OVERRIDES", "DEFAULT_VAL_PER_TYPE",
           "MAX_MESSAGES", "PPBENCH_TYPES", "REASONS", "SPLITS", "BuildError", "BuildOptions",
           "BuildResult", "Entry", "Ledger", "PtrmError", "SourceFile", "build",
           "canonical_key", "check_out", "collect_sources", "default_types", "default_workers",
           "puzzle_text", "read_dataset_keys", "read_val_keys", "select_family"]


def build(sources: Iterable[str | Path], out: str | Path | None,
          options: BuildOptions | None = None) -> BuildResult:
    """Run the whole pipeline and write the dataset to `out` (None: count only, write nothing).
    Raises `BuildError` (carrying the result) when no puzzle survives."""
    opts = options or BuildOptions()
    if opts.augment < 1:
        raise PtrmError(f"--augment must be at least 1 (the original example), not "
                        f"{opts.augment}", hint="--augment 1 keeps the originals only")
    if opts.val_pool not in ("all-sizes", "kept"):
        raise PtrmError(f"--val-pool must be all-sizes or kept, not {opts.val_pool!r}",
                        hint="all-sizes is the paper's order; kept takes exactly N per type")
    if opts.augmentation not in AUGMENTATIONS:
        raise PtrmError(f"--augmentation must be {' or '.join(AUGMENTATIONS)}, "
                        f"not {opts.augmentation!r}",
                        hint="; ".join(f"{k}: {v}" for k, v in AUGMENTATIONS.items()))
    if opts.train_puzzles is not None and opts.train_puzzles < 0:
        raise PtrmError(f"--train-puzzles must be 0 or more, not {opts.train_puzzles}",
                        hint="leave it out to keep every training puzzle")
    for name, n in (("--limit", opts.limit), ("--subsample", opts.subsample)):
        if n is not None and n < 1:  # 0 read no record, then blamed the sources for it
            raise PtrmError(f"{name} must be 1 or more, not {n}",
                            hint=f"{name} N reads N records of each non-golden file; leave it "
                                 "out to read them all")
    if opts.val_keys and (both := opts.val_keys & opts.exclude_keys):  # said before reading,
        # not as validation puzzles "not among the sources" after decoding
        raise PtrmError(f"--val-from and --exclude share {len(both)} puzzle(s): a validation "
                        "puzzle cannot also be excluded",
                        hint="leave the --val-from dataset out of --exclude")
    out = Path(out) if out is not None else None
    if out is not None:
        check_out(out)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    sources = list(sources)
    files = collect_sources(sources, opts.golden)
    if not files:  # only folders were given (a file is read whatever its name)
        raise PtrmError(f"no source files in {', '.join(map(str, sources)) or 'no source'}: a "
                        f"folder is read for its {', '.join(sorted(src.suffixes()))} files, "
                        "not recursively", hint="pass PPBench JSONL, janko JSON, sudoku .txt "
                        "or HRM .csv files, or the folders holding them")
    types_chosen = opts.types is not None
    if not types_chosen:
        opts = replace(opts, types=default_types(opts.family))
    types = list(dict.fromkeys(src.resolve_type(t) for t in opts.types))
    codecs, family = select_family(types, opts.family)
    if opts.sizes is None or "*" not in opts.sizes:  # a type --sizes leaves unnamed keeps
        # its default size: `--sizes sudoku=9x9` let every other type in at any size, silently
        opts = replace(opts, sizes={**default_sizes(family), **(opts.sizes or {})})
    if opts.augmentation == "sudoku-trm" and (types != ["sudoku"]
                                              or opts.size_of("sudoku") != (9, 9)):
        raise PtrmError("--augmentation sudoku-trm is TRM's 9x9 sudoku shuffle: it needs "
                        "--types sudoku and the size sudoku=9x9",
                        hint="e.g. --family sudoku-native (its only type is sudoku)")
    ledger = Ledger(files)
    notes: list[str] = []

    with Progress(opts.progress) as progress:
        # -- read ------------------------------------------------------------------------------
        tick = progress.task("read", None)  # records, as they stream in
        records = read_records(files, types, codecs, opts, ledger, tick)
        progress.close_open_task()
        timings["read"] = time.perf_counter() - t0

        # -- decode ----------------------------------------------------------------------------
        t1 = time.perf_counter()
        fam_name = family.name if family else None
        tasks = [(item, t, opts.size_of(t), fam_name, opts.augmentation)
                 for _, _, item, t in records.pending]
        decoded: list[Entry] = []
        tick = progress.task("decode", len(tasks))
        for (s, fi, item, t), res in zip(records.pending,
                                         pmap(decode_task, tasks, opts.workers, tick)):
            if res[0] == "ok":
                _, puzzle, solution, canon, text = res
                decoded.append(Entry(s, fi, item.loc, t, puzzle, solution, canon, text))
            elif res[0] == "size":
                ledger.drop(fi, t, "wrong size")
                if files[fi].role != "golden":
                    records.offsize.append((s, t, item.ident))
            else:
                ledger.drop(fi, t, res[1], item.loc, res[2])
        timings["decode"] = time.perf_counter() - t1
        timings["decode_puzzles"] = len(tasks)

        records.pending.clear()  # the raw records can go now
        del tasks

        # -- split -----------------------------------------------------------------------------
        kept_types = [t for t in types if t in codecs]
        splits_e = split_puzzles(decoded, records.offsize, records.golden_idents, files, types,
                                 opts, ledger)

        # -- augment ---------------------------------------------------------------------------
        t2 = time.perf_counter()
        built: dict[str, Split] = {}
        puzzles_count: dict[str, dict[str, int]] = {}
        for name in SPLITS:
            entries = splits_e[name]
            n_ex = opts.augment if name == "train" else 1
            tasks = [(e.type, e.puzzle, e.solution, e.canon, n_ex, opts.seed, fam_name)
                     for e in entries]
            tick = progress.task(name, len(tasks))
            split = aug.SplitBuilder(len(tasks) * n_ex, family.seq_len if family else 1)
            kept_n: Counter = Counter()
            # looked up on the module at call time, so a test can replace a task
            fn = (aug.augment_sudoku_task if opts.augmentation == "sudoku-trm"
                  else aug.augment_task)
            for e, res in zip(entries, pmap(fn, tasks, opts.workers, tick)):
                if isinstance(res, str):
                    ledger.drop(e.fi, e.type, "augment error", e.loc, res)
                    continue
                split.add(*res, kept_types.index(e.type), aug.puzzle_record(e, files))
                kept_n[e.type] += 1
                ledger.keep(e.fi, name, e.type)
            built[name] = split.done()
            puzzles_count[name] = {t: kept_n.get(t, 0) for t in kept_types}
            if name == "train":
                timings["augment"] = time.perf_counter() - t2
                timings["augment_puzzles"] = len(tasks)

    counts = {name: {t: int((s.type == i).sum()) for i, t in enumerate(kept_types)}
              for name, s in built.items()}
    golden_files = [f.name for f in files if f.role == "golden"]
    if golden_files and not sum(puzzles_count["golden"].values()):
        notes.append(f"the golden file(s) {', '.join(golden_files)} gave no golden puzzle of "
                     "these types (the table says why their records were dropped): nothing was "
                     "kept out of train/val by them")
    if records.ppbench_pool and not any(f.role == "golden" for f in files):
        notes.append("PPBench records were read without a golden file, so golden puzzles among "
                     "them are not kept out of train/val: pass --golden golden_300.jsonl"
                     + _bundled_golden_hint())
    notes += _reading_notes(opts, kept_types, puzzles_count, ledger.dropped_table(),
                            types_chosen=types_chosen, family=fam_name)
    for t in kept_types:  # (--train-puzzles 0 asks for no training puzzles: said below)
        if puzzles_count["train"].get(t, 0) == 0 and puzzles_count["val"].get(t, 0) > 0 \
                and opts.train_puzzles != 0:
            notes.append(f"validation took every {t} puzzle ({puzzles_count['val'][t]}); train "
                         f"has none (lower --val-per-type)")
    notes += _empty_train_note(opts, puzzles_count)
    result = BuildResult(out, kept_types, fam_name or "", counts, puzzles_count,
                         [f.summary() for f in files], ledger.dropped_table(),
                         ledger.messages(), notes, timings)
    total = sum(len(s) for s in built.values())
    if family is None or total == 0:
        missing = [t for t in types if t not in codecs]
        read = sum(src.get("records", 0) for src in result.sources)
        left_out = _readable_other_types(ledger.dropped_table())
        hint = (f"no codec installed for: {', '.join(missing)}" if missing else
                _no_records_hint(files) if read == 0 else
                _left_out_hint(left_out, fam_name) if left_out else
                _off_size_hint(ledger.dropped_table()) or
                "see the dropped table: every record was filtered out")
        # out: None, as in a dry run (an earlier build there is not what this one wrote)
        raise BuildError("no puzzle survived the filters: nothing to write",
                         replace(result, out=None), hint=hint)
    if out is not None:
        t3 = time.perf_counter()
        meta = {"seed": opts.seed,
                "builder": {"tool": "ptrm build-data", "version": __version__,
                            "options": opts.recorded()},
                "sources": result.sources,
                "puzzles": puzzles_count,
                "dropped": result.dropped,
                "dropped_messages": result.messages,
                "num_puzzle_ids": 1,
                **_identity_and_augmentation(opts)}
        write_dataset(out, vocab=family.vocab, seq_len=family.seq_len, types=kept_types,
                      splits=built, meta=meta)
        timings["write"] = time.perf_counter() - t3
    timings["total"] = time.perf_counter() - t0
    return result


# -- what only build() needs -------------------------------------------------------------------

def _empty_train_note(opts: BuildOptions, puzzles: dict[str, dict[str, int]]) -> list[str]:
    """A build with puzzles but an empty train split is written (a set to evaluate or select
    on, as tdoku-tune is), but `ptrm train` refuses it: said now, not at the first run."""
    if sum(puzzles["train"].values()) or not sum(puzzles["val"].values()) + \
            sum(puzzles["golden"].values()):
        return []
    why = "--train-puzzles 0: " if opts.train_puzzles == 0 else ""
    return [f"{why}the train split is empty, so `ptrm train` refuses this dataset as its "
            "training data; `ptrm eval` reads its other splits, and a run can select on its "
            "val split (data.val_path)"]


def _reading_notes(opts: BuildOptions, types: list[str], puzzles: dict[str, dict[str, int]],
                   dropped: dict[str, dict[str, int]], *, types_chosen: bool,
                   family: str | None = None) -> list[str]:
    """What the options did that the tables do not show: the Sources table's `records` is
    what was read, not what a file holds; a validation count below --val-per-type looked like
    the option not working; a plugin's records left out by the default --types looked like
    the plugin not working."""
    notes = []
    # (with --family the default types are that family's: any other has no tokens there)
    left_out = _readable_other_types(dropped) if not (types_chosen or opts.family) else {}
    for t, n in left_out.items():
        own = _other_family(t, family)
        keep = (f"--types {','.join(opts.types)},{t} keeps them" if own is None else
                f"its codec's token family is {own}, and a dataset holds one family: "
                f"--family {own} builds them on their own")
        notes.append(f"{n:,} {t} record(s) were left out: the default --types is "
                     f"{','.join(opts.types)}, and an installed codec reads {t} ({keep})")
    if opts.limit is not None:
        notes.append(f"--limit {opts.limit:,}: each non-golden file was read up to its first "
                     f"{opts.limit:,} records (the Sources table's `records`)")
    if opts.subsample is not None:
        notes.append(f"--subsample {opts.subsample:,}: a seeded random {opts.subsample:,} "
                     "records of each non-golden file were read (the Sources table's "
                     "`records`)")
    if opts.val_keys is None and opts.val_pool == "all-sizes":
        capped = dropped.get("train cap", {})
        short = [f"{t} {puzzles['val'][t]} of {opts.val_count(t)}" for t in types
                 if puzzles["val"][t] < opts.val_count(t)
                 and puzzles["train"][t] + capped.get(t, 0) > 0]  # not: all of them is val
        if short:
            notes.append(f"validation is short of the number asked for ({', '.join(short)}): "
                         "--val-pool all-sizes draws among every record of a type and drops "
                         "the off-size ones drawn (the paper's order); --val-pool kept takes "
                         "exactly that many")
    return notes


def _no_records_hint(files: list[SourceFile]) -> str:
    """Why nothing was read: files no reader knows (ARC's challenge files among them, which
    only --family arc reads: they were told "a file with only its header?"), else empty ones."""
    unknown = [f.name for f in files if f.kind is None]
    if len(unknown) < len(files):
        return "the sources hold no records (a file with only its header?)"
    if any(name.endswith("_challenges.json") for name in unknown):
        return "ARC challenge files build with --family arc (TRM's ARC recipe, docs/MAZE_ARC.md)"
    shown = ", ".join(unknown[:3]) + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else "")
    return (f"no reader recognises {shown}: docs/BUILD_DATA.md, \"Sources\", lists the file "
            "kinds")


def _other_family(type_name: str, family: str | None) -> str | None:
    """The token family to build `type_name` in when its codec has no tokens in `family` (None
    when it has): adding maze to the PPBench --types, as the advice once said, is refused
    ("types do not share a token family"), so the advice names the family instead."""
    from . import codec as registry

    codec = registry.registered()[type_name].codec
    names = [f.name for f in codec.families]
    return None if family is None or family in names else codec.family().name


def _left_out_hint(left_out: dict[str, int], family: str | None) -> str:
    """The hint when nothing survived and --types left out readable types: add those of this
    build's family to --types; build any other family's on its own, with --family."""
    same = [t for t in left_out if _other_family(t, family) is None]
    parts = [f"--types left out {', '.join(same)}, which an installed codec reads: add "
             f"{'it' if len(same) == 1 else 'them'} to --types"] if same else []
    parts += [f"--types left out {t}, whose codec's token family is {own}: --family {own} "
              "builds it (a dataset holds one family)"
              for t in left_out if (own := _other_family(t, family)) is not None]
    return "; ".join(parts)


def _off_size_hint(dropped: dict[str, dict[str, int]]) -> str | None:
    """The hint when nothing survived and records were dropped as off-size: the option that
    keeps them (--sizes), not only "see the dropped table", whose row the user must decode."""
    off = dropped.get("wrong size")
    if not off:
        return None
    types = sorted(off)
    return (f"{', '.join(types)} records were dropped as off-size: --sizes keeps other sizes, "
            f"e.g. --sizes {types[0]}=any (every size) or {types[0]}=ROWSxCOLS (one size)")


def _readable_other_types(dropped: dict[str, dict[str, int]]) -> dict[str, int]:
    """The types dropped as "other type" (not in --types) that an installed codec reads, with
    their counts: a plugin's records dropped so looked like the plugin not working."""
    from . import codec as registry

    installed = registry.registered()
    return {t: n for t, n in dropped.get("other type", {}).items() if t in installed}


def _identity_and_augmentation(opts: BuildOptions) -> dict:
    """meta.json's one-line statements of the identity and augmentation rules."""
    if opts.augmentation == "sudoku-trm":
        return {"identity": "canonical key: the smallest row-major string over the whole sudoku "
                            "group (digit relabelling, transpose, band/stack and row/column "
                            "shuffles; sudoku_aug.canonical)",
                "augmentation": {"kind": "sudoku-trm",
                                 "examples_per_train_puzzle": opts.augment,
                                 "row0": "original: transform 0",
                                 "samples": "one uniform random element of the sudoku group "
                                            "each, applied to puzzle and solution (TRM's "
                                            f"shuffle_sudoku); transform {sudoku_aug.TRANSFORM_ID}",
                                 "val_golden": "one unaugmented row per puzzle"}}
    return {"identity": "canonical key: min codec.key over the dihedral transforms "
                        "(sudoku: digits relabelled in order of first appearance)",
            "augmentation": {"examples_per_train_puzzle": opts.augment,
                             "row0": "original: t=0, empty grid",
                             "samples": "t uniform over the allowed dihedral transforms; "
                                        "k uniform in [1, R-1] required moves, row-major",
                             "val_golden": "one unaugmented row per puzzle"}}


def _bundled_golden_hint() -> str:
    """Where the ppbench wheel keeps its golden file, if it is installed."""
    try:
        import importlib.util
        spec = importlib.util.find_spec("ppbench")
    except (ImportError, ValueError):
        return ""
    for loc in (spec.submodule_search_locations or []) if spec else []:
        p = Path(loc) / "bundled" / "golden_300.jsonl"
        if p.is_file():
            return f" (the installed ppbench wheel has one: {p})"
    return ""


def check_out(out: Path) -> None:
    """Refuse to replace anything but a ptrm dataset (the write replaces the folder whole)."""
    if Path(out).name in ("", ".", ".."):  # the folder the user is in or above it: the swap
        # would replace it from under them (it was a ValueError, after the whole build)
        raise PtrmError(f"--out {out}: name the dataset folder, not '.', '..' or '/'",
                        hint="e.g. --out ../NAME to rebuild the dataset you are in")
    refuse_file(out, hint="name a folder: the dataset is written as one")
    if out.is_dir() and any(out.iterdir()) and not (out / "meta.json").is_file():
        raise PtrmError(f"--out {out} exists and is not a ptrm dataset: refusing to replace it",
                        hint="pick a new folder, or an earlier build-data output to rebuild")
