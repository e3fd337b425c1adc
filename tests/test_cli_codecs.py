"""`ptrm --help`, `ptrm codecs [--json]`, the entry-point registry, and clear errors for bad
puzzle text."""

from __future__ import annotations

import json
import warnings
from importlib import metadata

import pytest
from typer.testing import CliRunner

from ptrm_cli import codec as registry
from ptrm_cli.app import app
from ptrm_cli.errors import CodecNotFound, ParseError, PtrmError

runner = CliRunner()


@pytest.fixture
def fresh_registry():
    """Forget cached entry points before and after a test that changes them."""
    registry.reload()
    yield
    registry.reload()


def _codecs_json() -> list[dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = runner.invoke(app, ["codecs", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_help_lists_the_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for command in ("solve", "eval", "build-data", "train", "codecs"):
        assert command in result.output
    assert "Probabilistic Tiny Recursive Models" in result.output


def test_no_arguments_shows_help():
    result = runner.invoke(app, [])
    assert "codecs" in result.output


def test_codecs_table(installed_codec):
    installed_codec("sudoku")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = runner.invoke(app, ["codecs"])
    assert result.exit_code == 0, result.output
    assert "sudoku" in result.output and "ppbench" in result.output and "294" in result.output


def test_one_codecs_documentation(installed_codec):
    """`ptrm codecs TYPE --dev`: the grid formats a puzzle person can type were only in the
    source. A codec's own docstring (nurikabe's class has none: its module's, not a base
    class's); the page before it: tests/test_codec_page.py."""
    installed_codec("lightup")
    installed_codec("nurikabe")
    result = runner.invoke(app, ["codecs", "lightup", "--dev"])
    assert result.exit_code == 0, result.output
    assert "Formats:" in result.output and "plain grid" in result.output
    result = runner.invoke(app, ["codecs", "nurikabe", "--json"])
    doc = json.loads(result.stdout)
    assert doc["name"] == "nurikabe" and doc["doc"].startswith("Nurikabe")
    result = runner.invoke(app, ["codecs", "nosuch"])
    assert result.exit_code == 2 and "unknown puzzle type 'nosuch'" in result.output


def test_codecs_json(installed_codec):
    installed_codec("sudoku")
    rows = _codecs_json()
    assert rows, "no codecs listed"
    for row in rows:
        assert {"name", "family", "seq_len", "vocab_size", "provider"} <= set(row)
    sudoku = next(r for r in rows if r["name"] == "sudoku")
    assert sudoku["family"] == "ppbench"
    assert sudoku["seq_len"] == 100 and sudoku["vocab_size"] == 294
    assert sudoku["provider"].startswith("ptrm ")
    # the six PPBench types share one family: whichever of them are installed agree on it
    ppbench = [r for r in rows if r["family"] == "ppbench"]
    assert {(r["seq_len"], r["vocab_size"]) for r in ppbench} == {(100, 294)}


def test_codecs_come_from_entry_point_metadata(installed_codec):
    installed_codec("sudoku")
    eps = {ep.name: ep for ep in metadata.entry_points(group=registry.ENTRY_POINT_GROUP)}
    assert eps["sudoku"].value == "ptrm_codecs.sudoku:SudokuCodec"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = registry.registered()
    assert set(found) <= set(eps)
    assert found["sudoku"].entry_point == eps["sudoku"].value


def _with_extra_entry_points(monkeypatch, *extra: metadata.EntryPoint):
    real = metadata.entry_points

    def entry_points(**kw):
        eps = list(real(**kw))
        if kw.get("group") == registry.ENTRY_POINT_GROUP:
            eps += list(extra)
        return eps

    monkeypatch.setattr(registry.metadata, "entry_points", entry_points)
    registry.reload()


def test_a_broken_plugin_is_named_and_skipped(monkeypatch, fresh_registry, installed_codec):
    installed_codec("sudoku")
    group = registry.ENTRY_POINT_GROUP
    _with_extra_entry_points(
        monkeypatch,
        metadata.EntryPoint("brokenplugin", "ptrm_no_such_module_xyz:Codec", group),
        metadata.EntryPoint("notacodec", "os.path:join", group),
        metadata.EntryPoint("misnamed", "ptrm_codecs.sudoku:SudokuCodec", group),
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = registry.registered()
    messages = [str(w.message) for w in caught]
    assert any("'brokenplugin'" in m and "ptrm_no_such_module_xyz" in m for m in messages), messages
    assert any("'notacodec'" in m and "is not a ptrm Codec" in m for m in messages), messages
    assert any("'misnamed'" in m and "codec named 'sudoku'" in m for m in messages), messages
    assert "sudoku" in found
    assert not {"brokenplugin", "notacodec", "misnamed"} & set(found)
    # the CLI keeps working with a broken plugin installed
    assert "sudoku" in {r["name"] for r in _codecs_json()}


def test_a_new_plugin_appears_without_changing_ptrm(monkeypatch, fresh_registry, installed_codec):
    sudoku_cls = type(installed_codec("sudoku"))

    class Tiny(sudoku_cls):  # a stand-in plugin: any importable Codec subclass works
        name = "tinysudoku"
        description = "a test plugin"
        url_ids = ()

    import sys
    import types

    module = types.ModuleType("ptrm_test_tiny_plugin")
    module.Tiny = Tiny
    monkeypatch.setitem(sys.modules, "ptrm_test_tiny_plugin", module)
    _with_extra_entry_points(monkeypatch, metadata.EntryPoint(
        "tinysudoku", "ptrm_test_tiny_plugin:Tiny", registry.ENTRY_POINT_GROUP))
    rows = {r["name"]: r for r in _codecs_json()}
    assert rows["tinysudoku"]["description"] == "a test plugin"
    assert rows["tinysudoku"]["provider"] == "?"  # no distribution behind a hand-made entry point
    assert registry.get("tinysudoku").name == "tinysudoku"


def test_a_plugin_whose_sniff_breaks_does_not_stop_the_others(monkeypatch, fresh_registry,
                                                               installed_codec):
    sudoku = installed_codec("sudoku")

    class Sniffy(type(sudoku)):
        name, description, url_ids = "sniffy", "a plugin with a broken sniff", ()

        def sniff(self, text):
            raise AttributeError("oops")

    import sys
    import types

    module = types.ModuleType("ptrm_test_sniffy_plugin")
    module.Sniffy = Sniffy
    monkeypatch.setitem(sys.modules, "ptrm_test_sniffy_plugin", module)
    _with_extra_entry_points(monkeypatch, metadata.EntryPoint(
        "sniffy", "ptrm_test_sniffy_plugin:Sniffy", registry.ENTRY_POINT_GROUP))
    grid = "\n".join(["1" + "." * 8] + ["." * 9] * 8)  # a header-less sudoku grid
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert registry.detect(grid).name == "sudoku"
    assert any("'sniffy'" in str(w.message) and "oops" in str(w.message) for w in caught)


def test_a_plugin_whose_sniff_claims_everything_is_named_in_the_ambiguity(
        monkeypatch, fresh_registry, installed_codec):
    """A plugin whose sniff answers True to everything made a plain sudoku grid (the README's
    first command) "ambiguous: it could be sudoku, greedy", naming no package: the user could
    not tell which installed plugin to blame."""
    sudoku = installed_codec("sudoku")

    class Greedy(type(sudoku)):
        name, description, url_ids = "greedy", "a plugin whose sniff claims all", ()

        def sniff(self, text):
            return True

    import sys
    import types

    module = types.ModuleType("ptrm_test_greedy_plugin")
    module.Greedy = Greedy
    monkeypatch.setitem(sys.modules, "ptrm_test_greedy_plugin", module)
    _with_extra_entry_points(monkeypatch, metadata.EntryPoint(
        "greedy", "ptrm_test_greedy_plugin:Greedy", registry.ENTRY_POINT_GROUP))
    grid = "\n".join(["1" + "." * 8] + ["." * 9] * 8)  # a header-less sudoku grid
    with pytest.raises(ParseError) as e:
        registry.detect(grid, source="s.txt")
    message = str(e.value)
    assert message.startswith("s.txt: ambiguous puzzle text"), message
    assert "sudoku (ptrm " in message and "greedy (?)" in message, message
    assert e.value.hint and "--codec TYPE" in e.value.hint


def test_dev_without_a_type_has_a_hint():
    """`ptrm codecs --dev` was an error line without the hint every mistake gets."""
    result = runner.invoke(app, ["codecs", "--dev"])
    assert result.exit_code == 2, result.output
    assert "error: --dev applies to one type" in result.output
    assert "hint: name the type, e.g. ptrm codecs sudoku --dev" in result.output, result.output


# -- bad puzzle text ---------------------------------------------------------------------------

@pytest.mark.parametrize("text, error, match", [
    ("", ParseError, "empty input"),
    ("   \n\t\n", ParseError, "empty input"),
    ("https://puzz.link/p?nosuchtype/9/9/abc", CodecNotFound, "unknown puzzle type 'nosuchtype'"),
    ("pzprv3\nnosuchtype\n3\n3\n", CodecNotFound, "unknown puzzle type 'nosuchtype'"),
    ("pzprv3", ParseError, "ends after its first line"),
    ("hello world", ParseError, "cannot tell the puzzle type"),
    # a type named on the first line that no codec reads: said so, not "names the type"
    ("hitori\n1 2 3\n2 3 1\n", ParseError, "names the type 'hitori', which no installed"),
    # a misspelt one is offered the installed type it is closest to
    ("suduko\n1 2 3\n2 3 1\n", ParseError, r"'suduko', which no .*\(did you mean sudoku\?\)"),
    # and a line that names an installed type, but not alone: "cannot tell the puzzle type"
    ("sudoku:\n1 2 . 4\n. 4 1 2\n", ParseError, "'sudoku:' mentions the type sudoku, but a "
                                                 "type line holds the name alone"),
    ("# sudoku 9x9\n1 2 . 4\n. 4 1 2\n", ParseError, "mentions the type sudoku"),
    ("type: lightup\n. 1\n. .\n", ParseError, "mentions the type lightup"),
    ("https://puzz.link/p?pzprv3", ParseError, "pzprv3 URL ends before the puzzle type"),
])
def test_detect_rejects_bad_text_clearly(text, error, match):
    with pytest.raises(error, match=match) as info:
        registry.detect(text, source="input.txt")
    assert isinstance(info.value, PtrmError)


@pytest.mark.parametrize("text, error, match", [
    ("https://puzz.link/p?sudoku/nine/9/abc", ParseError, "no <cols>/<rows> size"),
    ("https://puzz.link/p?sudoku/9", ParseError, "no <cols>/<rows> size"),
    ("https://puzz.link/p?sudoku", ParseError, "no <cols>/<rows> size"),  # not "cannot tell"
    ("https://puzz.link/p?sudoku/0/0/", ParseError, "out of range"),
    ("https://puzz.link/p?sudoku/9/9/-zz", ParseError, "-zz"),  # a malformed body
    ("https://puzz.link/p?sudoku/9/9/.zzzz", ParseError, "'\\?' given"),
    # a tracker or an anchor copied with the link: said as such, not as bad body characters
    ("https://puzz.link/p?sudoku/4/4/g1h2&fbclid=Iw1", ParseError, "after the puzzle: '&fbclid"),
    ("https://puzz.link/p?sudoku/4/4/g1h2?utm_source=x", ParseError, "after the puzzle: '\\?utm"),
    ("https://puzz.link/p?sudoku/4/4/g1h2/#top", ParseError, "after the puzzle: '#top'"),
    ("https://puzz.link/p?nosuchtype/9/9/abc", CodecNotFound, "installed codecs: .*sudoku"),
    ("", ParseError, "empty input"),
])
def test_parse_rejects_bad_text_clearly(text, error, match, installed_codec):
    installed_codec("sudoku")
    with pytest.raises(error, match=match) as info:
        registry.parse(text, source="input.txt")
    assert isinstance(info.value, PtrmError)
    if isinstance(info.value, ParseError):
        assert str(info.value).startswith("input.txt")  # says where
    assert info.value.hint is None or isinstance(info.value.hint, str)


def test_parse_with_an_unknown_codec_name():
    with pytest.raises(CodecNotFound, match="unknown puzzle type 'kakuro9'") as info:
        registry.parse("whatever", codec="kakuro9")
    assert "ptrm codecs" in info.value.hint


def test_url_ids_find_their_codec(installed_codec):
    lightup = installed_codec("lightup")
    assert registry.get("akari") is lightup


@pytest.mark.parametrize("name, meant", [
    ("sudok", "did you mean 'sudoku'?"),
    ("akar", "did you mean 'lightup'?"),               # a URL id's near miss: its type
    ("sudoku-native", "'sudoku-native' is a token family, not a puzzle type; its types: sudoku"),
])
def test_an_unknown_type_says_which_was_meant(name, meant):
    """The list shows families beside the types, and `ptrm codecs sudoku-native` (or a typo)
    only said "unknown puzzle type" with the whole list."""
    if not {"sudoku", "lightup"} <= set(registry.registered()):
        pytest.skip("the built-in codecs are not installed")
    r = runner.invoke(app, ["codecs", name])
    assert r.exit_code == 2 and f"unknown puzzle type {name!r}" in r.output, r.output
    assert meant in r.output and "Traceback" not in r.output


def test_a_name_like_none_gets_no_guess():
    r = runner.invoke(app, ["codecs", "qqqqqq"])
    assert r.exit_code == 2 and "did you mean" not in r.output and "is a token family" \
        not in r.output, r.output


def test_codecs_type_of_a_broken_plugin_says_it_failed_to_load(monkeypatch, fresh_registry,
                                                                installed_codec):
    """`ptrm codecs kurobad` for an installed plugin whose import raised began "unknown puzzle
    type 'kurobad'" and guessed "did you mean 'kurodoko'?" (another plugin's type), with the
    real cause only in the hint (found by a QA pass writing a kurodoko plugin)."""
    installed_codec("sudoku")
    _with_extra_entry_points(monkeypatch, metadata.EntryPoint(
        "sudokux", "ptrm_no_such_module_xyz:Codec", registry.ENTRY_POINT_GROUP))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = runner.invoke(app, ["codecs", "sudokux"])
    assert result.exit_code == 2, result.output
    assert "codec plugin 'sudokux' (ptrm_no_such_module_xyz:Codec) is installed but failed " \
           "to load: ModuleNotFoundError" in result.output, result.output
    assert "unknown puzzle type" not in result.output and "did you mean" not in result.output
