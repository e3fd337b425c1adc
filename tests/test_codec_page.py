"""`ptrm codecs TYPE`: a user's page first (rules, inputs with an example, the answer's legend,
the bundled model's standing), the codec's developer notes after it with --dev; and the legend
`ptrm solve --json` gives as solution.legend. Everything expected here is read from the codecs
themselves, so the tests hold whatever words a codec chooses."""

from __future__ import annotations

import json
import sys
import types
import warnings
from importlib import metadata

import numpy as np
import pytest
from typer.testing import CliRunner

from ptrm_cli import codec as registry
from ptrm_cli import codec_page
from ptrm_cli.app import app
from ptrm_cli.codec import Codec, Family, Parsed, Puzzle, Solution
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_cli.vocab import PAD, Vocab

BUILT_IN = ("sudoku", "lightup", "nurikabe", "heyawake", "tapa", "shakashaka", "maze", "arc")


def codecs_page(*args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = CliRunner().invoke(app, ["codecs", *args])
    assert "Traceback" not in result.output, result.output
    return result


def flat(text: str) -> str:
    """Output with its whitespace runs as one space: a terminal may wrap the prose anywhere."""
    return " ".join(text.split())


@pytest.mark.parametrize("name", BUILT_IN)
def test_the_page_puts_the_user_first(installed_codec, name):
    """The page began with the codec's developer notes (token layout, Puzzle.clues); a user
    wants the rules, the inputs with an example, what the answer's values mean and how the
    bundled model does, and the notes only after, with --dev."""
    codec = installed_codec(name)
    result = codecs_page(name)
    assert result.exit_code == 0, result.output
    out = flat(result.output)
    assert codec.rules and flat(codec.rules) in out
    example = codec_page.example_of(codec)
    assert example is not None and example.forms
    for text in example.forms.values():  # the example, in every form the codec writes
        assert all(line.strip() in result.output for line in text.splitlines())
    for value, meaning in registry.legend_of(codec).items():
        assert f"{value} {flat(meaning)}" in out
    standing = codec_page.model_standing(codec)
    if standing is not None:
        assert flat(standing) in out
    heads = [out.index(h) for h in ("Rules", "Input", "Answer")]
    assert heads == sorted(heads)
    doc = codec_page.docstring(codec)
    notes = next(line for line in doc.splitlines() if "Tokens" in line or "tokens" in line)
    assert flat(notes) not in out, "developer notes without --dev"
    dev = codecs_page(name, "--dev")
    assert dev.exit_code == 0, dev.output
    assert flat(dev.output).index(flat(notes)) > flat(dev.output).index("Answer")


@pytest.mark.parametrize("name", BUILT_IN)
def test_each_example_is_read_as_its_type_and_the_legend_covers_every_answer(installed_codec,
                                                                             name):
    """The example is what a user would type: `ptrm solve` reads it without --codec. The
    legend names every value an answer can hold: all that `decode` makes of any token."""
    codec = installed_codec(name)
    assert registry.detect(codec.example).name == name
    parsed = codec.parse(codec.example)
    assert parsed.format in codec_page.FORMS
    legend = registry.legend_of(codec)
    assert all(isinstance(m, str) and m for m in legend.values())
    for family in codec.families:
        try:
            codec.encode(parsed.puzzle, family=family)
        except PtrmError:  # a family that cannot hold the example (sudoku-native: 9x9 only)
            continue
        seen = set()
        for t in range(len(family.vocab)):
            tokens = np.full(family.seq_len, t, dtype=np.int64)
            seen |= {int(v) for v in np.ravel(codec.decode(parsed.puzzle, tokens, family).grid)}
        assert seen <= set(legend), (family.name, seen - set(legend))


def test_dev_without_a_type_is_refused():
    """--dev adds one type's developer notes: without TYPE there is no page to add them to,
    and the table would be printed as if the option did something."""
    result = codecs_page("--dev")
    assert result.exit_code == 2 and result.stdout == ""
    assert "--dev applies to one type: ptrm codecs TYPE --dev" in result.output


def test_json_page_has_the_same_parts(installed_codec):
    codec = installed_codec("lightup")
    doc = json.loads(codecs_page("lightup", "--json").stdout)
    assert doc["rules"] == codec.rules
    assert doc["legend"] == {str(v): m for v, m in registry.legend_of(codec).items()}
    assert doc["examples"] == codec_page.example_of(codec).forms
    assert set(doc["examples"]) >= {"url", "pzprv3", "grid"}
    assert doc["doc"] == codec_page.docstring(codec)  # kept: scripts read it


# -- a third-party codec that gives only what the contract requires -----------------------------

MINI = Family("mini", 3, 3, Vocab("mini", (PAD, "mini.off", "mini.on")))


class Mini(Codec):
    """Mini: a test plugin that only has the required members. DOCSTRING-MARK."""

    name = "mini"
    description = "a plugin with only the required members"
    families = (MINI,)

    def parse(self, text, *, source=None):
        rows = [ln.split() for ln in text.strip().splitlines()]
        if not rows or {len(r) for r in rows} != {3} or len(rows) != 3:
            raise ParseError("mini: expected 3 rows of 3 cells", source=source)
        return Parsed(Puzzle(self.name, 3, 3, np.zeros((3, 3), np.int16)), None, "grid")

    def encode(self, puzzle, state=None, family=None):
        return np.ones(MINI.seq_len, np.int64)

    def encode_label(self, puzzle, solution, family=None):
        return np.ones(MINI.seq_len, np.int64)

    def decode(self, puzzle, tokens, family=None):
        return Solution(self.name, np.zeros((3, 3), np.int16))

    def verify(self, puzzle, solution):
        return []

    def transform(self, puzzle, solution, t):
        return puzzle, solution

    def render(self, puzzle, solution=None):
        return "mini board"


@pytest.fixture
def with_plugin(monkeypatch):
    """Install `cls` as the entry point `name` (what `pip install` of a plugin does)."""
    real = metadata.entry_points

    def install(name: str, cls):
        module = types.ModuleType("ptrm_test_page_plugin")
        setattr(module, cls.__name__, cls)
        monkeypatch.setitem(sys.modules, "ptrm_test_page_plugin", module)
        ep = metadata.EntryPoint(name, f"ptrm_test_page_plugin:{cls.__name__}",
                                 registry.ENTRY_POINT_GROUP)

        def entry_points(**kw):
            eps = list(real(**kw))
            return eps + [ep] if kw.get("group") == registry.ENTRY_POINT_GROUP else eps

        monkeypatch.setattr(registry.metadata, "entry_points", entry_points)
        registry.reload()

    yield install
    registry.reload()


def test_a_plugin_with_only_the_required_members_still_has_a_page(with_plugin):
    with_plugin("mini", Mini)
    result = codecs_page("mini")
    assert result.exit_code == 0, result.output
    out = flat(result.output)
    assert Mini.description in out
    # what the codec does not give: the default legend, and its docstring, all it says
    assert "0 nothing entered (EMPTY)" in out and "DOCSTRING-MARK" in out
    standing = codec_page.model_standing(registry.get("mini"))
    if standing is not None:
        assert flat(standing) in out and "does not solve mini" in standing
    doc = json.loads(codecs_page("mini", "--json").stdout)
    assert doc["legend"] == {"0": "nothing entered (EMPTY)"} and doc["rules"] is None
    assert doc["examples"] == {}


def test_a_plugin_whose_example_does_not_parse_keeps_its_page(with_plugin):
    class BadExample(Mini):
        rules = "Some rules."
        example = "not three rows"
        legend = {0: "off", 1: "on"}

    with_plugin("mini", BadExample)
    result = codecs_page("mini")
    assert result.exit_code == 0, result.output
    out = flat(result.output)
    assert "example its parse does not read" in out  # a warning naming the codec's bug
    assert "Some rules." in out and "1 on" in out


@pytest.mark.parametrize("render, said", [
    (lambda self, puzzle, solution=None: 7, "render returned int, not a Rich renderable"),
    (lambda self, puzzle, solution=None: 1 / 0, "raised ZeroDivisionError in render")])
def test_a_render_that_breaks_is_warned_about_and_the_page_goes_on(with_plugin, render, said):
    """The page showed the example without its drawing and said nothing: the plugin's author
    never learnt why (`ptrm solve` said it was a codec bug)."""
    class Undrawable(Mini):
        example = ". . .\n. . .\n. . ."

    Undrawable.render = render
    with_plugin("mini", Undrawable)
    result = codecs_page("mini")
    assert result.exit_code == 0, result.output
    out = flat(result.output)
    assert "codec 'mini'" in out and said in out and "shown as text only" in out
    assert ". . . . . . . . ." in out  # the example itself, as text


@pytest.mark.parametrize("legend", [{"0": "off"}, {0: 1}, [(0, "off")], {True: "on"},
                                    {0: "off", 1: ""}, {0: " "},  # a value that says nothing
                                    {}])  # nothing at all
def test_a_legend_that_is_not_values_to_words_is_the_codecs_bug(legend, with_plugin):
    class Odd(Mini):
        pass

    Odd.legend = legend
    with pytest.raises(registry.CodecBug, match="legend"):
        registry.legend_of(Odd())
    # the page says so, naming the codec (an empty legend was a ValueError from max())
    with_plugin("mini", Odd)
    result = codecs_page("mini")
    assert result.exit_code == 2 and "codec 'mini'" in flat(result.output), result.exception


def test_rules_that_are_not_text_are_the_codecs_bug(with_plugin):
    """`rules = ("...",)` (a trailing comma) was an AttributeError in the page."""
    class Comma(Mini):
        rules = ("Shade the cells.",)

    with pytest.raises(registry.CodecBug, match="rules that are a tuple"):
        registry.rules_of(Comma())
    with_plugin("mini", Comma)
    for args in (("mini",), ("mini", "--json")):
        result = codecs_page(*args)
        assert result.exit_code == 2 and "codec 'mini'" in flat(result.output), result.exception


def test_numpy_integers_are_legend_values():
    class Numpy(Mini):
        legend = {np.int16(1): "on", 0: "off"}

    assert registry.legend_of(Numpy()) == {0: "off", 1: "on"}


# -- ptrm solve --json ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    from fixtures_models import save_tiny_checkpoint
    from ptrm_codecs.families import PPBENCH

    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "tiny", PPBENCH.vocab)


@pytest.mark.parametrize("name", ["lightup", "shakashaka"])
def test_solve_json_says_what_the_grid_values_mean(installed_codec, ckpt, tmp_path, name):
    """solution.grid's values were documented only per codec: --json now carries the codec's
    legend beside the grid, and every value in the grid is in it."""
    codec = installed_codec(name)
    f = tmp_path / "puzzle.txt"
    f.write_text(codec.example + "\n")
    result = CliRunner().invoke(app, ["solve", str(f), "-c", str(ckpt), "--K", "2", "--D", "1",
                                      "--device", "cpu", "--json"])
    assert result.exit_code in (0, 1), result.output
    solution = json.loads(result.stdout)["solution"]
    assert {"pzprv3", "grid", "url"} <= set(solution)  # the keys there were, unchanged
    assert solution["legend"] == {str(v): m for v, m in registry.legend_of(codec).items()}
    assert solution["legend"] == registry.legend_json(codec)
    assert {str(v) for row in solution["grid"] for v in row} <= set(solution["legend"])


# -- the bundled model's standing, read from its card (config.json) ----------------------------

RUN = ("(`ptrm solve` adds noisy rollouts and checks each against the rules; `ptrm eval` "
       "measures both)")


@pytest.mark.parametrize("family, meta, says", [
    ("ppbench", {"trained_on": {"lightup": "10x10"},
                 "val": {"steps": 16, "exact_accuracy_by_type": {"lightup": 0.95}}},
     "the bundled model trained on 10x10 lightup puzzles; it got 95% of its validation "
     f"lightup puzzles exactly right (by their labels) in the trainer's noiseless pass of 16 "
     f"steps {RUN}"),
    ("ppbench", {"trained_on": {"*": "any"}},
     "the bundled model trained on lightup puzzles of any size"),
    ("ppbench", {"trained_on": {"sudoku": "9x9"}},
     "the bundled model reads lightup's token family (ppbench) but did not train on lightup: "
     "it may not find a valid answer"),
    ("maze", {}, "the bundled model does not solve lightup puzzles (it reads the maze token "
                 "family, and lightup is encoded in the ppbench family): give -c CHECKPOINT, "
                 "a model trained on lightup"),
    # a card whose scores are not a table by type (a hand-edited config.json): no score said,
    # as for a card without one, where the page crashed on it
    ("ppbench", {"trained_on": {"lightup": "10x10"}, "val": {"exact_accuracy_by_type": [0.9]}},
     "the bundled model trained on 10x10 lightup puzzles"),
    ("ppbench", {"trained_on": {"lightup": "10x10"},
                 "val": {"exact_accuracy_by_type": {"lightup": True}}},
     "the bundled model trained on 10x10 lightup puzzles"),
])
def test_the_bundled_models_standing_is_read_from_its_card(installed_codec, monkeypatch,
                                                           family, meta, says):
    """The page's sentence on the bundled model is its card's facts (the tests above compare
    the page with this same function): which family it reads, the size it trained on, its
    validation score on the type."""
    from ptrm_cli import models

    codec = installed_codec("lightup")
    monkeypatch.setattr(models, "default_card", lambda: (family, meta))
    assert codec_page.model_standing(codec) == says
    result = codecs_page("lightup")
    assert result.exit_code == 0 and flat(says) in flat(result.output), result.output
    monkeypatch.setattr(models, "default_card", lambda: None)  # no bundled model: not said
    assert codec_page.model_standing(codec) is None
    assert "Bundled model" not in codecs_page("lightup").output


def test_a_broken_legend_is_said_before_the_rollouts(installed_codec, ckpt, tmp_path,
                                                      monkeypatch):
    """solve --json read the legend after every rollout had run, so a plugin's broken legend
    lost the whole result; it is read before the model loads now."""
    from ptrm_cli import solver

    codec = installed_codec("lightup")
    monkeypatch.setattr(type(codec), "legend", {})

    def no_model(*args, **kwargs):
        raise AssertionError("the model loaded before the legend was read")

    monkeypatch.setattr(solver, "load_model", no_model)
    f = tmp_path / "puzzle.txt"
    f.write_text(codec.example + "\n")
    result = CliRunner().invoke(app, ["solve", str(f), "-c", str(ckpt), "--device", "cpu",
                                      "--json"])
    assert result.exit_code == 2 and "legend" in flat(result.output), result.exception
    monkeypatch.undo()
    plain = CliRunner().invoke(app, ["solve", str(f), "-c", str(ckpt), "--K", "2", "--D", "1",
                                     "--device", "cpu"])  # text output needs no legend
    assert plain.exit_code in (0, 1), plain.output
