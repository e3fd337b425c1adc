"""The codec contract (`ptrm_cli.conformance`) over every installed codec, with samples from
PPBench's golden records, and checks that the conformance checker itself catches broken codecs."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from ptrm_cli import codec as registry
from ptrm_cli.codec import Solution
from ptrm_cli.conformance import assert_conformant, check_codec, samples_from_records
from ptrm_cli.errors import PtrmError

import pzpr_oracle

# Known, documented departures from the contract, each matched against the problem text.
KNOWN = {
    # The vendored pzprv3 form stores room ids, so a heyawake URL's loose borders (walls that
    # close no room) cannot survive it (PPBENCH_FORMATS.md §4.4); `to_pzprv3(..., filever=1)`
    # keeps them. Golden has one such 8x8 puzzle.
    "heyawake": [r"heyawake/8/8/022gkf3gc2007o00o01s01v07\): parse\(to_pzprv3\) gives a "
                 r"different puzzle"],
}


def _installed_names() -> list[str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sorted(registry.registered())


@pytest.mark.parametrize("name", sorted(set(pzpr_oracle.GOLDEN_TYPES) | set(_installed_names())))
def test_codec_conforms(name, installed_codec):
    codec = installed_codec(name)
    records = pzpr_oracle.golden_by_type(name)
    if not records:
        why = pzpr_oracle.find_golden()[1] or f"PPBench's golden set has no {name!r} puzzles"
        pytest.skip(why)
    samples = samples_from_records(codec, records, source=f"golden {name}")
    problems = check_codec(codec, samples)
    known = [re.compile(p) for p in KNOWN.get(name, [])]
    unexpected = [p for p in problems if not any(k.search(p) for k in known)]
    assert not unexpected, f"{name}: {len(unexpected)} problem(s):\n" + "\n".join(unexpected[:40])


# -- the checker catches what it claims to -----------------------------------------------------

@pytest.fixture(scope="module")
def sudoku_samples(installed_codec):
    codec = installed_codec("sudoku")
    records = pzpr_oracle.golden_by_type("sudoku")[:3]
    if not records:
        pytest.skip(pzpr_oracle.find_golden()[1])
    return type(codec), samples_from_records(codec, records)


def _problems(cls, samples, **kw):
    return check_codec(cls(), samples, **kw)


def test_a_real_codec_passes(sudoku_samples):
    cls, samples = sudoku_samples
    assert_conformant(cls(), samples)


def test_catches_a_verifier_that_accepts_everything(sudoku_samples):
    cls, samples = sudoku_samples

    class Lenient(cls):
        def verify(self, puzzle, solution):
            return []

    problems = _problems(Lenient, samples)
    assert any("verify accepts" in p and "single-cell change" in p for p in problems), problems
    with pytest.raises(AssertionError, match="does not conform"):
        assert_conformant(Lenient(), samples)


def test_catches_labels_outside_the_vocabulary_and_bad_decodes(sudoku_samples):
    cls, samples = sudoku_samples

    class BadTokens(cls):
        def encode_label(self, puzzle, solution, family=None):
            return super().encode_label(puzzle, solution, family) + 1000

        def decode(self, puzzle, tokens, family=None):
            sol = super().decode(puzzle, tokens, family)
            return Solution(sol.type, np.zeros_like(sol.grid))

    problems = _problems(BadTokens, samples)
    assert any("outside the 'ppbench' vocabulary" in p for p in problems), problems
    assert not any("decode(encode_label)" in p for p in problems)  # not reached: bad ids

    class BadDecode(cls):
        def decode(self, puzzle, tokens, family=None):
            sol = super().decode(puzzle, tokens, family)
            return Solution(sol.type, np.zeros_like(sol.grid))

    problems = _problems(BadDecode, samples)
    assert any("decode(encode_label) differs" in p for p in problems), problems


def test_catches_a_transform_without_inverse_and_bad_trajectories(sudoku_samples):
    cls, samples = sudoku_samples

    class BadTransform(cls):
        def transform(self, puzzle, solution, t):
            return super().transform(puzzle, solution, 1 if t == 3 else t)

        def trajectory(self, puzzle, solution, k):
            state = super().trajectory(puzzle, solution, k)
            state.grid[state.grid > 0] = 1  # wrong digits
            return state

    problems = _problems(BadTransform, samples)
    assert any("transform rot270 then rot90 does not give back" in p for p in problems), problems
    assert any("trajectory(" in p and "disagrees with the solution" in p for p in problems)


def test_catches_an_unregistered_codec_and_a_crash(sudoku_samples):
    cls, samples = sudoku_samples

    class Renamed(cls):
        name = "sudoku-copy"

        def render(self, puzzle, solution=None):
            raise RuntimeError("boom")

    problems = _problems(Renamed, samples, mutations=False)
    assert any("no `ptrm.codecs` entry point named 'sudoku-copy'" in p for p in problems)
    assert any("render: raised RuntimeError: boom" in p for p in problems), problems
    assert not _problems(cls, samples, registered=False)


# -- found by a QA pass writing a third-party plugin (binairo, 2nd pass) -----------------------

def test_families_as_a_list_is_named(sudoku_samples):
    """`families = [FAM]` passed conformance, while `ptrm` skipped the plugin saying it
    "declares no token family"."""
    cls, samples = sudoku_samples

    class Listed(cls):
        families = list(cls.families)

    problems = _problems(Listed, samples, registered=False)
    assert problems == ["Codec.families must be a tuple of Family, not a list (write "
                        "`families = (MY_FAMILY,)`)"], problems


def test_a_verify_that_raises_is_named_and_the_rest_still_checked(sudoku_samples):
    """A raising verify ended each sample's report with a bare "raised KeyError" (no method
    named) and hid what the token, format and render checks would have found."""
    cls, samples = sudoku_samples

    class Raises(cls):
        def verify(self, puzzle, solution):
            raise KeyError("oops")

        def render(self, puzzle, solution=None):
            raise RuntimeError("boom")

    problems = _problems(Raises, samples[:1], registered=False)
    assert any(p.endswith("verify raised KeyError: 'oops'") for p in problems), problems
    assert any("render: raised RuntimeError: boom" in p for p in problems), problems


def test_a_verify_answering_the_wrong_thing_is_one_finding_per_section(sudoku_samples):
    """verify returning a str also gave "'str' object has no attribute 'code'" (transforms);
    returning None, "verify accepts 12 single-cell change(s)" (mutations)."""
    cls, samples = sudoku_samples

    class Str(cls):
        def verify(self, puzzle, solution):
            return "fine"

    problems = _problems(Str, samples[:1], registered=False)
    assert any(p.endswith("verify returned str, not a list of Violation") for p in problems)
    assert not any("has no attribute" in p or "verify accepts" in p for p in problems), problems


def test_catches_a_render_that_is_not_renderable(sudoku_samples):
    """`ptrm solve` printed `<object object at 0x...>` for the board, and conformance passed."""
    cls, samples = sudoku_samples

    class Opaque(cls):
        def render(self, puzzle, solution=None):
            return object()

    problems = _problems(Opaque, samples[:1], registered=False, mutations=False)
    assert any("render(puzzle) returned object, not a Rich renderable" in p
               for p in problems), problems


def test_catches_a_sniff_that_raises_or_answers_non_bools(sudoku_samples):
    """sniff was never checked; at run time a raising one is a warning on every
    auto-detection, and its type's header-less grids are never recognised."""
    cls, samples = sudoku_samples

    class Raises(cls):
        def sniff(self, text):
            return text.splitlines()[0].isdigit()  # IndexError on empty text

    class Truthy(cls):
        def sniff(self, text):
            return text.strip()

    problems = _problems(Raises, samples[:1], registered=False, mutations=False)
    assert any("sniff raised IndexError on empty text" in p for p in problems), problems
    problems = _problems(Truthy, samples[:1], registered=False, mutations=False)
    assert any("sniff returned str on its key, not a bool" in p for p in problems), problems


def test_catches_a_sniff_that_claims_other_types_grids(sudoku_samples):
    """A sniff answering True to everything passed every check (its own samples are its own),
    yet once installed it made every header-less sudoku and maze grid "ambiguous" in
    `ptrm solve`, the README's first command included."""
    cls, samples = sudoku_samples

    class Greedy(cls):
        name = "greedy"

        def sniff(self, text):
            return True

    class Modest(cls):
        name = "modest"

        def sniff(self, text):
            return text.startswith("modest-only")

    problems = _problems(Greedy, samples[:1], registered=False, mutations=False)
    claims = [p for p in problems if p.startswith("sniff claims ")]
    assert any(p.startswith("sniff claims sudoku's example less its type line (ptrm ")
               and "`ptrm solve` would call such input ambiguous instead of reading it as "
                   "sudoku" in p for p in claims), problems
    assert not any(p.startswith("sample") for p in claims)  # said once, not once per sample
    problems = _problems(Modest, samples[:1], registered=False, mutations=False)
    assert not [p for p in problems if p.startswith("sniff")], problems
    # the built-in sniffs claim nothing another codec claims: no finding for them
    assert not [p for p in _problems(cls, samples[:1], mutations=False)
                if p.startswith("sniff")]


def test_a_decode_of_the_wrong_shape_is_said_in_one_line(sudoku_samples):
    cls, samples = sudoku_samples

    class Small(cls):
        def decode(self, puzzle, tokens, family=None):
            return Solution(self.name, np.zeros((2, 2), np.int16))

    problems = _problems(Small, samples[:1], registered=False, mutations=False)
    assert any("decode of arbitrary tokens returned a grid of shape (2, 2) for a 9x9 puzzle"
               in p for p in problems), problems
    assert not any("\n" in p for p in problems), problems


def test_a_size_that_is_not_square_is_said_rows_first_and_spelled_out(installed_codec):
    """A 3x4 maze's findings said "3x4" (and a transposed one "4x3"), which reads both ways:
    rows first and spelled out now, as `codec.size_name` says every size that is not square."""
    codec = installed_codec("maze")
    sample = codec.from_record({"type": "maze", "text": "Sooo\n.##o\n...G"})

    class Small(type(codec)):
        def decode(self, puzzle, tokens, family=None):
            return Solution(self.name, np.zeros((2, 2), np.int16))

        def transform(self, puzzle, solution, t):
            p2, _ = super().transform(puzzle, solution, t)
            return p2, Solution(self.name, np.zeros((2, 2), np.int16))

    problems = _problems(Small, [sample], registered=False, mutations=False)
    assert problems and all(p.startswith("sample 0 (3 rows x 4 columns)") for p in problems)
    assert any(p.endswith("decode of arbitrary tokens returned a grid of shape (2, 2) for a "
                          "3 rows x 4 columns puzzle") for p in problems), problems
    assert any(p.endswith("the solution is missing or not 4 rows x 3 columns")
               for p in problems), problems


# -- found by a QA pass writing a third-party plugin (kurodoko, 3rd pass) ----------------------

def test_a_key_that_does_not_parse_back_is_caught_without_url_or_pzprv3(sudoku_samples):
    """A codec with no to_url/to_pzprv3 whose key its parse cannot read passed conformance,
    then `ptrm build-data` dropped every one of its puzzles as a "decode error" (a dataset
    stores each puzzle as its key)."""
    cls, samples = sudoku_samples

    class KeyOnly(cls):  # no writers: the key is the dataset's text
        to_url = registry.Codec.to_url
        to_pzprv3 = registry.Codec.to_pzprv3

    class GoodKey(KeyOnly):
        def key(self, puzzle):
            return cls.to_url(self, puzzle)  # a URL: parse reads it

    class BadKey(KeyOnly):
        def key(self, puzzle):
            return "sudoku #" + "".join(str(int(v)) for v in np.asarray(puzzle.clues).ravel())

    assert not _problems(GoodKey, samples[:1], registered=False, mutations=False)
    problems = _problems(BadKey, samples[:1], registered=False, mutations=False)
    assert any("parse(key) fails" in p and "override Codec.key" in p for p in problems), problems


def test_a_section_crash_names_the_method_that_raised(sudoku_samples):
    """A decode that raised was reported as "tokens: raised IndexError: ..." and a verify that
    raised, under transforms and mutations, as "transforms: raised ValueError": the author
    could not tell which of their methods failed."""
    cls, samples = sudoku_samples

    class DecodeRaises(cls):
        def decode(self, puzzle, tokens, family=None):
            raise IndexError("decode blew up")

    class VerifyRaises(cls):
        def verify(self, puzzle, solution):
            raise ValueError("verify blew up")

    problems = _problems(DecodeRaises, samples[:1], registered=False, mutations=False)
    assert any(p.endswith("tokens: decode raised IndexError: decode blew up")
               for p in problems), problems
    problems = _problems(VerifyRaises, samples[:1], registered=False)
    assert any(p.endswith("transforms: verify raised ValueError: verify blew up")
               for p in problems), problems
    assert any(p.endswith("mutations: verify raised ValueError: verify blew up")
               for p in problems), problems
    assert not any(": raised" in p for p in problems), problems


def test_a_verify_listing_non_violations_says_what_it_listed(sudoku_samples):
    """verify returning ["bad"] was reported as "verify returned list, not a list of
    Violation", a sentence that contradicts itself, and "transforms: raised TypeError"."""
    cls, samples = sudoku_samples

    class Strings(cls):
        def verify(self, puzzle, solution):
            return ["row 1 repeats a digit"]

    problems = _problems(Strings, samples[:1], registered=False)
    assert any(p.endswith("): verify returned a list of str, not a list of Violation")
               for p in problems), problems
    assert any(p.endswith("transforms: verify returned a list of str, not a list of "
                          "Violation") for p in problems), problems
    assert not any("raised TypeError" in p for p in problems), problems


def test_a_decode_that_returns_no_solution_is_said_so(sudoku_samples):
    """decode returning the grid itself (a list) gave "tokens: raised AttributeError: 'list'
    object has no attribute 'grid'"."""
    cls, samples = sudoku_samples

    class Bare(cls):
        def decode(self, puzzle, tokens, family=None):
            return super().decode(puzzle, tokens, family).grid.tolist()

    problems = _problems(Bare, samples[:1], registered=False, mutations=False)
    assert any(p.endswith("decode(encode_label) returned list, not a Solution")
               for p in problems), problems
    assert not any("has no attribute" in p for p in problems), problems


def test_catches_puzzle_violations_that_refuse_a_solved_puzzle(sudoku_samples):
    """`ptrm solve` refuses a puzzle its codec's `puzzle_violations` finds anything in, before
    loading a model: one that finds something in a solved puzzle would refuse solvable ones."""
    cls, samples = sudoku_samples

    class Refusing(cls):
        def puzzle_violations(self, puzzle):
            return [registry.Violation("xxStuck", "no way in")]

    class Odd(cls):
        def puzzle_violations(self, puzzle):
            return "fine"

    problems = _problems(Refusing, samples[:1], registered=False, mutations=False)
    assert any(p.endswith("puzzle_violations rejects a solved puzzle: xxStuck (no way in)")
               for p in problems), problems
    problems = _problems(Odd, samples[:1], registered=False, mutations=False)
    assert any(p.endswith("puzzle_violations returned str, not a list of Violation")
               for p in problems), problems


# -- the members for people: `example` and `legend` --------------------------------------------

def test_catches_an_example_that_ptrm_solve_would_not_run(sudoku_samples):
    """`ptrm codecs TYPE` shows the example as a puzzle to run; nothing checked that it parses,
    that `ptrm solve` reads it as this type, or that `ptrm solve` does not refuse it at once."""
    cls, samples = sudoku_samples
    body = cls.example.splitlines()[1:]  # the example's grid, less the line naming its type

    class Unreadable(cls):
        example = "sudoku\n" + "\n".join(body[:-1])  # a row short

    class Misnamed(cls):  # its own parse skips the first line, which names another type
        example = "lightup\n" + "\n".join(body)

        def parse(self, text, *, source=None):
            return super().parse("\n".join(text.splitlines()[1:]), source=source)

    clash = cls().parse(cls.example).puzzle.clues.copy()
    r, c = np.argwhere(clash == 0)[0]
    clash[r, c] = next(v for v in clash[r] if v)  # a digit its row already gives

    class Clashing(cls):
        example = "sudoku\n" + "\n".join(" ".join(str(v) if v else "." for v in row)
                                         for row in clash)

    problems = _problems(Unreadable, samples[:1], registered=False, mutations=False)
    assert any(p.startswith("example does not parse: sudoku.example") for p in problems), problems
    problems = _problems(Misnamed, samples[:1], mutations=False)
    # what `ptrm solve` makes of it, from the installed codecs
    assert registry.detect(Misnamed.example).name == "lightup"
    assert "example: `ptrm solve` reads it as 'lightup' without --codec" in problems, problems
    broken = Clashing().puzzle_violations(Clashing().parse(Clashing.example).puzzle)
    problems = _problems(Clashing, samples[:1], registered=False, mutations=False)
    assert broken and (f"example: puzzle_violations finds it unsolvable, so `ptrm solve` "
                       f"refuses it: {broken[0].code} ({broken[0].message})") in problems, problems
    # the real example passes all three
    assert not [p for p in _problems(cls, samples[:1], mutations=False) if "example" in p]


def test_catches_a_legend_that_misses_a_value_or_has_no_words(sudoku_samples):
    """`ptrm codecs TYPE` and `ptrm solve --json` (solution.legend) give the legend as what an
    answer's values mean: one missing a value the answers hold, or EMPTY, or with an empty
    meaning, passed conformance."""
    cls, samples = sudoku_samples
    shown = sorted({int(v) for _, s in samples for v in np.unique(s.grid)})  # what answers hold
    top = shown[-1]

    class Short(cls):
        legend = {v: m for v, m in cls.legend.items() if v != top}

    class NoEmpty(cls):
        legend = {v: m for v, m in cls.legend.items() if v != cls.EMPTY}

    class Wordless(cls):
        legend = {**cls.legend, top: ""}

    problems = _problems(Short, samples, registered=False, mutations=False)
    assert [p for p in problems if p.startswith("legend")] == [
        f"legend does not name {top}: value(s) that decode(encode_label(...)) gives for the "
        "samples"], problems
    problems = _problems(NoEmpty, samples, registered=False, mutations=False)
    assert [p for p in problems if p.startswith("legend")] == [
        f"legend does not name EMPTY ({cls.EMPTY})"], problems
    problems = _problems(Wordless, samples, registered=False, mutations=False)
    assert [p for p in problems if p.startswith("legend")] == [
        f"legend is not {registry.LEGEND_SHAPE}: {Wordless.legend!r:.80}"], problems
    assert not [p for p in _problems(cls, samples, mutations=False) if "legend" in p]


def test_catches_a_from_record_without_the_source_keyword(sudoku_samples):
    """Written as docs/PLUGINS.md's table once showed it, `from_record(self, record)` passed
    conformance and `ptrm build-data`, then `ptrm solve RECORD.json` (which passes source=)
    failed with a TypeError blamed on the record."""
    cls, samples = sudoku_samples

    class NoSource(cls):
        def from_record(self, record):
            return super().from_record(record)

    problems = _problems(NoSource, samples[:1], registered=False, mutations=False)
    assert problems == ["from_record must take the keyword argument(s) ptrm passes: "
                        "def from_record(self, ..., *, source=None)"]
    records = pzpr_oracle.golden_by_type("sudoku")[:1]
    assert len(samples_from_records(NoSource(), records)) == 1  # no source given: none passed


def test_catches_a_key_that_loses_part_of_the_puzzle(sudoku_samples):
    """A key that gives itself back but drops the givens (here: every one) passed, and a
    dataset would have stored every puzzle as the empty board."""
    cls, samples = sudoku_samples

    class Lossy(cls):  # no writers: the key is the dataset's text
        to_url = registry.Codec.to_url
        to_pzprv3 = registry.Codec.to_pzprv3

        def key(self, puzzle):
            return "sudoku\n" + "\n".join([". " * puzzle.cols] * puzzle.rows)

    problems = _problems(Lossy, samples[:1], registered=False, mutations=False)
    assert any("parse(key) gives a puzzle that encodes differently from the original" in p
               for p in problems), problems


def test_catches_violation_cells_off_the_board(sudoku_samples):
    """A verify naming cells 50 rows past the board passed, and `ptrm solve` printed
    `r51c51`; every caller now holds verify to cells on the board."""
    cls, samples = sudoku_samples

    class Far(cls):
        def verify(self, puzzle, solution):
            return [registry.Violation(v.code, v.message,
                                       tuple((r + 50, c + 50) for r, c in v.cells))
                    for v in super().verify(puzzle, solution)]

    problems = _problems(Far, samples[:1], registered=False)
    assert any("which is not on the 9x9 board" in p for p in problems), problems
    puzzle, solution = samples[0]
    wrong = registry.Solution("sudoku", np.zeros_like(solution.grid))  # every blank empty
    with pytest.raises(registry.CodecBug, match=r"named the cell \(5\d, 5\d\)"):
        registry.violations_of(Far(), puzzle, wrong)


def test_a_codec_without_url_or_key_is_told_to_override_key(sudoku_samples):
    """`ptrm build-data` dropped every record as "decode error: PtrmError: binairo: no
    puzz.link URL form", which named no fix."""
    cls, samples = sudoku_samples

    class NoKey(cls):
        to_url = registry.Codec.to_url
        key = registry.Codec.key

    with pytest.raises(PtrmError, match="no key: the default key is the puzzle's puzz.link URL, "
                                        "and this codec writes none") as err:
        NoKey().key(samples[0][0])
    assert err.value.hint.startswith("override Codec.key with text your parse reads back")


# -- found by a QA pass over the checker: methods answering the wrong type --------------------

def test_a_sniff_answering_a_non_bool_is_said_so_not_read_as_a_claim(sudoku_samples):
    """A sniff returning "yes" was reported, codec-wide, only as claiming arc's example: the
    author was told their sniff is greedy, not that it answers the wrong type."""
    cls, samples = sudoku_samples

    class Yes(cls):
        def sniff(self, text):
            return "yes"

    problems = _problems(Yes, samples[:1], registered=False, mutations=False)
    wide = [p for p in problems if not p.startswith("sample")]
    assert len(wide) == 1 and re.fullmatch(r"sniff returned str on \w+'s example( less its "
                                           r"type line)?, not a bool", wide[0]), problems


def test_url_ids_as_a_str_is_named(sudoku_samples):
    """`url_ids = "sudoku"` passed, and `--codec s` (a letter of it) then read as sudoku."""
    cls, samples = sudoku_samples

    class Bare(cls):
        url_ids = "sudoku"

    class Odd(cls):
        url_ids = ("sudoku", 5)

    assert _problems(Bare, samples[:1], registered=False, mutations=False) == [
        "Codec.url_ids must be a tuple of str, not a str (write `url_ids = ('sudoku',)`)"]
    assert _problems(Odd, samples[:1], registered=False, mutations=False) == [
        "Codec.url_ids must be a tuple of non-empty str; it holds 5"]


def test_a_judges_answering_a_non_bool_is_named(sudoku_samples):
    """judges was never checked: `ptrm solve` takes its truth, so a None leaves every answer
    "not judged"."""
    cls, samples = sudoku_samples

    class Vague(cls):
        def judges(self, puzzle):
            return None

    class Raises(cls):
        def judges(self, puzzle):
            raise KeyError("meta")

    problems = _problems(Vague, samples[:1], registered=False, mutations=False)
    assert [p.split("): ", 1)[1] for p in problems] == ["judges returned NoneType, not a bool"]
    problems = _problems(Raises, samples[:1], registered=False, mutations=False)
    assert any(p.endswith("judges: raised KeyError: 'meta'") for p in problems), problems


def test_a_key_that_is_not_text_is_blamed_on_key(sudoku_samples):
    """A key returning None was reported as "sniff: raised AttributeError" (or, without a
    sniff, "parse raised AttributeError"), and where parse and sniff were not reached, not at
    all: None == None passed every "same key" check."""
    cls, samples = sudoku_samples

    class NoKey(cls):
        def key(self, puzzle):
            return None

    class NoKeyNoSniff(NoKey):
        sniff = registry.Codec.sniff
        to_url = registry.Codec.to_url
        to_pzprv3 = registry.Codec.to_pzprv3

    for bad in (NoKey, NoKeyNoSniff):
        problems = _problems(bad, samples[:1], registered=False, mutations=False)
        assert [p.split("): ", 1)[1] for p in problems] == [
            "key returned NoneType, not a str (text that identifies the puzzle and that your "
            "parse reads back)"], problems
