"""`ptrm eval --split FILE`: the inputs it reads (eval_sets.py), with tiny random models.

Every source file goes through build-data's readers (sources.py): ptrm records as well as
PPBench ones, a bad line or a rules-breaking answer listed as unusable with its line while the
rest is evaluated, clear errors for a missing CSV header or a missing path, and --types applied
before any codec has to fit the model."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from ptrm_cli import eval_sets, solver
from ptrm_cli.app import app
from ptrm_cli.errors import PtrmError

from fixtures_models import golden_examples, installed_codecs, save_tiny_checkpoint

# a Sudoku-Extreme row (question, answer); its last cell is blank, so changing the answer's last
# digit keeps every given and breaks only the rules
QUESTION = ("98.7.....65....7....7.6..8.4....6.....59..8......3...2.1...2..3..96..5......4..1.")
ANSWER = ("981753426653284791247169385432816957165927834798435162814592673329671548576348219")
WRONG = ANSWER[:-1] + "1"
HEADER = "source,question,answer,rating\n"


def need(*types):
    codecs = installed_codecs()
    missing = [t for t in types if t not in codecs]
    if missing:
        pytest.skip(f"codec(s) not installed: {', '.join(missing)}")
    return codecs


@pytest.fixture(scope="module")
def ppbench_model(tmp_path_factory):
    from ptrm_codecs.families import PPBENCH

    path = save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "tiny", PPBENCH.vocab)
    return path, solver.load_model(path, "cpu")


@pytest.fixture(scope="module")
def native_model(tmp_path_factory):
    from ptrm_codecs.families import SUDOKU_NATIVE

    path = save_tiny_checkpoint(tmp_path_factory.mktemp("native") / "tiny", SUDOKU_NATIVE.vocab,
                                seq_len=81)
    return path, solver.load_model(path, "cpu")


def ptrm_records(*types, n: int = 1) -> list[dict]:
    """ptrm records (as `ptrm generate` writes them) made from PPBench golden examples."""
    codecs = need(*types)
    found = golden_examples(types, n=n)
    if len(found) < n * len(types):
        pytest.skip("PPBench golden set not found")
    return [codecs[pid].to_record(*codecs[pid].from_record(rec)) for pid, rec in found]


def write_jsonl(path, lines) -> str:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return str(path)


def eval_cli(*args):
    r = CliRunner().invoke(app, ["eval", *map(str, args), "--K", "2", "--D", "1", "--det-D", "1",
                                 "--seeds", "1", "--no-plots", "--json"])
    assert "Traceback" not in r.output, r.output
    return r


# -- what a file holds ----------------------------------------------------------------------------

def test_ptrm_records_evaluate_like_ppbench_ones(ppbench_model, tmp_path):
    """`ptrm generate` output (type, url, answer) is a split, mixed with PPBench lines too."""
    _, loaded = ppbench_model
    recs = ptrm_records("sudoku", "lightup")
    (_, golden), = golden_examples(["sudoku"], n=1)
    f = write_jsonl(tmp_path / "gen.jsonl", recs + [golden])
    ev = eval_sets.resolve_split(f, None, loaded)
    assert ev.types == ["sudoku", "lightup", "sudoku"] and ev.name == "gen"
    assert ev.keys[:2] == [r["url"] for r in recs] and not ev.unusable
    for v, label in zip(ev.verifiers, ev.labels):  # the labels are the records' answers
        assert v(label.numpy()).valid


def test_answers_that_break_the_rules_are_unusable(ppbench_model, tmp_path):
    """A CSV row or a ptrm record whose answer breaks the rules is listed with its line and
    the rule it breaks, never scored against as a label."""
    _, loaded = ppbench_model
    need("sudoku")
    csv = tmp_path / "rows.csv"
    csv.write_text(HEADER + f"x,{QUESTION},{ANSWER},5\nx,abc,def\nx,{QUESTION},{WRONG},5\n")
    ev = eval_sets.resolve_split(str(csv), None, loaded)
    assert len(ev) == 1
    assert [u["line"] for u in ev.unusable] == [3, 4]
    assert ev.unusable[1]["type"] == "sudoku"
    assert ev.unusable[1]["reason"].startswith("invalid solution: ")

    rec, = ptrm_records("sudoku")
    broken = dict(rec, answer=[row[:] for row in rec["answer"]])
    broken["answer"][0][0], broken["answer"][0][1] = rec["answer"][0][1], rec["answer"][0][0]
    ev = eval_sets.resolve_split(write_jsonl(tmp_path / "r.jsonl", [rec, broken]), None, loaded)
    assert len(ev) == 1 and [u["line"] for u in ev.unusable] == [2]
    assert "invalid solution" in ev.unusable[0]["reason"]


def test_a_malformed_jsonl_line_is_unusable_not_fatal(ppbench_model, tmp_path):
    ckpt, loaded = ppbench_model
    a, b = ptrm_records("sudoku", n=2)
    f = write_jsonl(tmp_path / "mal.jsonl", [a, '{"type": "sudoku", "url": broken', b, "[1]"])
    ev = eval_sets.resolve_split(f, None, loaded)
    assert len(ev) == 2
    assert [(u["line"], u["type"]) for u in ev.unusable] == [(2, None), (4, None)]
    assert ev.unusable[0]["reason"].startswith("not valid JSON")
    # on the command line: listed (no 'None' for the type nobody knows), then evaluated
    r = eval_cli("--split", f, "-c", ckpt, "-o", tmp_path / "out")
    assert r.exit_code == 0, r.output
    assert f"skipped record on line 2 of {f}: not valid JSON" in " ".join(r.stderr.split())
    assert "None" not in r.stderr
    assert json.loads(r.stdout)["split"]["n"] == 2
    # nothing usable at all: an error that says where the first problem is
    junk = write_jsonl(tmp_path / "junk.jsonl", ['{"pid": "sudoku"', "nope"])
    with pytest.raises(PtrmError, match=r"no puzzles to evaluate .*junk.jsonl:1: not valid JSON"):
        eval_sets.resolve_split(junk, None, loaded)


def test_golden_loader_reads_through_the_same_reader(ppbench_model, tmp_path):
    """load_ppbench_jsonl keeps the paper's filter for PPBench records and lists bad lines."""
    _, loaded = ppbench_model
    need("sudoku")
    (_, golden), = golden_examples(["sudoku"], n=1)
    small = dict(golden, height=4, width=4)  # off the paper's sizes: not evaluated, not unusable
    f = tmp_path / "golden.jsonl"
    write_jsonl(f, [golden, "{oops", small])
    ev = eval_sets.load_ppbench_jsonl(f, loaded)
    assert ev.name == "golden" and ev.types == ["sudoku"]
    assert [u["line"] for u in ev.unusable] == [2]


# -- errors ---------------------------------------------------------------------------------------

def test_a_csv_without_its_header_says_so(ppbench_model, tmp_path):
    _, loaded = ppbench_model
    rows = f"x,{QUESTION},{ANSWER},5\n"
    for name in ("nohdr.csv", "nohdr.jsonl"):  # by its suffix, or by its first line
        (tmp_path / name).write_text(rows)
        with pytest.raises(PtrmError, match="the CSV header source,question,answer,rating is "
                                            "missing"):
            eval_sets.resolve_split(str(tmp_path / name), None, loaded)


def test_a_file_split_is_recorded_by_its_absolute_path(ppbench_model, tmp_path, monkeypatch):
    """`--split x.csv` was recorded as `x.csv` in the report's split.source: read from another
    folder it named nothing (with --min-difficulty too)."""
    import os

    _, loaded = ppbench_model
    (tmp_path / "x.csv").write_text(HEADER + f"a,{QUESTION},{ANSWER},1\nb,{QUESTION},{ANSWER},3\n")
    monkeypatch.chdir(tmp_path)
    where = os.path.join(os.getcwd(), "x.csv")
    assert eval_sets.resolve_split("x.csv", None, loaded).source == where
    assert eval_sets.resolve_split("./x.csv", None, loaded, min_difficulty=2).source == \
        f"{where} (rating >= 2)"


def test_a_missing_path_is_no_such_file(ppbench_model, tmp_path):
    _, loaded = ppbench_model
    for split in (str(tmp_path / "nope.jsonl"), "nope.csv", "data/nope"):
        with pytest.raises(PtrmError, match="no such file"):
            eval_sets.resolve_split(split, None, loaded)
    with pytest.raises(PtrmError, match="not golden") as e:  # a split name: --data is missing
        eval_sets.resolve_split("val", None, loaded)
    assert "--data" in e.value.hint


def test_types_apply_before_the_family_check(native_model, tmp_path):
    """A sudoku-native model on a split of several types: --types sudoku evaluates the sudokus;
    without it the other types' codecs are the error."""
    ckpt, loaded = native_model
    need("sudoku", "lightup")
    found = golden_examples(["sudoku", "lightup"], n=2)
    if len(found) < 4:
        pytest.skip("PPBench golden set not found")
    f = write_jsonl(tmp_path / "mixed.jsonl", [rec for _, rec in reversed(found)])
    ev = eval_sets.resolve_split(f, None, loaded, types=["sudoku"], limit=1)
    assert ev.types == ["sudoku"] and ev.inputs.shape == (1, 81)
    # every type the file holds, and which of them the model reads (it named the first
    # puzzle's type alone: "no lightup family has that layout")
    with pytest.raises(PtrmError, match=r"holds sudoku, lightup; this model reads only sudoku "
                                        r"of them") as e:
        eval_sets.resolve_split(f, None, loaded)
    # the way out named (it said to pass -c CHECKPOINT, which the user had done)
    assert e.value.hint.startswith("--types sudoku evaluates")
    try:
        eval_sets.golden_path()
    except PtrmError:
        return
    r = eval_cli("-c", ckpt, "--types", "sudoku", "--limit", 2, "-o", tmp_path / "g")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["split"]["types"] == {"sudoku": 2}
