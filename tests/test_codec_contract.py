"""A codec plugin that breaks its contract: named when plugins load, and named when it fails at
run time (one message and exit 2), never a traceback from deep in the engine or a dataset the
model cannot read. Found by a QA pass writing a third-party plugin (binairo)."""

from __future__ import annotations

import json
import sys
import types
import warnings
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ptrm_cli import codec as registry
from ptrm_cli.app import app
from ptrm_cli.build_decode import puzzle_text
from ptrm_cli.codec import CodecBug, Family, Solution, Violation
from ptrm_cli.engine.data import Split, write_dataset
from ptrm_cli.errors import PtrmError
from ptrm_cli.vocab import PAD, Vocab

from fixtures_models import save_tiny_checkpoint
from test_cli_codecs import _with_extra_entry_points, fresh_registry  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[1]
SUDOKU = (ROOT / "examples" / "puzzles" / "sudoku.txt").read_text()


def _plugin(monkeypatch, **classes) -> None:
    """Register each class as a `ptrm.codecs` entry point of a made-up module."""
    module = types.ModuleType("ptrm_test_contract_plugin")
    for name, cls in classes.items():
        setattr(module, name, cls)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    _with_extra_entry_points(monkeypatch, *(
        metadata.EntryPoint(cls.name, f"{module.__name__}:{name}", registry.ENTRY_POINT_GROUP)
        for name, cls in classes.items()))


def _sudoku_subclass(installed_codec, name: str, **methods):
    base = type(installed_codec("sudoku"))
    return type(name.capitalize(), (base,), {"name": name, "description": f"test {name}",
                                              "url_ids": (), **methods})


def _loaded(caught) -> list[str]:
    return [str(w.message) for w in caught]


# -- when plugins load -------------------------------------------------------------------------

def test_codecs_with_unusable_families_are_named_and_skipped(monkeypatch, fresh_registry,
                                                             installed_codec):
    """A codec without families vanished from `ptrm codecs` silently and crashed build-data
    with an IndexError; a vocabulary named unlike its family relabelled datasets."""
    sudoku = installed_codec("sudoku")
    fam = sudoku.families[0]
    _plugin(monkeypatch,
            NoFamily=_sudoku_subclass(installed_codec, "nofamily", families=()),
            Renamed=_sudoku_subclass(installed_codec, "renamed", families=(
                Family("renamed_fam", fam.rows, fam.cols, fam.vocab),)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = registry.registered()
    messages = _loaded(caught)
    assert not {"nofamily", "renamed"} & set(found) and "sudoku" in found
    assert any("'nofamily'" in m and "declares no token family" in m for m in messages)
    assert any("'renamed'" in m and f"carries a vocabulary named {fam.vocab.family!r}" in m
               for m in messages), messages


def test_one_family_name_with_two_token_tables_is_warned(monkeypatch, fresh_registry,
                                                          installed_codec):
    fam = installed_codec("sudoku").families[0]
    other = Vocab(fam.name, [PAD, "a", "b"])
    _plugin(monkeypatch, Clash=_sudoku_subclass(installed_codec, "clash", families=(
        Family(fam.name, fam.rows, fam.cols, other),)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = registry.registered()
    assert "clash" in found  # usable for a model of its own; the clash is what is reported
    assert any("'clash'" in m and f"family {fam.name!r} with different token tables" in m
               for m in _loaded(caught)), _loaded(caught)


@pytest.mark.parametrize("plugin_first", [False, True])
def test_a_type_registered_twice_names_both_plugins(monkeypatch, fresh_registry,
                                                    installed_codec, plugin_first):
    """The built-in is kept whichever entry point comes first: the order once depended on
    the installation and the working directory, and a plugin's 'sudoku' could replace ours."""
    dup = _sudoku_subclass(installed_codec, "sudoku")
    _plugin(monkeypatch, Dup=dup)
    if plugin_first:
        listed = registry.metadata.entry_points
        monkeypatch.setattr(registry.metadata, "entry_points",
                            lambda **kw: list(reversed(list(listed(**kw)))))
        registry.reload()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = registry.registered()
    twice = [m for m in _loaded(caught) if "registered twice" in m]
    assert twice and "ptrm_codecs.sudoku:SudokuCodec" in twice[0]
    assert "ignoring ? (ptrm_test_contract_plugin:Dup)" in twice[0]
    assert type(found["sudoku"].codec) is not dup


def test_a_plugin_that_exits_on_import_is_skipped(monkeypatch, fresh_registry,
                                                  installed_codec):
    """`raise SystemExit(3)` in a plugin's module ended every command with status 3 and no
    word of why."""
    class Exits:
        name = "exits"

        def __init__(self):
            raise SystemExit(3)

    _plugin(monkeypatch, Exits=Exits)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = registry.registered()
    assert "exits" not in found and "sudoku" in found
    assert any("'exits'" in m and "SystemExit(3)" in m for m in _loaded(caught))


def test_a_plugin_failing_to_load_says_what_it_raised_and_its_package(monkeypatch,
                                                                     fresh_registry):
    """Found by a QA pass (takuzu plugin): an exception inside a plugin was shown by its text
    alone, so `{}["setting"]` read "failed to load: 'setting'" and a bare `assert` read
    "failed to load: " (nothing); and the warning named the module but not the installed
    package (what `pip uninstall` or a bug report needs)."""
    class KeyErr:
        name = "qa_keyerr"

        def __init__(self):
            {}["missing_setting"]

    class Asserts:
        name = "qa_asserts"

        def __init__(self):
            raise AssertionError  # a bare `assert` in a plugin (pytest would add text)

    module = types.ModuleType("ptrm_test_failing_plugin")
    module.KeyErr, module.Asserts = KeyErr, Asserts
    monkeypatch.setitem(sys.modules, module.__name__, module)
    group = registry.ENTRY_POINT_GROUP
    dist = types.SimpleNamespace(name="ptrm-plugin-qa", version="0.3.1")
    keyerr = metadata.EntryPoint("qa_keyerr", f"{module.__name__}:KeyErr", group)
    if hasattr(keyerr, "_for"):  # an entry point as an installed distribution gives it
        keyerr = keyerr._for(dist)
    _with_extra_entry_points(monkeypatch, keyerr, metadata.EntryPoint(
        "qa_asserts", f"{module.__name__}:Asserts", group))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = registry.registered()
        messages = _loaded(caught)
        assert not {"qa_keyerr", "qa_asserts"} & set(found)
        assert any("'qa_keyerr'" in m and "failed to load: KeyError: 'missing_setting'" in m
                   for m in messages), messages
        assert any("'qa_asserts'" in m and m.endswith("failed to load: AssertionError")
                   for m in messages), messages
        if hasattr(keyerr, "_for"):
            assert any(f"({module.__name__}:KeyErr, ptrm-plugin-qa 0.3.1)" in m
                       for m in messages), messages
        with pytest.raises(PtrmError) as e:
            registry.get("qa_asserts")
        assert "but failed to load: AssertionError;" in e.value.hint, e.value.hint


def test_a_broken_plugin_of_a_near_name_is_not_guessed_as_another_type(monkeypatch,
                                                                        fresh_registry):
    """`--codec sudokus` for an installed plugin `sudokus` that failed to load led with "did
    you mean 'sudoku'?": the name was right, the plugin broken."""
    registry.registered()
    monkeypatch.setitem(registry._failed, "sudokus",
                        ("sudokus", "ptrm_sudokus:Codec, ptrm-plugin-sudokus 0.1", "boom"))
    with pytest.raises(PtrmError) as e:
        registry.get("sudokus")
    assert "did you mean" not in str(e.value), str(e.value)
    assert "failed to load: boom" in e.value.hint


def test_a_family_with_token_names_that_are_not_strings_is_skipped(monkeypatch, fresh_registry,
                                                                  installed_codec):
    """Found by a QA pass: `Vocab("x", (PAD, 1, 2))` loaded, but a dataset or checkpoint
    stores the table as JSON and reads it back as strings ('1'), so the model no longer matched
    its own codec's vocabulary; named when the plugin loads instead."""
    _plugin(monkeypatch, Ints=_sudoku_subclass(installed_codec, "qa_ints", families=(
        Family("qa_ints", 2, 2, Vocab("qa_ints", (PAD, 1, 2))),)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        found = registry.registered()
    assert "qa_ints" not in found and "sudoku" in found
    assert any("'qa_ints'" in m and "token names must be strings" in m and "1 (int)" in m
               for m in _loaded(caught)), _loaded(caught)


# -- at run time -------------------------------------------------------------------------------

def test_contract_helpers_name_the_codec(installed_codec):
    sudoku = installed_codec("sudoku")
    fam = sudoku.families[0]
    puzzle = sudoku.parse(SUDOKU).puzzle
    boom = _sudoku_subclass(installed_codec, "boom",
                            verify=lambda self, p, s: 1 / 0)()
    strings = _sudoku_subclass(installed_codec, "strings",
                               verify=lambda self, p, s: ["row 1 is wrong"])()
    solution = sudoku.decode(puzzle, sudoku.encode(puzzle, family=fam), fam)
    with pytest.raises(CodecBug, match=r"codec 'boom' \(Boom\) raised ZeroDivisionError in "
                                       r"verify: division by zero") as e:
        registry.violations_of(boom, puzzle, solution)
    assert "bug in the codec" in e.value.hint
    with pytest.raises(CodecBug, match="verify returned a str where a list of Violation"):
        registry.violations_of(strings, puzzle, solution)
    assert all(isinstance(v, Violation) for v in registry.violations_of(sudoku, puzzle, solution))

    x = sudoku.encode(puzzle, family=fam)
    assert registry.checked_tokens(sudoku, x, fam) is x
    with pytest.raises(CodecBug,
                       match=rf"encode returned shape \(36,\), expected \({fam.seq_len},\)"):
        registry.checked_tokens(boom, x[:36], fam)
    with pytest.raises(CodecBug, match=rf"ids 0..999, outside the {fam.name!r} vocabulary"):
        registry.checked_tokens(boom, np.where(x == x.max(), 999, 0), fam)
    with pytest.raises(PtrmError, match="a refusal passes"):  # a PtrmError is the contract's
        with registry.contract(boom, "encode"):
            raise PtrmError("a refusal passes")


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    from ptrm_codecs.families import PPBENCH

    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "tiny", PPBENCH.vocab)


@pytest.mark.parametrize("name, methods, message", [
    ("verifyraises", {"verify": lambda self, p, s: {}["oops"]},
     "raised KeyError in verify: 'oops'"),
    ("decoderaises", {"decode": lambda self, p, t, family=None: int("x")},
     "raised ValueError in decode"),
    ("shortencode",
     {"encode": lambda self, p, state=None, family=None: np.zeros(36, np.int64)},
     "encode returned shape (36,), expected (100,)"),
    ("badids",
     {"encode": lambda self, p, state=None, family=None: np.full(100, 999, np.int64)},
     "encode returned ids 999..999, outside the 'ppbench' vocabulary"),
    ("badverdict", {"verify": lambda self, p, s: "fine"},
     "verify returned a str where a list of Violation belongs"),
    # was "raised ValueError in verify: operands could not be broadcast": verify blamed
    ("smalldecode", {"decode": lambda self, p, t, family=None: Solution(
        self.name, np.zeros((2, 2), np.int16))},
     "raised ValueError in verify (on a 2x2 solution of a 9x9 puzzle, as decode, parse or "
     "from_record gave it)"),
    ("nodecode", {"decode": lambda self, p, t, family=None: None},
     "gave a NoneType where a Solution of a 2-D grid belongs (from decode, parse or "
     "from_record)"),
])
def test_solve_names_a_codec_that_breaks_its_contract(monkeypatch, fresh_registry,
                                                      installed_codec, ckpt, tmp_path, name,
                                                      methods, message):
    """Each was a raw traceback (a torch shape error, an IndexError, an AttributeError in the
    display), with exit 1 — which means "no valid answer", so scripts could not tell."""
    _plugin(monkeypatch, Bad=_sudoku_subclass(installed_codec, name, **methods))
    puzzle = tmp_path / "p.txt"
    puzzle.write_text(SUDOKU)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = CliRunner().invoke(app, ["solve", str(puzzle), "--codec", name, "-c", str(ckpt),
                                     "--K", "2", "--D", "2", "--device", "cpu"])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)
    text = " ".join(r.output.split())
    assert f"codec '{name}' (?, ptrm_test_contract_plugin:Bad)" in text, text
    assert message in text, text


# -- datasets ----------------------------------------------------------------------------------

def test_a_dataset_stores_text_that_parses_back(installed_codec):
    """Without to_url/to_pzprv3 the key became the puzzle's text, and `ptrm eval` of the
    dataset failed on its first line; a key that parses back is fine."""
    sudoku = installed_codec("sudoku")
    puzzle = sudoku.parse(SUDOKU).puzzle

    def no_url(self, p):
        raise PtrmError("no URL")

    grid = "\n".join(SUDOKU.split())
    readable = _sudoku_subclass(installed_codec, "readable", to_url=no_url, to_pzprv3=no_url,
                                key=lambda self, p: grid)()
    opaque = _sudoku_subclass(installed_codec, "opaque", to_url=no_url, to_pzprv3=no_url,
                              key=lambda self, p: "opaque:9x9:" + grid.replace("\n", "|"))()
    assert puzzle_text(readable, puzzle) == grid
    with pytest.raises(CodecBug, match="no text form that its parse reads back"):
        puzzle_text(opaque, puzzle)


def test_write_dataset_refuses_ids_outside_the_vocabulary(tmp_path):
    """They were written, and training crashed later with an IndexError in the embedding."""
    vocab = Vocab("tiny", [PAD, "a", "b"])
    x = np.array([[1, 2, 7]], dtype=np.uint16)
    split = Split(inputs=x, labels=x.copy(), type=np.zeros(1, np.uint8),
                  puzzle=np.zeros(1, np.int32), transform=np.zeros(1, np.uint8),
                  puzzle_id=np.zeros(1, np.int32), puzzles=[{"type": "t"}])
    with pytest.raises(PtrmError, match=r"train/inputs: token id 7 is outside the 'tiny' "
                                        r"vocabulary \(0..2\)"):
        write_dataset(tmp_path / "ds", vocab=vocab, seq_len=3, types=["t"],
                      splits={"train": split})
    assert not (tmp_path / "ds").exists()
    ok = Split(**{**split.__dict__, "inputs": np.array([[1, 2, 0]], np.uint16),
                  "labels": np.array([[1, 2, 0]], np.uint16)})
    write_dataset(tmp_path / "ds", vocab=vocab, seq_len=3, types=["t"], splits={"train": ok})
    assert json.loads((tmp_path / "ds" / "meta.json").read_text())["family"] == "tiny"


def test_a_parse_that_chokes_names_the_codec(monkeypatch, fresh_registry, installed_codec):
    """`cannot read this puzzle (ValueError: ...)` did not say which codec was reading."""
    _plugin(monkeypatch, Choke=_sudoku_subclass(
        installed_codec, "choke", parse=lambda self, text, source=None: int("x")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(PtrmError, match=r"p.txt: cannot read this puzzle as choke "
                                            r"\(ValueError: invalid literal"):
            registry.parse(SUDOKU, codec="choke", source="p.txt")


# -- found by a second QA pass writing a plugin (binairo) ---------------------------------------

@pytest.mark.parametrize("parse, message", [
    (lambda self, text, source=None: (_ for _ in ()).throw(RuntimeError("boom")),
     "raised RuntimeError in parse: boom"),
    (lambda self, text, source=None: (_ for _ in ()).throw(AttributeError("no .rows")),
     "raised AttributeError in parse: no .rows"),
    (lambda self, text, source=None: None, "parse returned NoneType, not Parsed"),
], ids=["runtimeerror", "attributeerror", "none"])
def test_a_parse_that_breaks_names_the_codec_in_solve(monkeypatch, fresh_registry,
                                                      installed_codec, ckpt, tmp_path, parse,
                                                      message):
    """Any exception but the four "odd input" ones was a raw traceback from `ptrm solve`
    (exit 1, which means "no valid answer"); a parse returning None, an AttributeError later."""
    _plugin(monkeypatch, Bad=_sudoku_subclass(installed_codec, "badparse", parse=parse))
    puzzle = tmp_path / "p.txt"
    puzzle.write_text(SUDOKU)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(CodecBug, match=r"codec 'badparse' \(\?, "
                                           r"ptrm_test_contract_plugin:Bad\) "):
            registry.parse(SUDOKU, codec="badparse")
        r = CliRunner().invoke(app, ["solve", str(puzzle), "--codec", "badparse", "-c",
                                     str(ckpt), "--K", "2", "--D", "2", "--device", "cpu"])
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit)
    assert message in " ".join(r.output.split()), r.output


def test_a_type_whose_plugin_failed_to_load_says_so(monkeypatch, fresh_registry,
                                                    installed_codec):
    """A plugin that is installed but broken got "unknown puzzle type ... plugins add more"
    and "install its plugin": the wrong way for its author to look."""
    _plugin(monkeypatch, Listed=_sudoku_subclass(installed_codec, "listed",
                                                 families=list(installed_codec("sudoku")
                                                               .families)))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(PtrmError, match="unknown puzzle type 'listed'") as e:
            registry.get("listed")
        assert "failed to load: Codec.families must be a tuple of Family, not a list" \
            in e.value.hint and "ptrm_test_contract_plugin:Listed" in e.value.hint
        with pytest.raises(PtrmError, match="names the type 'listed'") as e:
            registry.detect("listed\n" + SUDOKU)
        assert "a plugin registers 'listed'" in e.value.hint
        with pytest.raises(PtrmError) as e:
            registry.get("nosuch")
        assert e.value.hint == "`ptrm codecs` lists them; plugins add more"
    assert any("'listed'" in m and "must be a tuple of Family" in m for m in _loaded(caught))
    # an entry point named unlike its codec: asking for either name finds the reason
    module = types.ModuleType("ptrm_test_misnamed_plugin")
    module.Misnamed = _sudoku_subclass(installed_codec, "qa-codec-name")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    _with_extra_entry_points(monkeypatch, metadata.EntryPoint(
        "qa-ep-name", f"{module.__name__}:Misnamed", registry.ENTRY_POINT_GROUP))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in ("qa-ep-name", "qa-codec-name"):
            with pytest.raises(PtrmError) as e:
                registry.get(name)
            assert "a plugin registers 'qa-ep-name'" in e.value.hint, e.value.hint
            assert "entry point 'qa-ep-name' loads a codec named 'qa-codec-name'" \
                in e.value.hint
    r = CliRunner().invoke(app, ["codecs", "listed"])
    assert r.exit_code == 2 and "failed to load" in r.output, r.output


# -- found by a third QA pass with a deliberately broken plugin ---------------------------------

def _boom(method: str, exc=RuntimeError):
    """A codec method that raises `exc("boom in METHOD")`, whatever it is given."""
    def broken(self, *args, **kwargs):
        raise exc(f"boom in {method}")
    return broken


def _invoke(*args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return CliRunner().invoke(app, [str(a) for a in args])


def _refused(r, *messages) -> str:
    """One message and exit 2: no traceback, every one of `messages` said."""
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and isinstance(r.exception, SystemExit), r.output
    text = " ".join(r.output.split())
    for m in messages:
        assert m in text, text
    return text


def _solved_sudoku(installed_codec):
    from ptrm_cli.sudoku_solver import solve

    sudoku = installed_codec("sudoku")
    puzzle = sudoku.parse(SUDOKU).puzzle
    return sudoku, puzzle, Solution("sudoku", solve(puzzle.clues, limit=1)[0])


def _record_file(tmp_path, installed_codec, name: str) -> Path:
    """A ptrm record (plain grid text, its answer) of type `name` in a JSONL file."""
    _, _, solution = _solved_sudoku(installed_codec)
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps({"type": name, "url": SUDOKU,
                             "answer": solution.grid.tolist()}) + "\n")
    return f


@pytest.mark.parametrize("method, exc, reason, message", [
    ("from_record", RuntimeError, "decode error", "raised RuntimeError in from_record"),
    ("parse", RuntimeError, "decode error", "raised RuntimeError in parse"),
    ("key", RuntimeError, "decode error", "raised RuntimeError in key"),
    ("transform", RuntimeError, "decode error", "raised RuntimeError in transform"),
    # was "raised RuntimeError in encode: boom in encode_label"
    ("encode_label", RuntimeError, "decode error", "raised RuntimeError in encode_label"),
    ("encode", RuntimeError, "decode error", "raised RuntimeError in encode"),
    # odd records make a codec raise these: the record's problem, said where, as before
    ("from_record", ValueError, "malformed", None),
])
def test_build_data_names_the_codec_method_that_breaks(monkeypatch, fresh_registry,
                                                       installed_codec, tmp_path, method, exc,
                                                       reason, message):
    """from_record, parse, key and transform were "decode error ... RuntimeError: boom",
    without the codec or its plugin; encode_label's was blamed on encode."""
    from ptrm_cli import build as B

    _plugin(monkeypatch, Bad=_sudoku_subclass(installed_codec, "qabroken",
                                              **{method: _boom(method, exc)}))
    f = _record_file(tmp_path, installed_codec, "qabroken")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(B.BuildError) as e:
            B.build([f], None, B.BuildOptions(workers=1, types=("qabroken",),
                                              sizes={"*": (9, 9)}))
    result = e.value.result
    assert result.dropped == {reason: {"qabroken": 1}}, result.dropped
    (said,) = result.messages[reason]
    if message is None:
        assert said == f"r.jsonl:1: boom in {method}"
    else:
        assert said == (f"r.jsonl:1: codec 'qabroken' (?, ptrm_test_contract_plugin:Bad) "
                        f"{message}: boom in {method}")


def _val_dataset(tmp_path, installed_codec, name: str) -> Path:
    """A 'val' split of type `name`: one puzzle, as it is and turned (transform 1)."""
    from ptrm_cli.engine.data import write_dataset

    sudoku, puzzle, solution = _solved_sudoku(installed_codec)
    fam = sudoku.families[0]
    turned, turned_s = sudoku.transform(puzzle, solution, 1)
    rows = [(puzzle, solution, 0), (turned, turned_s, 1)]
    split = Split(inputs=np.stack([sudoku.encode(p, family=fam) for p, _, _ in rows]),
                  labels=np.stack([sudoku.encode_label(p, s, family=fam) for p, s, _ in rows]),
                  type=np.zeros(2), puzzle=np.zeros(2), transform=np.array([t for *_, t in rows]),
                  puzzle_id=np.zeros(2), puzzles=[{"type": name, "key": "k", "text": SUDOKU}])
    return write_dataset(tmp_path / "ds", vocab=fam.vocab, seq_len=fam.seq_len, types=[name],
                         splits={"val": split})


@pytest.mark.parametrize("method, exc, message", [
    ("parse", RuntimeError, "codec 'qaevalset' (?, ptrm_test_contract_plugin:Bad) raised "
                            "RuntimeError in parse: boom in parse"),
    ("transform", RuntimeError, "codec 'qaevalset' (?, ptrm_test_contract_plugin:Bad) raised "
                                "RuntimeError in transform: boom in transform"),
    # odd text: the dataset's file is named, and the codec reading it
    ("parse", ValueError, "ds/val/puzzles.jsonl:1: cannot read this puzzle as qaevalset "
                          "(ValueError: boom in parse)"),
])
def test_eval_of_a_dataset_split_names_a_codec_that_breaks(monkeypatch, fresh_registry,
                                                           installed_codec, ckpt, tmp_path,
                                                           method, exc, message):
    """`ptrm eval --split val --data DS` called parse and transform bare: a traceback."""
    _plugin(monkeypatch, Bad=_sudoku_subclass(installed_codec, "qaevalset",
                                              **{method: _boom(method, exc)}))
    ds = _val_dataset(tmp_path, installed_codec, "qaevalset")
    _refused(_invoke("eval", "--split", "val", "--data", ds, "-c", ckpt, "--K", 2, "--D", 1,
                     "--det-D", 1, "--seeds", 1, "--no-plots", "-o", tmp_path / "out"), message)


def test_eval_of_a_dataset_split_names_the_line_of_text_it_cannot_read(installed_codec, ckpt,
                                                                       tmp_path):
    """Odd text on line 3 of puzzles.jsonl was reported at "puzzles.jsonl:1" (the line within
    the text, where the codec stopped)."""
    from ptrm_cli.engine.data import write_dataset

    sudoku, puzzle, solution = _solved_sudoku(installed_codec)
    fam = sudoku.families[0]
    x, y = sudoku.encode(puzzle, family=fam), sudoku.encode_label(puzzle, solution, family=fam)
    lines = [{"type": "sudoku", "key": f"k{i}", "text": SUDOKU} for i in range(2)]
    lines.append({"type": "sudoku", "key": "k2", "text": "sudoku\n12\n"})
    split = Split(inputs=np.stack([x, x]), labels=np.stack([y, y]), type=np.zeros(2),
                  puzzle=np.array([0, 2]), transform=np.zeros(2), puzzle_id=np.zeros(2),
                  puzzles=lines)
    ds = write_dataset(tmp_path / "ds", vocab=fam.vocab, seq_len=fam.seq_len, types=["sudoku"],
                       splits={"val": split})
    _refused(_invoke("eval", "--split", "val", "--data", ds, "-c", ckpt, "--K", 2, "--D", 1,
                     "--det-D", 1, "--seeds", 1, "--no-plots", "-o", tmp_path / "out"),
             "ds/val/puzzles.jsonl:3: ")


@pytest.mark.parametrize("method", ["from_record", "encode_label"])
def test_eval_of_a_source_file_names_a_codec_that_breaks(monkeypatch, fresh_registry,
                                                         installed_codec, ckpt, tmp_path,
                                                         method):
    """from_record's RuntimeError was a traceback from `ptrm eval --split FILE`; encode_label's
    was "raised RuntimeError in encode"."""
    _plugin(monkeypatch, Bad=_sudoku_subclass(installed_codec, "qaevalfile",
                                              **{method: _boom(method)}))
    f = _record_file(tmp_path, installed_codec, "qaevalfile")
    _refused(_invoke("eval", "--split", f, "-c", ckpt, "--K", 2, "--D", 1, "--det-D", 1,
                     "--seeds", 1, "--no-plots", "-o", tmp_path / "out"),
             f"codec 'qaevalfile' (?, ptrm_test_contract_plugin:Bad) raised RuntimeError in "
             f"{method}: boom in {method}")


@pytest.mark.parametrize("from_record, message", [
    (_boom("from_record"), "codec 'qarecord' (?, ptrm_test_contract_plugin:Bad) raised "
                           "RuntimeError in from_record: boom in from_record"),
    (lambda self, record, source=None: None,
     "codec 'qarecord' (?, ptrm_test_contract_plugin:Bad) from_record returned NoneType, not "
     "(puzzle, solution)"),
    # odd records: the record's problem, said where
    (_boom("from_record", KeyError), "r.json: cannot read this record as qarecord (KeyError: "
                                     "'boom in from_record')"),
], ids=["runtimeerror", "none", "keyerror"])
def test_solve_of_a_record_names_a_from_record_that_breaks(monkeypatch, fresh_registry,
                                                           installed_codec, ckpt, tmp_path,
                                                           from_record, message):
    """`ptrm solve RECORD.json` gave a traceback for a from_record raising RuntimeError."""
    _plugin(monkeypatch, Bad=_sudoku_subclass(installed_codec, "qarecord",
                                              from_record=from_record))
    record = tmp_path / "r.json"
    record.write_text(_record_file(tmp_path, installed_codec, "qarecord").read_text())
    _refused(_invoke("solve", record, "-c", ckpt, "--K", 2, "--D", 2, "--device", "cpu"),
             message)


def test_solve_names_a_render_that_breaks_and_json_needs_none(monkeypatch, fresh_registry,
                                                              installed_codec, ckpt, tmp_path):
    """A render that raised was a traceback after the solve; --json does not draw at all."""
    _plugin(monkeypatch, Bad=_sudoku_subclass(installed_codec, "qarender",
                                              render=_boom("render")))
    puzzle = tmp_path / "p.txt"
    puzzle.write_text(SUDOKU)
    args = ["solve", puzzle, "--codec", "qarender", "-c", ckpt, "--K", 2, "--D", 2,
            "--device", "cpu"]
    text = _refused(_invoke(*args), "codec 'qarender' (?, ptrm_test_contract_plugin:Bad) "
                                    "raised RuntimeError in render: boom in render")
    assert "--json gives the answer without drawing it" in text
    r = _invoke(*args, "--json")
    assert r.exit_code in (0, 1), r.output  # solved or not: the answer, as JSON
    assert json.loads(r.stdout)["type"] == "qarender"


def test_solve_names_a_render_that_returns_what_rich_cannot_draw(monkeypatch, fresh_registry,
                                                                 installed_codec, ckpt,
                                                                 tmp_path):
    """A render returning object() printed `<object object at 0x...>` as the answer."""
    _plugin(monkeypatch, Bad=_sudoku_subclass(installed_codec, "qadraw",
                                              render=lambda self, p, s=None: object()))
    puzzle = tmp_path / "p.txt"
    puzzle.write_text(SUDOKU)
    text = _refused(_invoke("solve", puzzle, "--codec", "qadraw", "-c", ckpt, "--K", 2, "--D",
                            2, "--device", "cpu"),
                    "codec 'qadraw' (?, ptrm_test_contract_plugin:Bad) render returned object, "
                    "not a Rich renderable")
    assert "object object at" not in text and "--json gives the answer" in text


@pytest.mark.parametrize("method", ["to_pzprv3", "solution_url", "judges"])
def test_solve_json_names_a_method_that_breaks(monkeypatch, fresh_registry, installed_codec,
                                               ckpt, tmp_path, method):
    """--json writes the answer's pzprv3 and URL and whether the rules judge it: a codec
    method that raised there was a traceback."""
    _plugin(monkeypatch, Bad=_sudoku_subclass(installed_codec, "qajson",
                                              **{method: _boom(method)}))
    puzzle = tmp_path / "p.txt"
    puzzle.write_text(SUDOKU)
    _refused(_invoke("solve", puzzle, "--codec", "qajson", "-c", ckpt, "--K", 2, "--D", 2,
                     "--device", "cpu", "--json"),
             f"codec 'qajson' (?, ptrm_test_contract_plugin:Bad) raised RuntimeError in "
             f"{method}: boom in {method}")


def test_golden_with_a_model_of_a_plugins_family_says_it_holds_none_of_its_types(
        monkeypatch, fresh_registry, installed_codec, tmp_path):
    """It said "codec 'heyawake' cannot encode for a 'qafam' model", as if the golden set's
    codecs were at fault, and hinted at -c CHECKPOINT, which the user had given."""
    from ptrm_cli import eval_sets

    try:
        eval_sets.golden_path()
    except PtrmError:
        pytest.skip("the ppbench wheel (the golden set) is not installed")
    fam = installed_codec("sudoku").families[0]
    own = Family("qafam", fam.rows, fam.cols, Vocab("qafam", fam.vocab.tokens))
    _plugin(monkeypatch, Own=_sudoku_subclass(installed_codec, "qaown", families=(own,)))
    model = save_tiny_checkpoint(tmp_path / "own", own.vocab)
    text = _refused(_invoke("eval", "--split", "golden", "-c", model, "--K", 2, "--D", 1,
                            "--no-plots", "-o", tmp_path / "out"),
                    "the PPBench golden set holds no puzzles of the types a 'qafam' model "
                    "reads (qaown): it holds sudoku, lightup, nurikabe, heyawake, tapa, "
                    "shakashaka", "--split val --data DATASET")
    assert "cannot encode" not in text
