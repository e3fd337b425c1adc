"""The codec plugin contract and the registry that finds codecs through entry points.

A codec owns everything about one puzzle type: reading its text formats, turning a puzzle (and
a solution) into a fixed-length token sequence of its *family*, turning predicted tokens back
into a solution, checking a solution against the rules, the 8 grid symmetries, partial
solutions for trajectory augmentation, and rendering. The engine only ever sees token arrays.

Codecs are found only through the entry-point group ``ptrm.codecs`` (the built-in ones too):

    [project.entry-points."ptrm.codecs"]
    mytype = "my_package.mytype:MyTypeCodec"

The entry point names a `Codec` subclass (or an instance). A plugin that fails to import is
reported by name and skipped; the rest keep working.
"""

from __future__ import annotations

import re
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from typing import Any

import numpy as np

from .errors import CodecNotFound, OtherType, ParseError, PtrmError, did_you_mean
from .vocab import PAD, Vocab

ENTRY_POINT_GROUP = "ptrm.codecs"


# -- data types ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Family:
    """A token-grid shape plus one vocabulary, shared by all codecs that one model serves."""

    name: str
    rows: int
    cols: int
    vocab: Vocab

    @property
    def seq_len(self) -> int:
        return self.rows * self.cols


@dataclass(eq=False)
class Puzzle:
    """One puzzle. `clues` is the codec's own representation (documented by the codec);
    `meta` carries where it came from (source file, PPBench pid, janko id) and is not part of
    its identity — `Codec.key` is."""

    type: str
    rows: int
    cols: int
    clues: Any
    meta: dict = field(default_factory=dict)


@dataclass(eq=False)
class Solution:
    """A (possibly partial) answer: one integer per cell, meaning defined by the codec.
    Every codec documents its values and which one means "nothing entered yet" (`Codec.EMPTY`)."""

    type: str
    grid: np.ndarray  # [rows, cols] int

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Solution) and self.type == other.type
                and self.grid.shape == other.grid.shape and bool((self.grid == other.grid).all()))


#: where a dataset record holds its puzzle (a URL, pzprv3 text or a grid) and its answer: a
#: record with a puzzle and no answer is a puzzle to solve, not a dataset record
PUZZLE_FIELDS = ("url", "text", "puzzlink_url", "puzzle_url")
ANSWER_FIELDS = ("answer", "solution_enc", "solution")


def cell_name(r: int, c: int) -> str:
    """A cell as messages name it: `r1c1` is the top-left cell, rows and columns counted from 1
    as puzzle people count them (the indices in `Violation.cells` and in JSON stay 0-based)."""
    return f"r{r + 1}c{c + 1}"


def size_name(rows: int, cols: int) -> str:
    """A grid size as messages say it: `9x9` when square, else rows first and spelled out,
    `8 rows x 9 columns`: a bare `8x9` reads both ways (`--sizes` and `--size` take ROWSxCOLS,
    a puzz.link URL gives the columns first)."""
    rows, cols = int(rows), int(cols)  # a plugin's numpy sizes too
    if rows == cols:
        return f"{rows}x{cols}"
    return f"{rows} row{'' if rows == 1 else 's'} x {cols} column{'' if cols == 1 else 's'}"


#: cells a message lists before "+N more": enough to find the place on the board, few enough
#: to keep the line short (`Violation.cells`, and so --json, hold them all)
LISTED_CELLS = 3


def cells_named(cells, limit: int = LISTED_CELLS) -> str:
    """Cells as messages list them, in reading order with `cell_name`: `r3c5`, `r3c5, r4c1`,
    or the first `limit` and a count, `r3c5, r4c1, r6c2 +4 more` (never "+1 more": the cell
    itself is as short)."""
    cells = sorted({(int(r), int(c)) for r, c in cells})
    if len(cells) <= limit + 1:
        return ", ".join(cell_name(r, c) for r, c in cells)
    shown = ", ".join(cell_name(r, c) for r, c in cells[:limit])
    return f"{shown} +{len(cells) - limit} more"


_CELL_NAME = re.compile(r"\br(\d+)c(\d+)\b")


def placed(v: "Violation") -> str:
    """`v.message` naming where the rule is broken: as it is when it names one of its cells,
    else with its cells listed after it. The built-in codecs name them themselves; this keeps
    the text output telling the place for a message that does not (a plugin's)."""
    named = {(int(r) - 1, int(c) - 1) for r, c in _CELL_NAME.findall(v.message)}
    if not v.cells or named & {(int(r), int(c)) for r, c in v.cells}:
        return v.message
    return f"{v.message}: {cells_named(v.cells)}"


@dataclass(frozen=True)
class Violation:
    """One broken rule. `code` is pzpr.js's fail code where one exists (e.g. ``bkDupNum``);
    `message` says where, naming cells with `cell_name` (several: `cells_named`); `cells` are
    0-based (row, col) indices."""

    code: str
    message: str
    cells: tuple[tuple[int, int], ...] = ()


@dataclass
class Parsed:
    """What `Codec.parse` returns: the puzzle, the answer if the text held one, the format."""

    puzzle: Puzzle
    solution: Solution | None = None
    format: str = "unknown"  # "url" | "pzprv3" | "grid" | ...


# -- the contract ----------------------------------------------------------------------------

class Codec(ABC):
    """Base class for puzzle codecs. Subclasses set the class attributes and implement the
    abstract methods; the rest have working defaults."""

    #: codec name, also the PPBench/pzpr.js pid where there is one ("lightup")
    name: str = ""
    #: one-line description for `ptrm codecs`
    description: str = ""
    #: puzz.link URL ids this codec reads ("akari" for lightup)
    url_ids: tuple[str, ...] = ()
    #: families it can encode into; the first is the default
    families: tuple[Family, ...] = ()
    #: the Solution value meaning "nothing entered" in a cell
    EMPTY: int = 0
    #: False for a type with no rules, whose `verify` only compares with a known output (ARC):
    #: `ptrm solve` then speaks of the expected output, not of rules, and shows verify's
    #: messages without their codes (there is no rule to name)
    has_rules: bool = True

    # -- parsing ---------------------------------------------------------------------------
    @abstractmethod
    def parse(self, text: str, *, source: str | None = None) -> Parsed:
        """Read a puzz.link URL, pzprv3 text or this codec's plain grid text. Raise `ParseError`
        naming the source, the line and what was expected."""

    def sniff(self, text: str) -> bool:
        """True if `text` is, unambiguously, this codec's plain-grid format without a header
        line. Used by auto-detection after URLs, pzprv3 text and header lines."""
        return False

    def from_record(self, record: dict, *, source: str | None = None) -> tuple[Puzzle, Solution]:
        """A dataset record (a PPBench JSONL line, a janko entry, a ptrm record) -> puzzle and
        its full solution."""
        raise ParseError(f"{self.name}: dataset records are not supported", source=source)

    # -- writing ---------------------------------------------------------------------------
    def to_url(self, puzzle: Puzzle) -> str:
        raise PtrmError(f"{self.name}: no puzz.link URL form")

    def to_pzprv3(self, puzzle: Puzzle, solution: Solution | None = None) -> str:
        raise PtrmError(f"{self.name}: no pzprv3 form")

    def key(self, puzzle: Puzzle) -> str:
        """A string that identifies the puzzle (same clues, same key). Default: its URL."""
        if type(self).to_url is Codec.to_url:  # no URL form: "no URL" alone named no fix
            raise PtrmError(f"{self.name}: no key: the default key is the puzzle's puzz.link "
                            "URL, and this codec writes none",
                            hint="override Codec.key with text your parse reads back "
                                 "(docs/PLUGINS.md, section 2)")
        return self.to_url(puzzle)

    # -- tokens ----------------------------------------------------------------------------
    def family(self, name: str | None = None) -> Family:
        if name is None:
            return self.families[0]
        for f in self.families:
            if f.name == name:
                return f
        raise PtrmError(f"codec {self.name!r} has no family {name!r} "
                        f"(it has: {', '.join(f.name for f in self.families)})")

    def family_for(self, vocab: Vocab) -> Family:
        """The family whose vocabulary is exactly `vocab` (a checkpoint's or dataset's)."""
        for f in self.families:
            if f.vocab.family == vocab.family:
                f.vocab.check_same(vocab, what=f"codec {self.name!r}", other_what="the model")
                return f
        families = ", ".join(f.name for f in self.families)
        raise PtrmError(f"codec {self.name!r} cannot encode for a model of the "
                        f"{vocab.family!r} family (its families: {families})",
                        hint="pass -c CHECKPOINT, a model trained on "
                             + ("that family" if len(self.families) == 1 else "one of them")
                             + " (`ptrm build-data --family NAME`, then `ptrm train`)")

    @abstractmethod
    def encode(self, puzzle: Puzzle, state: Solution | None = None,
               family: Family | None = None) -> np.ndarray:
        """Input tokens [seq_len] (int64) for the puzzle, with an optional partial solution
        (trajectory state) filled in. Raise a clear `PtrmError` if the puzzle does not fit the
        family (size, a clue outside the token range)."""

    @abstractmethod
    def encode_label(self, puzzle: Puzzle, solution: Solution,
                     family: Family | None = None) -> np.ndarray:
        """Label tokens [seq_len] for the full solution. PAD (0) marks cells the loss ignores."""

    @abstractmethod
    def decode(self, puzzle: Puzzle, tokens: np.ndarray,
               family: Family | None = None) -> Solution:
        """Predicted tokens -> solution. Tokens that mean nothing at a cell decode to EMPTY
        (the verifier then rejects the solution); never raises on model output."""

    # -- rules -----------------------------------------------------------------------------
    @abstractmethod
    def verify(self, puzzle: Puzzle, solution: Solution) -> list[Violation]:
        """All broken rules, in pzpr.js checklist order; empty means solved."""

    def puzzle_violations(self, puzzle: Puzzle) -> list[Violation]:
        """Rules the puzzle itself breaks, so that no answer can satisfy them (a maze with no
        route from S to G): `ptrm solve` checks them before it loads a model and stops there.
        Cheap checks only, not a search for a solution; the default, [], claims nothing."""
        return []

    def judges(self, puzzle: Puzzle) -> bool:
        """Whether `verify` can tell a right answer from a wrong one for this puzzle. Rules
        always can; a type judged only against a known output (ARC) cannot without one."""
        return True

    # -- augmentation ----------------------------------------------------------------------
    @abstractmethod
    def transform(self, puzzle: Puzzle, solution: Solution | None,
                  t: int) -> tuple[Puzzle, Solution | None]:
        """Apply dihedral symmetry t (see `ptrm_cli.dihedral`) to puzzle and solution."""

    def required_cells(self, puzzle: Puzzle, solution: Solution) -> list[tuple[int, int]]:
        """The cells a solver must fill (PPBench's `moves_required`), row-major."""
        rows, cols = np.nonzero(solution.grid != self.EMPTY)
        return [(int(r), int(c)) for r, c in zip(rows, cols) if self.is_answer_cell(puzzle, r, c)]

    def is_answer_cell(self, puzzle: Puzzle, r: int, c: int) -> bool:
        """False for cells the solver cannot change (givens, walls, clue cells)."""
        return True

    def trajectory(self, puzzle: Puzzle, solution: Solution, k: int) -> Solution:
        """The partial solution after the first k required moves (row-major order)."""
        grid = np.full_like(solution.grid, self.EMPTY)
        for r, c in self.required_cells(puzzle, solution)[:k]:
            grid[r, c] = solution.grid[r, c]
        return Solution(self.name, grid)

    # -- people ----------------------------------------------------------------------------
    # Optional, for the page `ptrm codecs TYPE` shows users before any developer detail (and,
    # the legend, for `ptrm solve --json`'s solution.legend); a codec without them still works.
    #: the rules in a sentence or two
    rules: str = ""
    #: a tiny puzzle as a user would type it, which `parse` reads (your plain grid, after a
    #: line naming the type); the page shows it drawn, with its URL and pzprv3 forms when
    #: `to_url` / `to_pzprv3` write them
    example: str = ""
    #: what each `Solution.grid` value means, {value: meaning}; None: only EMPTY is known
    #: (`legend_of` gives the default)
    legend: Mapping[int, str] | None = None

    @abstractmethod
    def render(self, puzzle: Puzzle, solution: Solution | None = None) -> Any:
        """A Rich renderable of the puzzle, with the solution drawn in when given."""

    def solution_url(self, puzzle: Puzzle, solution: Solution) -> str | None:
        """A link that opens the solved puzzle in an editor, where the format allows it."""
        return None


# -- holding a codec to its contract ----------------------------------------------------------

class CodecBug(PtrmError):
    """A codec broke its contract (raised where it must not, or answered the wrong thing): one
    message naming the codec and its plugin, instead of a traceback deep in the engine."""


def family_problems(fam: Family) -> list[str]:
    """What is wrong with a declared family, if anything (checked when plugins load, and by
    `conformance`)."""
    if not isinstance(fam, Family):
        return [f"family {fam!r} is not a ptrm_cli.codec.Family"]
    out = []
    if fam.rows < 1 or fam.cols < 1:
        out.append(f"family {fam.name!r} has a {size_name(fam.rows, fam.cols)} grid")
    if not isinstance(fam.vocab, Vocab):
        return out + [f"family {fam.name!r}: its vocab is not a ptrm_cli.vocab.Vocab"]
    odd = [t for t in fam.vocab.tokens if not isinstance(t, str)]
    if odd:  # datasets and checkpoints store the table as JSON and read strings back
        out.append(f"family {fam.name!r}: token names must be strings, found "
                   + ", ".join(f"{t!r} ({type(t).__name__})" for t in odd[:3]))
    if not fam.vocab.tokens or fam.vocab.tokens[0] != PAD:
        out.append(f"family {fam.name!r}: vocabulary does not start with {PAD!r}")
    if len(fam.vocab) < 2:
        out.append(f"family {fam.name!r}: vocabulary has no tokens besides {PAD!r}")
    if fam.vocab.family != fam.name:
        out.append(f"family {fam.name!r} carries a vocabulary named {fam.vocab.family!r} "
                   f"(checkpoints find their family by that name)")
    return out


def token_problem(what: str, tokens, fam: Family) -> str | None:
    """Why `tokens` (what `encode`/`encode_label` returned) is not a sequence of `fam`, if so."""
    if not isinstance(tokens, np.ndarray):
        return f"{what} returned {type(tokens).__name__}, not a numpy array"
    if not np.issubdtype(tokens.dtype, np.integer):
        return f"{what} returned {tokens.dtype} tokens, not integers"
    if tokens.shape != (fam.seq_len,):
        return f"{what} returned shape {tokens.shape}, expected ({fam.seq_len},)"
    if tokens.size and (tokens.min() < 0 or tokens.max() >= len(fam.vocab)):
        return (f"{what} returned ids {int(tokens.min())}..{int(tokens.max())}, outside the "
                f"{fam.name!r} vocabulary (0..{len(fam.vocab) - 1})")
    return None


def render_problem(what: str, drawn) -> str | None:
    """Why `drawn`, what a codec's `what` returned, cannot be shown: Rich prints the repr of
    an object it cannot draw (`<object object at 0x...>`), not an error."""
    from rich.protocol import is_renderable

    if is_renderable(drawn):
        return None
    return (f"{what} returned {type(drawn).__name__}, not a Rich renderable (a str, "
            "rich.text.Text, a Table, ...)")


def bug(codec: Codec, what: str) -> CodecBug:
    """`codec` broke its contract (`what` it did), as the error that names it and its plugin."""
    reg = _load().get(codec.name)
    origin = (f"{reg.provider}, {reg.entry_point}" if reg is not None
              and type(reg.codec) is type(codec) else type(codec).__qualname__)
    return CodecBug(f"codec {codec.name!r} ({origin}) {what}",
                    hint="a bug in the codec, not in the puzzle: tell its author; "
                         "`ptrm_cli.conformance.check_codec` finds such bugs (docs/PLUGINS.md)")


#: what a codec reading odd input raises (a user's text, not the codec's bug)
ODD_INPUT = (ValueError, IndexError, KeyError, TypeError)


@contextmanager
def contract(codec: Codec, method: str, *, reading: str | None = None,
             source: str | None = None):
    """Run codec calls: a PtrmError passes (a refusal the contract allows, e.g. "does not
    fit"), any other exception is the codec's bug and becomes a CodecBug naming it. With
    `reading` ("puzzle", "record"), the codec is reading a user's input: ODD_INPUT exceptions
    are that input's problem, "cannot read this puzzle as X", a ParseError naming `source`."""
    try:
        yield
    except PtrmError:
        raise
    except ODD_INPUT as e:
        if reading is None:
            raise bug(codec, f"raised {type(e).__name__} in {method}: {e}") from e
        raise ParseError(f"cannot read this {reading} as {codec.name} ({type(e).__name__}: "
                         f"{e})", source=source) from None
    except Exception as e:  # noqa: BLE001 - whatever a plugin raises is reported, not shown raw
        raise bug(codec, f"raised {type(e).__name__} in {method}: {e}") from e


def checked_tokens(codec: Codec, tokens, family: Family, method: str = "encode") -> np.ndarray:
    """`tokens` if they are a sequence of `family`, else a CodecBug (they would reach the model
    as a shape error or an index out of range)."""
    if (why := token_problem(method, tokens, family)) is not None:
        raise bug(codec, why)
    return tokens


#: what `Codec.legend` must be (`legend_of` holds a codec to it, `conformance` reports it)
LEGEND_SHAPE = "a non-empty mapping of grid values (integers) to their meanings (non-empty text)"


def legend_of(codec: Codec) -> dict[int, str]:
    """What each `Solution.grid` value of `codec` means, {value: meaning}, as `ptrm codecs
    TYPE` and `ptrm solve --json` give it: the codec's `legend`, else the one value every codec
    defines, EMPTY. A legend that is not LEGEND_SHAPE is the codec's bug (an empty meaning
    too: the page would show a bare number)."""
    found = codec.legend
    if found is None:
        return {int(codec.EMPTY): "nothing entered (EMPTY)"}
    try:  # numpy integers are integers; True is not a grid value
        out = {int(k): v for k, v in found.items()
               if not isinstance(k, bool) and int(k) == k and isinstance(v, str) and v.strip()}
    except (AttributeError, TypeError, ValueError):
        out = None
    if not out or len(out) != len(found):  # {} too: it says nothing, not even EMPTY
        raise bug(codec, f"has a legend that is not {LEGEND_SHAPE}: {found!r:.80}")
    return dict(sorted(out.items()))


def legend_json(codec: Codec) -> dict[str, str]:
    """`legend_of` as JSON writes it (keys are strings: "0", "1", ...), for `--json` output."""
    return {str(v): meaning for v, meaning in legend_of(codec).items()}


def rules_of(codec: Codec) -> str:
    """The codec's `rules` sentence ('' when it has none); anything but text (a tuple left by
    a trailing comma) is the codec's bug, said as one, not an AttributeError in a page."""
    if not isinstance(codec.rules, str):
        raise bug(codec, f"has rules that are a {type(codec.rules).__name__}, not text")
    return codec.rules


def violations_of(codec: Codec, puzzle: Puzzle, solution: Solution) -> list[Violation]:
    """`codec.verify`, held to its contract: what every caller outside the codec uses. The
    solution is the codec's own (from `decode`, `parse` or `from_record`): one that is not a
    Solution is that method's bug, and a verify that fails on a solution shaped unlike the
    puzzle says so (ARC's outputs may differ in shape; other types' do not)."""
    if not isinstance(solution, Solution) or np.ndim(solution.grid) != 2:
        what = (f"a Solution whose grid has shape {np.shape(solution.grid)}"
                if isinstance(solution, Solution) else f"a {type(solution).__name__}")
        raise bug(codec, f"gave {what} where a Solution of a 2-D grid belongs (from decode, "
                          f"parse or from_record)")
    shape = np.shape(solution.grid)
    try:
        found = codec.verify(puzzle, solution)
    except PtrmError:
        raise
    except Exception as e:  # noqa: BLE001 - the codec's bug, named
        odd = (f" (on a {size_name(*shape)} solution of a "
               f"{size_name(puzzle.rows, puzzle.cols)} puzzle, as decode, parse or from_record "
               "gave it)"
               if shape != (puzzle.rows, puzzle.cols) else "")
        raise bug(codec, f"raised {type(e).__name__} in verify{odd}: {e}") from e
    # an answer may be larger than its puzzle (ARC's outputs), and its cells are named too
    bounds = (max(puzzle.rows, shape[0]), max(puzzle.cols, shape[1]))
    return _checked_violations(codec, found, bounds=bounds)


def puzzle_violations_of(codec: Codec, puzzle: Puzzle) -> list[Violation]:
    """`codec.puzzle_violations`, held to its contract as `violations_of` holds `verify`."""
    with contract(codec, "puzzle_violations"):
        found = codec.puzzle_violations(puzzle)
    return _checked_violations(codec, found, "puzzle_violations",
                               bounds=(puzzle.rows, puzzle.cols))


def _checked_violations(codec: Codec, found, method: str = "verify", *,
                        bounds: tuple[int, int]) -> list[Violation]:
    """`method`'s answer as a list, if it is a list of Violation whose cells are (row, col)
    pairs on a board of `bounds` rows and columns, else a CodecBug (cells off the board were
    printed as `r51c51` and pointed the user at nothing)."""
    out = list(found) if isinstance(found, (list, tuple)) else None
    if out is None or not all(isinstance(v, Violation) for v in out):
        kind = type(found).__name__ if out is None else \
            type(next(v for v in out if not isinstance(v, Violation))).__name__
        raise bug(codec, f"{method} returned a {kind} where a list of Violation belongs")
    rows, cols = bounds
    for v in out:
        for cell in v.cells:
            if not (isinstance(cell, (tuple, list)) and len(cell) == 2
                    and all(isinstance(i, (int, np.integer)) for i in cell)
                    and 0 <= cell[0] < rows and 0 <= cell[1] < cols):
                raise bug(codec, f"{method} named the cell {cell!r} in {v.code!r}, which is "
                                 f"not on the {size_name(rows, cols)} board (cells are "
                                 "0-based (row, col) pairs)")
    return out


# -- registry --------------------------------------------------------------------------------

@dataclass
class Registered:
    codec: Codec
    provider: str  # distribution name and version, e.g. "ptrm 0.1.0"
    entry_point: str


def _builtin_first(ep) -> tuple[bool, str]:
    """Entry points in load order: ptrm's own codecs first, then by name, so that a plugin
    registering a built-in type's name never replaces it, whatever order the installation or
    the working directory gives the entry points."""
    dist = getattr(ep, "dist", None)
    return (getattr(dist, "name", None) != "ptrm", ep.name)


def families_problem(families) -> str | None:
    """Why a codec's `families` attribute is unusable, if it is (checked when plugins load,
    and by `conformance`): it must be a non-empty tuple."""
    if isinstance(families, tuple) and families:
        return None
    if isinstance(families, tuple):
        return "it declares no token family (Codec.families is empty)"
    return (f"Codec.families must be a tuple of Family, not a {type(families).__name__} "
            f"(write `families = (MY_FAMILY,)`)")


#: entry points that are installed but did not load: type name -> (entry point name, its
#: value, why); filled by `_load`, so that "unknown puzzle type" can say the plugin is there
#: but broken
_failed: dict[str, tuple[str, str, str]] = {}


class _Unusable(TypeError):
    """What the loader itself finds wrong with a plugin that imported (its message says it all,
    unlike an exception raised inside the plugin, whose type is part of the story)."""


def _load_failure(e: BaseException) -> str:
    """Why a plugin failed to load, as the warning says it: the loader's own findings as they
    are; an exception from the plugin with its type, so that `KeyError('x')` does not read as
    a bare "'x'" and an `assert` without a message as nothing at all."""
    if isinstance(e, SystemExit):
        return f"SystemExit({e.code!r})"
    if isinstance(e, _Unusable):
        return str(e)
    text = str(e)
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _provider(ep) -> str:
    """The distribution that installed an entry point, as `ptrm codecs` shows it."""
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "?"


@lru_cache(maxsize=1)
def _load() -> dict[str, Registered]:
    found: dict[str, Registered] = {}
    _failed.clear()
    for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=_builtin_first):
        names = [ep.name]  # what a user may ask for: the entry point's name, the codec's
        try:
            obj = ep.load()
            codec = obj() if isinstance(obj, type) else obj
            if not isinstance(codec, Codec):
                raise _Unusable(f"{ep.value} is not a ptrm Codec")
            if codec.name != ep.name:
                names.append(str(codec.name))
                raise _Unusable(f"entry point {ep.name!r} loads a codec named {codec.name!r}")
            if (why := families_problem(codec.families)) is not None:
                raise _Unusable(why)
            if problems := [p for f in codec.families for p in family_problems(f)]:
                raise _Unusable("; ".join(problems))
        except KeyboardInterrupt:
            raise
        except BaseException as e:  # noqa: BLE001 - a broken plugin must not take the CLI
            # down, not even one that calls sys.exit() on import
            what = _load_failure(e)
            origin = f"{ep.value}, {_provider(ep)}" if getattr(ep, "dist", None) else ep.value
            warnings.warn(f"ptrm: codec plugin {ep.name!r} ({origin}) failed to load: "
                          f"{what}", stacklevel=2)
            for name in names:
                _failed.setdefault(name, (ep.name, origin, what))
            continue
        provider = _provider(ep)
        if ep.name in found:
            warnings.warn(f"ptrm: codec {ep.name!r} is registered twice; keeping "
                          f"{found[ep.name].provider} ({found[ep.name].entry_point}), "
                          f"ignoring {provider} ({ep.value})", stacklevel=2)
            continue
        found[ep.name] = Registered(codec, provider, ep.value)
    _warn_family_clashes(found)
    return found


def _warn_family_clashes(found: dict[str, Registered]) -> None:
    """Two codecs may share a family (the six PPBench types do) only with one token table: a
    model of that family could not serve both otherwise."""
    first: dict[str, str] = {}
    for name, reg in found.items():
        for fam in reg.codec.families:
            other = first.setdefault(fam.name, name)
            theirs = found[other].codec.family(fam.name).vocab
            if other != name and theirs.tokens != fam.vocab.tokens:
                warnings.warn(f"ptrm: codecs {other!r} ({found[other].provider}) and {name!r} "
                              f"({reg.provider}) declare family {fam.name!r} with different "
                              "token tables: no model can serve both", stacklevel=3)


def registered() -> dict[str, Registered]:
    """Every installed codec, by name."""
    return dict(_load())


def families() -> list[Family]:
    """Every installed codec's families, in registry order (a family shared by several codecs
    appears once per codec)."""
    return [f for reg in _load().values() for f in reg.codec.families]


def reload() -> None:
    """Forget the cached entry points (after installing a plugin in the same process)."""
    _load.cache_clear()


def get(name: str) -> Codec:
    """The codec of a type name or URL id (`--codec`, a record's type); unknown: an error."""
    found = type_named(name)
    if found is None:
        known = ", ".join(sorted(_load())) or "none"
        broken = _broken_plugin(name)  # then the name is right: no guess at another type
        raise CodecNotFound(f"unknown puzzle type {name!r} (installed codecs: {known})"
                            f"{'' if broken else _meant(name)}",
                            hint=broken or "`ptrm codecs` lists them; plugins add more")
    return found


def _meant(name: str) -> str:
    """What an unknown type name was likely meant as: a token family's name (`ptrm codecs`
    lists families beside the types), or a near miss of a type's name or URL id ("sudok")."""
    word = name.strip().lower()
    codecs = {t: reg.codec for t, reg in _load().items()}
    users = sorted(t for t, c in codecs.items() if any(f.name.lower() == word
                                                        for f in c.families))
    if users:
        return f"; {name!r} is a token family, not a puzzle type; its types: {', '.join(users)}"
    # a URL id ("akari") stands for its type: the type is what is suggested
    return did_you_mean([word], {w: t for t, c in codecs.items() for w in (t, *c.url_ids)},
                        show=repr)


def failed_plugin(word: str) -> tuple[str, str, str] | None:
    """(entry point, its target and package, why) of an installed plugin registering the type
    `word` that failed to load, if any."""
    _load()
    return next((f for name, f in _failed.items() if name.lower() == word.strip().lower()),
                None)


def _broken_plugin(word: str) -> str | None:
    """A hint for a type name no codec reads when a plugin registering it is installed but
    failed to load: "install its plugin" would send its author the wrong way."""
    failed = failed_plugin(word)
    if failed is not None:
        ep_name, value, why = failed
        return (f"a plugin registers {ep_name!r} ({value}) but failed to load: {why}; "
                "fix the plugin (docs/PLUGINS.md)")
    return None


def type_named(word: str) -> Codec | None:
    """The codec named `word`, by its name or a URL id ("akari"), in any case ("LightUp"),
    if any: what `--codec`, a grid's first line and a record's type all go through."""
    codecs = _load()
    word = word.strip()
    if word in codecs:
        return codecs[word].codec
    for reg in codecs.values():
        if word.lower() in {reg.codec.name.lower(), *(u.lower() for u in reg.codec.url_ids)}:
            return reg.codec
    return None


#: a URL names its type right after the '?' (`?akari/10/10/...`; `?akari` alone is cut short,
#: and its codec says what is missing)
_URL = re.compile(r"^\s*(?:https?://)?[^?\s]*\?([A-Za-z0-9_]+)(?:/|\s*$)")


def detect(text: str, *, source: str | None = None) -> Codec:
    """Find the codec for a puzzle text: a puzz.link URL names its type, pzprv3 text names it
    on its second line, a plain grid may name it on its first line; otherwise the codecs'
    `sniff` must agree on exactly one."""
    return _detect(text, source)[0]


def type_guessed(text: str) -> bool:
    """Whether `detect` takes `text`'s type from a codec's `sniff`: the text names none (a
    plain grid without a type line), so the type is a guess that may be wrong."""
    try:
        return not text.strip().startswith("{") and _detect(text, None)[1]
    except PtrmError:
        return False


def read_by(text: str) -> list[str]:
    """The installed types whose reader takes `text`: what a grid that names no type may be.
    A reader that refuses it counts as a no, without a word (refusing another type's grid is
    what a reader does), and so does one that breaks or calls sys.exit (as `_load` does, a
    plugin cannot end the command)."""
    found = []
    for reg in _load().values():
        try:
            reg.codec.parse(text)
        except (Exception, SystemExit):  # noqa: BLE001 - its refusal, or a plugin's bug
            continue
        found.append(reg.codec.name)
    return found


def also_read_by(codec: Codec, text: str) -> list[str]:
    """The other installed types whose reader takes `text` too: where a guessed type
    (`type_guessed`) could be the wrong one."""
    return [name for name in read_by(text) if name != codec.name]


def other_type_hint(e: OtherType) -> str:
    """What to do when --codec named a codec and the input is a puzzle of another type."""
    other = type_named(e.found)
    return "drop --codec to read the type from the input" + (
        f", or pass --codec {other.name}" if other is not None else "")


def guessed_hint(codec: Codec) -> str:
    """What to do when a guessed type (`type_guessed`) was the wrong one."""
    return (f"the text names no type and reads like {codec.name}; if it is another type, "
            "start it with a line naming the type, or pass --codec TYPE")


def _detect(text: str, source: str | None) -> tuple[Codec, bool]:
    """`detect`'s codec, and whether it was claimed by `sniff` (the text names no type)."""
    stripped = text.strip()
    if not stripped:
        raise ParseError("empty input: expected a puzz.link URL, pzprv3 text or a puzzle grid",
                         source=source)
    m = _URL.match(stripped)
    if m:
        urlid = m.group(1)
        if urlid == "pzprv3":  # pzprv3 text packed into a URL: ?pzprv3/<pid>/...
            urlid = stripped.split("?pzprv3", 1)[1].lstrip("/").split("/", 1)[0]
            if not urlid:
                raise ParseError("pzprv3 URL ends before the puzzle type", source=source,
                                 hint="expected ?pzprv3/<type>/<rows>/<cols>/<grid lines>")
        return get(urlid), False
    lines = [ln.strip() for ln in stripped.splitlines()]
    if lines[0].startswith("pzprv3"):
        rest = [ln for ln in lines[1:] if not ln.startswith("v:")]  # an optional variant line
        if not rest:
            raise ParseError("pzprv3 text ends after its first line: expected the puzzle type",
                             source=source, line=1)
        return get(rest[0]), False
    named = type_named(lines[0].lower())
    if named is not None:
        return named, False
    claiming = [reg for reg in _load().values() if _sniffs(reg, stripped)]
    candidates = [reg.codec for reg in claiming]
    if len(candidates) == 1:
        return candidates[0], True
    if not candidates:
        # "sudoku:", "# sudoku", "type: sudoku", "sudoku 9x9": a type named, but not alone
        mentioned = [name for name in _load() if re.search(rf"(?<![\w-]){re.escape(name)}"
                                                            rf"(?![\w-])", lines[0].lower())]
        if len(lines) > 1 and mentioned:
            raise ParseError(f"the first line {lines[0]!r} mentions the type {mentioned[0]}, "
                             "but a type line holds the name alone", source=source, line=1,
                             hint=f"make the first line `{mentioned[0]}`, or pass --codec "
                                  f"{mentioned[0]}")
        if len(lines) > 1 and re.fullmatch(r"[a-z][a-z0-9_-]{2,}", lines[0].lower()):
            raise ParseError(f"the first line names the type {lines[0]!r}, which no installed "
                             f"codec reads (installed: {', '.join(_load())})"
                             f"{did_you_mean([lines[0]], list(_load()))}", source=source,
                             line=1, hint=_broken_plugin(lines[0])
                             or "install its plugin (docs/PLUGINS.md), or pass --codec TYPE")
        # a grid whose type's sniff does not claim it (a lightup grid is a nurikabe grid too):
        # the one type that reads it is the guess; several are the choice to offer
        readers = read_by(text)
        if len(readers) == 1:
            return get(readers[0]), True
        if readers:
            raise ParseError("cannot tell the puzzle type: the text names none, and it reads "
                             f"as any of {', '.join(readers)}", source=source,
                             hint=f"start it with a line naming its type (`{readers[0]}`, say), "
                                  "or pass --codec TYPE; `ptrm codecs TYPE` shows each type's "
                                  "rules")
        raise ParseError("cannot tell the puzzle type: expected a puzz.link URL, pzprv3 text, "
                         "or a grid whose first line names the type",
                         source=source, hint="pass --codec TYPE")
    # each claim with the package whose `sniff` made it: a plugin that claims another type's
    # grids is found by its name here, not by uninstalling plugins one by one
    names = ", ".join(f"{reg.codec.name} ({reg.provider})" for reg in claiming)
    raise ParseError(f"ambiguous puzzle text: the sniff of more than one codec claims it: "
                     f"{names}", source=source,
                     hint="pass --codec TYPE or put the type on the first line")


def _sniffs(reg: Registered, text: str) -> bool:
    """`reg.codec.sniff(text)`; a plugin whose sniff breaks is warned about and counts as a no,
    so that it cannot stop the other codecs from reading their puzzles."""
    try:
        return bool(reg.codec.sniff(text))
    except Exception as e:
        warnings.warn(f"ptrm: codec plugin {reg.codec.name!r} ({reg.provider}) failed in sniff: "
                      f"{type(e).__name__}: {e}", stacklevel=2)
        return False


def parse(text: str, *, codec: str | None = None,
          source: str | None = None) -> tuple[Codec, Parsed]:
    """The codec of `text` (`codec` names it, else `detect`) and what it reads there."""
    c, sniffed = (get(codec), False) if codec else _detect(text, source)
    try:
        with contract(c, "parse", reading="puzzle", source=source):
            parsed = c.parse(text, source=source)
    except ParseError as e:
        if sniffed and e.hint is None:  # a grid of another type that looks like this one
            e.hint = guessed_hint(c)
        elif codec and isinstance(e, OtherType) and e.hint is None:  # --codec chose wrong
            e.hint = other_type_hint(e)
        elif e.hint is None:  # a codec's own reader said what is wrong, not what is right
            e.hint = f"`ptrm codecs {c.name}` shows each form it reads, with an example"
        raise
    if not isinstance(parsed, Parsed) or not isinstance(parsed.puzzle, Puzzle):
        raise bug(c, f"parse returned {type(parsed).__name__}, not Parsed(puzzle, ...)")
    return c, parsed
