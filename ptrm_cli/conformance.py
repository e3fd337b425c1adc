"""Conformance checks for any codec, built-in or third-party: the plugin contract of
`ptrm_cli.codec`, made executable.

    from ptrm_cli.conformance import assert_conformant, samples_from_records

    def test_my_codec():
        codec = MyCodec()
        samples = samples_from_records(codec, records)        # or [(puzzle, solution), ...]
        assert_conformant(codec, samples)

`check_codec` returns the problems as sentences (empty: conformant); `assert_conformant` raises
an AssertionError listing them. The samples should be solved puzzles with a *unique* solution:
the mutation check expects every single-cell change of a solution to break a rule (pass
`mutations=False` for a type where that does not hold).

What is checked:
  * registration: an entry point in `ptrm.codecs` named like the codec loads this codec class;
  * signatures: `parse` and `from_record` take the `source=` keyword ptrm passes;
  * families: a non-empty tuple of Family, each with a vocabulary named like it that starts
    with "pad" (id 0), and seq_len = rows * cols; `url_ids`: a tuple of str;
  * `example`, where the codec sets one: its own `parse` reads it, `ptrm solve` reads it as
    this type without --codec (`solver.parse_puzzle`; checked when the codec is registered),
    and `puzzle_violations` finds nothing in it;
  * `legend`, where the codec sets one: `legend_of` takes it (integers to non-empty text), and
    it names EMPTY and every value `decode(encode_label(...))` gives for the samples;
  * per sample: the solution verifies, and `puzzle_violations` finds nothing; `key` is a
    str and `judges` a bool; `encode` / `encode_label` give int arrays of seq_len ids inside
    the vocabulary (or a PtrmError when the puzzle does not fit the family);
    `decode(encode_label(...))` is the solution; decoding arbitrary tokens never raises;
    `to_url` and `to_pzprv3`, where the codec has them, parse back (and auto-detect) to the
    same key, tokens and solution, and without either the key itself parses back to the same
    tokens (a dataset stores the puzzle as that text); each of the 8 symmetries gives a verifying solution and its inverse
    gives back the original (a PtrmError marks a symmetry the type does not have); trajectory
    states agree with the solution on every filled cell, grow with k, and encode; single-cell
    changes of the solution are rejected by `verify`; `sniff`, where the codec has one,
    answers a bool and never raises, and claims no other installed codec's example (less its
    type line) that codec's own sniff claims; `render` returns a Rich renderable that draws. A section
    that crashes is one finding naming the codec method that raised.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterable, Sequence

import numpy as np

from . import codec as registry
from . import dihedral
from .codec import (Codec, Family, Parsed, Puzzle, Solution, Violation, cell_name,
                    families_problem, family_problems, render_problem, size_name,
                    token_problem)
from .errors import PtrmError

Sample = tuple[Puzzle, Solution]


def samples_from_records(codec: Codec, records: Iterable[dict], *,
                         source: str | None = None) -> list[Sample]:
    """(puzzle, solution) pairs from dataset records the codec reads (`Codec.from_record`).
    `source` (a file name for the codec's errors) is passed only when given: a from_record
    that does not take it is a finding of `check_codec`, not a TypeError here."""
    kw = {} if source is None else {"source": source}
    return [codec.from_record(rec, **kw) for rec in records]


def assert_conformant(codec: Codec, samples: Sequence[Sample], **options) -> None:
    """Raise AssertionError listing every problem `check_codec` finds."""
    problems = check_codec(codec, samples, **options)
    if problems:
        shown = "\n  ".join(problems[:60])
        more = f"\n  ... and {len(problems) - 60} more" if len(problems) > 60 else ""
        raise AssertionError(f"codec {codec.name!r} does not conform ({len(problems)} "
                             f"problem(s)):\n  {shown}{more}")


def check_codec(codec: Codec, samples: Sequence[Sample], *, registered: bool = True,
                mutations: bool = True, max_mutations: int = 12, seed: int = 0) -> list[str]:
    """Every way `codec` breaks the contract on these samples, as sentences.

    registered: also check that the `ptrm.codecs` entry points provide this codec.
    mutations: check that single-cell changes of each solution fail `verify` (needs puzzles
        with unique solutions); up to `max_mutations` changed cells per sample, seeded by `seed`.
    """
    problems: list[str] = []
    problems += _codec_problems(codec, registered)
    if problems and not isinstance(codec, Codec):
        return problems
    if not samples:
        problems.append("no samples to check")
    for name, run in (("example", lambda: _example_problems(codec, detect=registered)),
                      ("legend", lambda: _legend_problems(codec, samples)),
                      ("sniff", lambda: _sniff_claim_problems(codec))):
        try:
            problems += run()
        except Exception as e:  # a crash is a finding, not the end of the report
            problems.append(f"{name}: {_crash(codec, e, section=name)}")
    domain = _answer_values(codec, samples)
    rng = np.random.default_rng(seed)
    for i, (puzzle, solution) in enumerate(samples):
        where = f"sample {i} ({size_name(puzzle.rows, puzzle.cols)}"
        url = puzzle.meta.get("url") if isinstance(puzzle.meta, dict) else None
        where += f" {url})" if url else ")"
        try:
            found = _sample_problems(codec, puzzle, solution, domain, rng,
                                     mutations=mutations, max_mutations=max_mutations,
                                     detect=registered)
        except Exception as e:  # a crash is a finding, not the end of the report
            found = [_crash(codec, e)]
        problems += [f"{where}: {p}" for p in found]
    return problems


# -- the codec as a whole ----------------------------------------------------------------------

def _codec_problems(codec: Codec, registered: bool) -> list[str]:
    out = []
    if not isinstance(codec, Codec):
        return [f"{codec!r} is not a ptrm_cli.codec.Codec"]
    if not isinstance(codec.name, str) or not codec.name:
        out.append("the codec has no name")
    if not isinstance(codec.description, str) or not codec.description:
        out.append("the codec has no one-line description (shown by `ptrm codecs`)")
    if registered:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # other plugins' load failures are not ours to report
            found = registry.registered()
        if codec.name not in found:
            out.append(f"no `ptrm.codecs` entry point named {codec.name!r} loads "
                       f"(installed: {', '.join(sorted(found)) or 'none'})")
        elif type(found[codec.name].codec) is not type(codec):
            out.append(f"the `ptrm.codecs` entry point {codec.name!r} loads "
                       f"{type(found[codec.name].codec).__qualname__}, not "
                       f"{type(codec).__qualname__}")
    out += _signature_problems(codec)
    out += _url_ids_problems(codec.url_ids)
    if (why := families_problem(codec.families)) is not None:
        return out + [why]  # what `ptrm` says when it skips the plugin
    for fam in codec.families:
        out += family_problems(fam)
    return out


#: the keyword arguments ptrm passes to these methods, so an override must take them
KEYWORDS = {"parse": ("source",), "from_record": ("source",)}


def _signature_problems(codec: Codec) -> list[str]:
    """Methods overridden without a keyword ptrm passes: `ptrm solve RECORD.json` calls
    `from_record(record, source=...)`, and one written as `from_record(self, record)` failed
    there only, with a TypeError blamed on the record (build-data passes no source)."""
    import inspect

    out = []
    for method, keywords in KEYWORDS.items():
        try:
            inspect.signature(getattr(codec, method)).bind(None, **dict.fromkeys(keywords))
        except TypeError:
            want = ", ".join(f"{k}=None" for k in keywords)
            out.append(f"{method} must take the keyword argument(s) ptrm passes: "
                       f"def {method}(self, ..., *, {want})")
        except ValueError:  # no signature to read (a builtin): nothing to say
            pass
    return out


def _url_ids_problems(url_ids) -> list[str]:
    """`url_ids` must be a tuple of ids: a bare str passed unnoticed, and type names are
    matched against its letters (`--codec s` read as this type), URLs against its substrings."""
    if isinstance(url_ids, str):
        return [f"Codec.url_ids must be a tuple of str, not a str (write "
                f"`url_ids = ({url_ids!r},)`)"]
    if not isinstance(url_ids, tuple):
        return [f"Codec.url_ids must be a tuple of str, not a {type(url_ids).__name__}"]
    odd = [u for u in url_ids if not isinstance(u, str) or not u]
    if odd:
        return [f"Codec.url_ids must be a tuple of non-empty str; it holds {odd[0]!r}"]
    return []


def _example_problems(codec: Codec, *, detect: bool) -> list[str]:
    """The codec's `example`, where it sets one, is a puzzle a user can run as `ptrm codecs
    TYPE` shows it: its own `parse` reads it, `ptrm solve` reads it as this type without
    --codec (with `detect`: only an installed codec is found there), and `puzzle_violations`
    finds nothing in it (`ptrm solve` would refuse it before loading a model)."""
    if not codec.example:
        return []
    if not isinstance(codec.example, str):
        return [f"example is a {type(codec.example).__name__}, not text"]
    source = f"{codec.name}.example"
    try:
        parsed = codec.parse(codec.example, source=source)
    except PtrmError as e:
        return [f"example does not parse: {e}"]
    if not isinstance(parsed, Parsed) or not isinstance(parsed.puzzle, Puzzle):
        return [f"example: parse returned {type(parsed).__name__}, not Parsed(puzzle, ...)"]
    out = []
    if detect:
        from .solver import parse_puzzle  # what `ptrm solve FILE` reads a file with

        try:
            found, _ = parse_puzzle(codec.example, source=source)
        except PtrmError as e:
            out.append(f"example: `ptrm solve` cannot read it without --codec: {e}")
        else:
            if found.name != codec.name:
                out.append(f"example: `ptrm solve` reads it as {found.name!r} without --codec")
    return out + [f"example: {p}" for p in _finds_nothing(
        "puzzle_violations", lambda: codec.puzzle_violations(parsed.puzzle),
        "puzzle_violations finds it unsolvable, so `ptrm solve` refuses it")]


def _legend_problems(codec: Codec, samples: Sequence[Sample]) -> list[str]:
    """The codec's `legend`, where it sets one, is what `legend_of` takes, and it names EMPTY
    and every value `decode` gives for the samples' labels: the values an answer shows."""
    if codec.legend is None:
        return []
    try:
        legend = registry.legend_of(codec)
    except registry.CodecBug:
        return [f"legend is not {registry.LEGEND_SHAPE}: {codec.legend!r:.80}"]
    out = []
    if int(codec.EMPTY) not in legend:
        out.append(f"legend does not name EMPTY ({codec.EMPTY})")
    seen: set = set()
    for puzzle, solution in samples:
        for fam in codec.families:
            try:  # a sample these calls fail on is reported by its own sections
                if not _fits(codec, puzzle, fam):
                    continue
                label = codec.encode_label(puzzle, solution, family=fam)
                if token_problem("encode_label", label, fam) is not None:
                    continue
                back = codec.decode(puzzle, label, family=fam)
                seen |= set(np.unique(np.asarray(back.grid)).tolist())
            except Exception:
                continue
    missing = sorted(v for v in seen if v not in legend and v != codec.EMPTY)
    if missing:
        out.append(f"legend does not name {', '.join(map(str, missing))}: value(s) that "
                   f"decode(encode_label(...)) gives for the samples")
    return out


def _finds_nothing(method: str, call, finding: str) -> list[str]:
    """The problem, if any, with a call of a method that returns violations and must find
    none here: it raised, it returned no list of Violation, or it found one (`finding`)."""
    try:
        found = call()
    except Exception as e:
        return [f"{method} raised {type(e).__name__}: {e}"]
    if not _is_violations(found):
        return [f"{method} returned {_what(found)}, not a list of Violation"]
    return [f"{finding}: {found[0].code} ({found[0].message})"] if found else []


def _answer_values(codec: Codec, samples: Sequence[Sample]) -> list[int]:
    """Values an answer cell takes in the samples' solutions, plus EMPTY: the mutation domain."""
    values = {int(codec.EMPTY)}
    for puzzle, solution in samples:
        for r in range(puzzle.rows):
            for c in range(puzzle.cols):
                if codec.is_answer_cell(puzzle, r, c):
                    values.add(int(solution.grid[r, c]))
    return sorted(values)


# -- one sample --------------------------------------------------------------------------------

def _sample_problems(codec: Codec, puzzle: Puzzle, solution: Solution, domain: list[int],
                     rng: np.random.Generator, *, mutations: bool, max_mutations: int,
                     detect: bool) -> list[str]:
    out: list[str] = []
    if puzzle.type != codec.name or solution.type != codec.name:
        out.append(f"puzzle/solution type is {puzzle.type!r}/{solution.type!r}, "
                   f"not {codec.name!r}")
    grid = np.asarray(solution.grid)
    if grid.shape != (puzzle.rows, puzzle.cols) or not np.issubdtype(grid.dtype, np.integer):
        return out + [f"solution grid is {grid.dtype} {grid.shape}, expected integers of shape "
                      f"({puzzle.rows}, {puzzle.cols})"]
    # the other sections still run after a finding here: they say what else is wrong
    out += _finds_nothing("verify", lambda: codec.verify(puzzle, solution),
                          "verify rejects the solution")
    # a solved puzzle breaks no rule by itself: `ptrm solve` would refuse to run it
    out += _finds_nothing("puzzle_violations", lambda: codec.puzzle_violations(puzzle),
                          "puzzle_violations rejects a solved puzzle")
    try:
        key = codec.key(puzzle)
    except Exception as e:
        return out + [f"key() failed ({type(e).__name__}: {e}); a codec without a URL form "
                      f"must override Codec.key"]
    if not isinstance(key, str):  # else every check that reads it back blames parse or sniff
        return out + [f"key returned {type(key).__name__}, not a str (text that identifies "
                      "the puzzle and that your parse reads back)"]
    sections = [("judges", lambda: _judges_problems(codec, puzzle)),
                ("tokens", lambda: _token_problems(codec, puzzle, solution)),
                ("sniff", lambda: _sniff_problems(codec, key)),
                ("formats", lambda: _format_problems(codec, puzzle, solution, key, detect)),
                ("transforms", lambda: _transform_problems(codec, puzzle, solution, key)),
                ("trajectory", lambda: _trajectory_problems(codec, puzzle, solution)),
                ("render", lambda: _render_problems(codec, puzzle, solution))]
    if mutations:
        sections.append(("mutations", lambda: _mutation_problems(
            codec, puzzle, solution, domain, rng, max_mutations)))
    for name, run in sections:  # one crashing section must not hide the others' findings
        try:
            out += run()
        except Exception as e:
            out.append(f"{name}: {_crash(codec, e, section=name)}")
    return out


class _Finding(Exception):
    """A contract breach found in the middle of a section (verify answering something other
    than a list of Violation): reported as it says, not as an exception the codec raised."""


def _crash(codec: Codec, e: Exception, section: str | None = None) -> str:
    """A section's crash as a finding naming the codec method that raised, found in the
    traceback (the first frame running on `codec`): "decode raised IndexError: ...", not a
    bare "raised IndexError" that leaves the author to guess which of their methods it was."""
    if isinstance(e, _Finding):
        return str(e)
    method, tb = None, e.__traceback__
    while tb is not None:
        if tb.tb_frame.f_locals.get("self") is codec:
            method = tb.tb_frame.f_code.co_name
            break
        tb = tb.tb_next
    who = f"{method} " if method and method != section else ""
    return f"{who}raised {type(e).__name__}: {e}"


def _is_bool(said) -> bool:
    return isinstance(said, (bool, np.bool_))


def _is_violations(found) -> bool:
    return isinstance(found, list) and all(isinstance(v, Violation) for v in found)


def _what(found) -> str:
    """What verify answered instead of a list of Violation: its type, or for a list, the type
    of the first thing in it that is not a Violation ("a list of str")."""
    if isinstance(found, list):
        odd = next(v for v in found if not isinstance(v, Violation))
        return f"a list of {type(odd).__name__}"
    return type(found).__name__


def _first_violation(codec: Codec, puzzle: Puzzle, solution: Solution) -> str | None:
    """The first broken rule as "code (message)", None when solved. A verify that answers
    something other than a list of Violation is reported once, by the sample's own check, so
    here it raises and its section says so in one line instead of an AttributeError."""
    found = codec.verify(puzzle, solution)
    if not _is_violations(found):
        raise _Finding(f"verify returned {_what(found)}, not a list of Violation")
    try:  # held to the contract every caller holds it to: cells on the board, ...
        registry.violations_of(codec, puzzle, solution)
    except registry.CodecBug as e:
        raise _Finding(str(e)) from None
    return f"{found[0].code} ({found[0].message})" if found else None


def _judges_problems(codec: Codec, puzzle: Puzzle) -> list[str]:
    """`judges` decides whether `ptrm solve` calls an answer solved or "not judged": it must
    answer True or False (ptrm takes its truth, so a None would leave answers unjudged)."""
    said = codec.judges(puzzle)
    return [] if _is_bool(said) else [f"judges returned {type(said).__name__}, not a bool"]


def _tokens_ok(name: str, tokens, fam: Family) -> list[str]:
    return [why] if (why := token_problem(name, tokens, fam)) else []


def _fits(codec: Codec, puzzle: Puzzle, fam: Family) -> bool:
    """Whether `encode` takes the puzzle for this family; a refusal must be a PtrmError."""
    try:
        codec.encode(puzzle, family=fam)
    except PtrmError:
        return False
    return True


def _token_problems(codec: Codec, puzzle: Puzzle, solution: Solution) -> list[str]:
    out = []
    for fam in codec.families:
        if not _fits(codec, puzzle, fam):
            continue  # a clear "does not fit" is the contract for oversized puzzles
        x = codec.encode(puzzle, family=fam)
        out += _tokens_ok(f"encode[{fam.name}]", x, fam)
        y = codec.encode_label(puzzle, solution, family=fam)
        found = _tokens_ok(f"encode_label[{fam.name}]", y, fam)
        out += found
        if not found:
            back = codec.decode(puzzle, y, family=fam)
            if not isinstance(back, Solution):
                out.append(f"decode(encode_label) returned {type(back).__name__}, not a "
                           "Solution")
            elif back != solution:
                diff = np.argwhere(np.asarray(back.grid) != np.asarray(solution.grid)) \
                    if np.shape(back.grid) == np.shape(solution.grid) else []
                out.append("decode(encode_label) differs from the solution"
                           + (f" at {len(diff)} cell(s), first {cell_name(diff[0][0], diff[0][1])}"
                              if len(diff) else f" (shape {np.shape(back.grid)})"))
        rng = np.random.default_rng(len(fam.vocab))
        for _ in range(3):  # model output can be any ids; decode must never raise
            noise = rng.integers(0, len(fam.vocab), size=fam.seq_len)
            got = codec.decode(puzzle, noise, family=fam)
            if not isinstance(got, Solution):
                out.append(f"decode of arbitrary tokens returned {type(got).__name__}, not a "
                           "Solution")
                break
            if np.shape(got.grid) != (puzzle.rows, puzzle.cols):
                out.append(f"decode of arbitrary tokens returned a grid of shape "
                           f"{np.shape(got.grid)} for a {size_name(puzzle.rows, puzzle.cols)} "
                           "puzzle")
                break
    return out


def _overrides(codec: Codec, method: str) -> bool:
    return getattr(type(codec), method) is not getattr(Codec, method)


def _format_problems(codec: Codec, puzzle: Puzzle, solution: Solution, key: str,
                     detect: bool) -> list[str]:
    out = []
    if _overrides(codec, "to_url"):
        url = codec.to_url(puzzle)
        out += _parsed_problems(codec, "to_url", url, puzzle, key, None, detect)
    if _overrides(codec, "to_pzprv3"):
        text = codec.to_pzprv3(puzzle, solution)
        out += _parsed_problems(codec, "to_pzprv3", text, puzzle, key, solution, detect)
    if not _overrides(codec, "to_url") and not _overrides(codec, "to_pzprv3") \
            and codec.name != "arc":  # ARC builds by TRM's recipe (`--family arc`), not as text
        # a dataset stores the puzzle as its key then, and build-data drops every puzzle
        # whose key does not parse back ("decode error"); records carry the type, so the key
        # need not auto-detect
        try:
            out += _parsed_problems(codec, "key", key, puzzle, key, None, detect=False)
        except PtrmError as e:
            out.append(f"parse(key) fails: {e} (with no to_url or to_pzprv3, a dataset stores "
                       "each puzzle as its key: override Codec.key with text your parse reads)")
    return out


def _parsed_problems(codec: Codec, what: str, text: str, puzzle: Puzzle, key: str,
                     solution: Solution | None, detect: bool) -> list[str]:
    """`text` (written by `what`) read back: the same puzzle, by its key and by what the model
    sees of it (a key that drops part of the puzzle, even a constant one, gives itself back)."""
    out = []
    parsed = codec.parse(text, source=what)
    if not isinstance(parsed, Parsed):
        return [f"parse({what}) returned {type(parsed).__name__}, not Parsed"]
    if codec.key(parsed.puzzle) != key:
        out.append(f"parse({what}) gives a different puzzle: key {codec.key(parsed.puzzle)!r} "
                   f"!= {key!r}")
    elif not _same_tokens(codec, parsed.puzzle, puzzle):
        out.append(f"parse({what}) gives a puzzle that encodes differently from the original: "
                   f"{what} loses part of it (a dataset stores each puzzle as its key or URL)")
    if solution is not None and parsed.solution != solution:
        out.append(f"parse({what}) does not give back the solution")
    if detect:
        try:
            found = registry.detect(text, source=what)
        except PtrmError as e:
            out.append(f"auto-detection cannot read {what}: {e}")
        else:
            if found.name != codec.name:
                out.append(f"auto-detection reads {what} as {found.name!r}")
    return out


def _same_tokens(codec: Codec, a: Puzzle, b: Puzzle) -> bool:
    """Whether two puzzles encode alike in the codec's first family (True where the puzzle
    does not fit that family: nothing to compare there)."""
    fam = codec.families[0]
    try:
        return np.array_equal(codec.encode(a, family=fam), codec.encode(b, family=fam))
    except PtrmError:
        return True


def _transform_problems(codec: Codec, puzzle: Puzzle, solution: Solution, key: str) -> list[str]:
    out = []
    before = np.array(solution.grid, copy=True)
    for t in range(dihedral.COUNT):
        name = dihedral.NAMES[t]
        try:
            p2, s2 = codec.transform(puzzle, solution, t)
        except PtrmError:
            continue  # a symmetry this type does not have (6x6 sudoku's quarter turn)
        if s2 is None or np.shape(s2.grid) != (p2.rows, p2.cols):
            out.append(f"transform {name}: the solution is missing or not "
                       f"{size_name(p2.rows, p2.cols)}")
            continue
        v = _first_violation(codec, p2, s2)
        if v:
            out.append(f"transform {name}: the transformed solution fails {v}")
        for fam in codec.families:
            if _fits(codec, p2, fam):
                out += [f"transform {name}: {p}" for p in
                        _tokens_ok(f"encode_label[{fam.name}]",
                                   codec.encode_label(p2, s2, family=fam), fam)]
        p3, s3 = codec.transform(p2, s2, dihedral.INVERSE[t])
        if codec.key(p3) != key or s3 != solution:
            out.append(f"transform {name} then {dihedral.NAMES[dihedral.INVERSE[t]]} does not "
                       f"give back the original puzzle and solution")
        p4, s4 = codec.transform(puzzle, None, t)
        if s4 is not None or codec.key(p4) != codec.key(p2):
            out.append(f"transform {name} without a solution: expected (the same puzzle, None)")
    if codec.key(puzzle) != key or not np.array_equal(solution.grid, before):
        out.append("transform changed its input puzzle or solution in place")
    return out


def _trajectory_problems(codec: Codec, puzzle: Puzzle, solution: Solution) -> list[str]:
    out = []
    required = codec.required_cells(puzzle, solution)
    n = len(required)
    last = -1
    for k in sorted({0, 1, n // 2, n} & set(range(n + 1))):
        state = codec.trajectory(puzzle, solution, k)
        grid = np.asarray(state.grid)
        if grid.shape != (puzzle.rows, puzzle.cols):
            out.append(f"trajectory({k}) has shape {grid.shape}")
            continue
        filled = grid != codec.EMPTY
        wrong = np.argwhere(filled & (grid != np.asarray(solution.grid)))
        if len(wrong):
            out.append(f"trajectory({k}) disagrees with the solution at {len(wrong)} cell(s), "
                       f"first {cell_name(wrong[0][0], wrong[0][1])}")
        count = int(filled.sum())
        if count < last:
            out.append(f"trajectory({k}) has fewer filled cells ({count}) than a shorter one")
        last = count
        if k == n and any(grid[r, c] != solution.grid[r, c] for r, c in required):
            out.append(f"trajectory({n}) (all required moves) leaves a required cell empty")
        for fam in codec.families:
            if _fits(codec, puzzle, fam):
                out += [f"trajectory({k}): {p}" for p in
                        _tokens_ok(f"encode[{fam.name}]",
                                   codec.encode(puzzle, state, family=fam), fam)]
    return out


def _mutation_problems(codec: Codec, puzzle: Puzzle, solution: Solution, domain: list[int],
                       rng: np.random.Generator, max_mutations: int) -> list[str]:
    if len(domain) < 2:
        return []
    cells = [(r, c) for r in range(puzzle.rows) for c in range(puzzle.cols)
             if codec.is_answer_cell(puzzle, r, c)]
    picks = rng.permutation(len(cells))[:max_mutations]
    accepted = []
    for i in picks:
        r, c = cells[i]
        grid = np.array(solution.grid, copy=True)
        old = int(grid[r, c])
        grid[r, c] = rng.choice([v for v in domain if v != old])
        if not _first_violation(codec, puzzle, Solution(codec.name, grid)):
            accepted.append(f"{cell_name(r, c)} {old}->{int(grid[r, c])}")
    if accepted:
        return [f"verify accepts {len(accepted)} single-cell change(s) of a unique solution: "
                + ", ".join(accepted[:5])]
    return []


def _render_problems(codec: Codec, puzzle: Puzzle, solution: Solution) -> list[str]:
    from rich.console import Console

    out = []
    console = Console(file=io.StringIO(), width=200, color_system=None)
    for what, drawn in (("render(puzzle)", codec.render(puzzle, None)),
                        ("render(puzzle, solution)", codec.render(puzzle, solution))):
        if (why := render_problem(what, drawn)) is not None:
            out.append(why)
            continue
        console.print(drawn)
    return out


def _headerless(text: str) -> str:
    """`text` less a first line naming an installed type: the header-less grid `sniff` is
    asked about (`ptrm solve` reads a named type by its name and never asks)."""
    lines = text.strip().splitlines()
    if len(lines) > 1 and registry.type_named(lines[0].strip()) is not None:
        return "\n".join(lines[1:])
    return text


def _sniff_claim_problems(codec: Codec) -> list[str]:
    """`sniff` must claim only text that is unambiguously this type: a header-less grid that
    another installed codec's sniff already claims (its example less the line naming its
    type) becomes "ambiguous" in `ptrm solve` once this codec is installed, so a sniff that
    answers True to everything breaks every other type's header-less grids (a plain sudoku),
    while each sample of its own passes."""
    if not _overrides(codec, "sniff"):
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # other plugins' load failures are not ours to report
        others = [reg for name, reg in registry.registered().items()
                  if name != codec.name and isinstance(reg.codec.example, str)
                  and reg.codec.example.strip()]
    out = []
    for reg in others:
        text = _headerless(reg.codec.example)
        shown = "example" + (" less its type line" if text != reg.codec.example else "")
        try:
            mine = codec.sniff(text)
        except Exception:  # noqa: BLE001 - a sniff that raises is reported per sample
            continue
        if not _is_bool(mine):  # said as what it is, not as a claim ptrm reads into it
            return [f"sniff returned {type(mine).__name__} on {reg.codec.name}'s {shown}, "
                    "not a bool"]
        try:
            theirs = bool(reg.codec.sniff(text))
        except Exception:  # noqa: BLE001 - their sniff is their own conformance's business
            continue
        if not theirs:
            continue  # `ptrm solve` does not read it as theirs without a type line anyway
        if mine:
            out.append(f"sniff claims {reg.codec.name}'s {shown} ({reg.provider}), which "
                       f"{reg.codec.name}'s own sniff claims: `ptrm solve` would call such "
                       f"input ambiguous instead of reading it as {reg.codec.name}; answer "
                       f"True only for text that is unambiguously {codec.name}")
    return out


def _sniff_problems(codec: Codec, key: str) -> list[str]:
    """`sniff` is asked about every header-less text ptrm auto-detects, other types' puzzles
    and garbage included: it must answer True or False, never raise (ptrm warns on every
    auto-detection and counts a raise as "not mine", so the type's plain grids go unread)."""
    if not _overrides(codec, "sniff"):
        return []
    texts = [("its key", key), ("empty text", ""), ("other text", "hello world")]
    if len(key.splitlines()) > 1:  # a grid key without its header line: what sniff is for
        texts.insert(1, ("its key less the first line", "\n".join(key.splitlines()[1:])))
    out = []
    for what, text in texts:
        try:
            said = codec.sniff(text)
        except Exception as e:
            out.append(f"sniff raised {type(e).__name__} on {what}: {e} (it must answer True "
                       "or False, whatever the text)")
            break
        if not _is_bool(said):
            out.append(f"sniff returned {type(said).__name__} on {what}, not a bool")
            break
    return out
