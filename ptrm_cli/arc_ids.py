"""Puzzle identifier tables: which row of an ARC model's puzzle-embedding table is which task.

TRM's ARC models learn one embedding per (augmented) task version, so a model can only solve a
task whose versions were in its training build, and only if we know which row is which. That
mapping is a list of names, index = puzzle identifier, 0 = "<blank>": the `identifiers.json`
that TRM's dataset/build_arc_dataset.py writes and that `ptrm build-data --family arc` writes
too. Both spell a name the same way: the Kaggle task id for the original, `<task>|||t<t>|||<map>`
for a version (dihedral t, colour map as 10 digits; `ptrm_codecs.arc.aug_name`). Two
differences, both outside what a lookup by task id sees: TRM gives a task id that occurs in two
subsets one identifier, ours names the second `<subset>:<task>`; TRM's `puzzle_identifiers_start`
> 1 leaves more "<blank>" entries, which name no task.

Where a checkpoint's table comes from, first found (`table_for`):
  1. a file given explicitly (--identifiers);
  2. `identifiers.json` inside our checkpoint directory (`ptrm convert --identifiers` writes it);
  3. for an official `step_N` file: `identifiers.json` next to it, else in a dataset folder its
     run's all_config.yaml names (`data_paths`, relative to where that run started);
  4. for a checkpoint from `ptrm train` without its own copy (`ptrm train` writes one into
     each checkpoint, found by step 2): its training dataset's table, if that dataset is still
     where it was and unchanged (same fingerprint as recorded at training time);
  5. (eval) the evaluated dataset's table, if the checkpoint's rows match its count.
A table is always checked against the model: one name per embedding row.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .arc_data import BLANK
from .engine.checkpoint import IDENTIFIERS as FILE, placeholder_vocab
from .errors import PtrmError
from .paths import report_path

SEP = "|||"  # TRM's PuzzleIdSeparator (ptrm_codecs.arc.SEP, without importing the codec here)


@dataclass
class IdTable:
    names: list[str]
    source: str  # where it was read, for messages and reports
    _by_task: dict | None = field(default=None, repr=False)

    def __len__(self) -> int:
        return len(self.names)

    def views(self, task: str) -> list[tuple[int, str]]:
        """(identifier, name) of every version of `task` in the table, in table order (TRM's:
        the original, then its augmentations in the order they were drawn)."""
        return list(self._index().get(task, []))

    def tasks(self) -> list[str]:
        return list(self._index())

    def _index(self) -> dict:
        # built once: an official ARC-AGI table has ~1M names
        if self._by_task is None:
            by_task: dict[str, list] = {}
            for i, name in enumerate(self.names):
                if name != BLANK:
                    by_task.setdefault(base_name(name), []).append((i, name))
            self._by_task = by_task
        return self._by_task


def base_name(name: str) -> str:
    """The task a version belongs to: everything before `|||t<t>|||<map>` (the name itself for
    an original). Only the shape is read here; the suffix is checked where it is used."""
    parts = name.rsplit(SEP, 2)
    return parts[0] if len(parts) == 3 else name


def read_table(path: str | Path, rows: int | None = None) -> IdTable:
    """An identifiers.json (a JSON list of names, "<blank>" first); `rows`: the model's table
    size, which the list must match."""
    path = Path(path).expanduser()
    try:
        names = json.loads(path.read_text())
    except FileNotFoundError:
        raise PtrmError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PtrmError(f"{path} is not a readable identifiers.json: {e}") from None
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise PtrmError(f"{path}: expected a JSON list of puzzle names (index = puzzle "
                        f"identifier, {BLANK!r} first), as TRM's build_arc_dataset.py writes")
    if names[0] != BLANK:
        raise PtrmError(f"{path}: identifier 0 is {names[0]!r}, expected {BLANK!r}")

    # absolute, as reports record paths (eval's, solve's --json, convert's meta): they are read
    # later from elsewhere, where `--identifiers ids.json` as typed named nothing
    table = IdTable(names, report_path(path))
    if rows is not None:
        check_rows(table, rows)
    return table


def check_rows(table: IdTable, rows: int) -> None:
    if len(table) != rows:
        raise PtrmError(f"{table.source} names {len(table):,} puzzle identifiers, but the "
                        f"model's puzzle-embedding table has {rows:,} rows",
                        hint="use the identifiers.json of the dataset the model was trained on")


def has_table(cfg) -> bool:
    """Whether a model has per-puzzle embeddings to look up (TRM's ARC models do; sudoku and maze
    models have one shared row, the blank)."""
    return cfg.puzzle_emb_ndim > 0 and cfg.num_puzzle_identifiers > 1


def table_for(loaded, explicit: str | Path | None = None, *, dataset: Path | None = None
              ) -> IdTable:
    """The identifier table of a loaded checkpoint (solver.LoadedModel); see the module doc for
    the search order. A PtrmError says what was looked at when nothing fits."""
    rows = loaded.config.num_puzzle_identifiers
    vocab = getattr(loaded, "vocab", None)
    # a maze or sudoku model on an ARC dataset was told that the dataset's table "names 16
    # puzzle identifiers, but the model's puzzle-embedding table has 1 rows": the vocabulary
    # is what does not fit, and says so before any table is looked for (an official step
    # file's placeholder table, `trm-v12`, is not a family: the data gives it one)
    if vocab is not None and vocab.family != "arc" and vocab != placeholder_vocab(len(vocab)):
        raise PtrmError(f"checkpoint {loaded.path} is a {vocab.family!r} model, not an ARC one "
                        "(vocabulary 'arc'): it has no ARC puzzle identifiers",
                        hint="pass an ARC checkpoint (ptrm train on a --family arc dataset, "
                             "or ptrm convert step_N --family arc)")
    if explicit is not None:
        return read_table(explicit, rows)
    table = own_table(loaded)
    if table is not None:
        return table
    mismatch = ""
    if dataset is not None and (Path(dataset) / FILE).is_file():
        table = read_table(Path(dataset) / FILE)
        if len(table) == rows:  # step 5: only a table that fits the model
            table.source += " (the evaluated dataset's; the checkpoint names no table)"
            return table
        mismatch = f", which names {len(table):,}"
    if rows <= 1:
        raise PtrmError(f"checkpoint {loaded.path} has no per-task puzzle embeddings "
                        f"({rows} identifier, the blank), so it has no views of ARC tasks to "
                        "vote over", hint="ARC evaluation needs a TRM ARC model trained on "
                                          "its tasks' identifiers; `ptrm solve` runs one test "
                                          "input with this model")
    found = _candidates(loaded) + ([Path(dataset) / FILE] if dataset is not None else [])
    looked = ", ".join(str(p) for p in found) or "nothing"
    raise PtrmError(f"checkpoint {loaded.path} has {rows:,} puzzle identifiers but no table "
                    f"naming them (looked at: {looked}{mismatch})",
                    hint="pass --identifiers PATH: the identifiers.json of the dataset it was "
                         "trained on (or attach it once: ptrm convert step_N --family arc "
                         "--identifiers PATH --out DIR)")


def own_table(loaded) -> IdTable | None:
    """The checkpoint's own table (search steps 2-4), None when there is no such file."""
    for path in _candidates(loaded):
        if path.is_file():
            return read_table(path, loaded.config.num_puzzle_identifiers)
    return None


def _candidates(loaded) -> list[Path]:
    """Files that would hold this checkpoint's own table, most specific first."""
    path, meta = Path(loaded.path), loaded.meta
    out = []
    if path.is_dir():
        out.append(path / FILE)
    elif path.suffix == ".safetensors":
        out.append(path.parent / FILE)
    if meta.get("source") == "official-trm":
        step = Path(meta.get("imported_from") or path)
        out.append(step.parent / FILE)
        out += [Path(d) / FILE for d in meta.get("data_paths") or []]
    if meta.get("dataset") and _fingerprint(Path(meta["dataset"])) == \
            meta.get("dataset_fingerprint"):
        out.append(Path(meta["dataset"]) / FILE)
    return list(dict.fromkeys(out))


def _fingerprint(dataset: Path) -> str | None:
    """engine/train_checkpoint.py's dataset fingerprint (sha256 of meta.json, 16 hex digits), which ptrm
    train records in every checkpoint: a rebuilt dataset has other identifiers."""
    try:
        return hashlib.sha256((dataset / "meta.json").read_bytes()).hexdigest()[:16]
    except OSError:
        return None
