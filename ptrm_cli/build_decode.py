"""Decode: one source record -> one `Entry` (puzzle, full solution, identity), in a worker.

`decode_task` runs in worker processes (build_pool.pmap), so it takes and returns plain
picklable tuples and never raises: bad data comes back as a drop reason and a message.

Identity lives here because it is computed while decoding, once per puzzle: the canonical key
is the puzzle's identity up to the symmetries the augmentation applies (docs/BUILD_DATA.md,
"Identity"), and it drives golden exclusion, de-duplication and the train/val split
(build_split.py) as well as each training puzzle's random draws (build_augment.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import codec as registry
from . import dihedral, sudoku_aug
from . import sources as src
from .codec import Codec, Family, Puzzle, Solution
from .errors import ParseError, PtrmError
from .sudoku_solver import SolveInterrupted


@dataclass
class Entry:
    seq: int          # position in reading order (file order, then line order)
    fi: int           # source file index
    loc: Any          # line number or entry id
    type: str
    puzzle: Puzzle
    solution: Solution
    canon: str        # canonical key: identity up to the type's symmetries
    text: str         # codec-parsable puzzle text (the puzz.link URL)


def decode_task(task):
    """Worker: one item -> ("ok", Entry fields) | ("drop", reason, message) | ("size", r, c)."""
    item, type_name, want, family_name, augmentation = task
    codec = None
    try:
        codec = registry.get(type_name)
        puzzle, solution = src.READERS[item.reader].decode(item, codec)
        if want is not None and (puzzle.rows, puzzle.cols) != want:
            return ("size", puzzle.rows, puzzle.cols)
        problem = src.label_problem(codec, puzzle, solution)
        if problem:
            return ("drop", *problem)
        family = codec.family(family_name)
        try:
            encoded(codec, puzzle, solution, family)
        except registry.CodecBug:
            raise
        except PtrmError as e:
            return ("drop", "does not fit", str(e))
        return ("ok", puzzle, solution, canonical_key(codec, puzzle, augmentation),
                puzzle_text(codec, puzzle))
    except src.Drop as d:
        return ("drop", d.reason, str(d))
    except registry.CodecBug as e:  # not the record's fault, but one message, not the build's end
        return ("drop", "decode error", str(e))
    except (ParseError, ValueError, KeyError, IndexError, TypeError) as e:
        return ("drop", "malformed", str(e) or type(e).__name__)
    except SolveInterrupted:  # Ctrl-C in a pool worker: the build stops, not this record
        raise
    except Exception as e:  # a codec bug must not take the build down: report and go on
        bug = None if codec is None or isinstance(e, PtrmError) else codec_failure(codec, e)
        return ("drop", "decode error", str(bug) if bug else f"{type(e).__name__}: {e}")


def encoded(codec: Codec, puzzle: Puzzle, solution: Solution, family: Family) -> tuple:
    """(input tokens, label tokens) of a decoded record, each held to the contract under the
    name of the method that made it; a PtrmError is the codec's "does not fit"."""
    with registry.contract(codec, "encode"):
        x = codec.encode(puzzle, None, family)
    with registry.contract(codec, "encode_label"):
        y = codec.encode_label(puzzle, solution, family)
    return (registry.checked_tokens(codec, x, family),
            registry.checked_tokens(codec, y, family, "encode_label"))


#: the codec methods a record passes through on its way to an Entry (a reader's decode calls
#: from_record or parse; identity calls key, transform, to_url, ...)
_RECORD_METHODS = ("from_record", "parse", "canonical_key", "key", "to_url", "to_pzprv3",
                   "transform")


def codec_failure(codec: Codec, e: Exception) -> registry.CodecBug | None:
    """An exception that is not one odd records cause (the caller lets those pass as the
    record's problem) as the codec's bug, named as `registry.contract` names one, with the
    method it came out of: the innermost frame of its traceback that runs one of the codec's
    methods (ptrm calls them through a source reader and `canonical_key`: a from_record that
    calls parse, a key that calls to_url). None when no such frame is there: not the codec's."""
    names = {}
    for name in _RECORD_METHODS:
        code = getattr(getattr(type(codec), name, None), "__code__", None)
        if code is not None:
            names.setdefault(code, name)
    method, tb = None, e.__traceback__
    while tb is not None:
        method = names.get(tb.tb_frame.f_code, method)
        tb = tb.tb_next
    if method is None:
        return None
    return registry.bug(codec, f"raised {type(e).__name__} in {method}: {e}")


# -- identity ----------------------------------------------------------------------------------

def canonical_key(codec: Codec, puzzle: Puzzle, augmentation: str = "dihedral") -> str:
    """The puzzle's identity for golden exclusion, de-duplication and the train/val split: the
    smallest `codec.key` over the dihedral transforms the codec allows, so a rotated or
    mirrored copy is the same puzzle (it is, for a model trained on all 8 transforms). Sudoku
    also forgets digit names (a relabelled copy is the same puzzle). A codec may define its own
    `canonical_key(puzzle)` and it is used instead. With the sudoku-trm augmentation the model
    sees the whole sudoku group, so the identity forgets all of it (`sudoku_aug.canonical`)."""
    if augmentation == "sudoku-trm":
        if codec.name != "sudoku" or (puzzle.rows, puzzle.cols) != (9, 9):
            raise PtrmError("the sudoku-trm augmentation is for 9x9 sudoku only")
        return "sudoku/9/group/" + sudoku_aug.canonical(puzzle.clues)
    own = getattr(codec, "canonical_key", None)
    if callable(own):
        return str(own(puzzle))
    if codec.name == "sudoku":
        return _sudoku_canonical(puzzle)
    keys = []
    for t in range(dihedral.COUNT):
        try:
            pt, _ = codec.transform(puzzle, None, t)
        except PtrmError:
            continue
        keys.append(codec.key(pt))
    return min(keys) if keys else codec.key(puzzle)


def _sudoku_canonical(puzzle: Puzzle) -> str:
    """Min over the dihedral transforms of the givens, digits renamed 1, 2, ... in order of
    first appearance (row-major): equal for every relabelled, rotated or mirrored copy."""
    n = puzzle.rows
    clues = np.asarray(puzzle.clues)
    best = None
    ts = range(dihedral.COUNT) if n != 6 else (0, 2, 4, 5)  # 3x2 boxes: no quarter turns
    for t in ts:
        flat = dihedral.apply(clues, t).reshape(-1)
        names: dict[int, int] = {}
        s = "".join("." if not v else str(names.setdefault(v, len(names) + 1))
                    for v in flat.tolist())
        if best is None or s < best:
            best = s
    return f"sudoku/{n}/{best}"


def puzzle_text(codec: Codec, puzzle: Puzzle) -> str:
    """Codec-parsable text for puzzles.jsonl: the puzz.link URL, else pzprv3, else the key if
    `parse` reads it back (the dataset's only record of the puzzle that `ptrm eval` rebuilds
    it from); else a CodecBug, which drops the record as a decode error."""
    for fn in (codec.to_url, codec.to_pzprv3):
        try:
            return fn(puzzle)
        except PtrmError:
            continue
    key = codec.key(puzzle)
    try:
        with registry.contract(codec, "parse"):
            back = codec.key(codec.parse(key).puzzle)
    except PtrmError:
        back = None
    if back != key:
        raise registry.CodecBug(
            f"codec {codec.name!r} has no text form that its parse reads back (no to_url, no "
            f"to_pzprv3, and its key {key[:40]!r} does not parse to the same puzzle): a "
            "dataset stores each puzzle as text", hint="give the codec a to_url, or a key "
            "that parse reads (docs/PLUGINS.md, the contract: key)")
    return key
