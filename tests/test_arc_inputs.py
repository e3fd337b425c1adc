"""User mistakes in ARC inputs (grids, pairs, tasks, records, Kaggle challenges and solutions
files, `--task`): each is one ParseError / PtrmError naming the file, where in it, what was
wrong and what was expected, with a hint; never a TypeError from deep inside, a wrong "cannot
tell the puzzle type", or an empty dataset written without a word."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ptrm_cli import codec as registry
from ptrm_cli.errors import ParseError, PtrmError

A = pytest.importorskip("ptrm_codecs.arc")
from ptrm_cli import arc_solve  # noqa: E402
from ptrm_cli.arc_data import build_arc  # noqa: E402

TASK = {"train": [{"input": [[1]], "output": [[2]]}], "test": [{"input": [[1, 1]]}]}


@pytest.fixture(scope="module")
def codec():
    return registry.get("arc")


def _write(path, obj):
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return path


def test_a_ragged_grid_names_the_row_that_differs():
    """numpy made [[1, 2], [3]] an object array: "expected a rectangular list of rows", which
    row not said."""
    with pytest.raises(ParseError, match=r"^g.json: ARC input: rows differ in length: row 3 has "
                                         r"1 cell, row 1 has 2 cells$") as e:
        A.as_grid([[1, 2], [3, 4], [5]], what="input", source="g.json")
    assert "same length" in e.value.hint
    with pytest.raises(ParseError, match=r"found 3 as row 1$"):  # one pair of brackets short
        A.as_grid([3, 3])
    with pytest.raises(ParseError, match=r"found \[\] as row 2$"):
        A.as_grid([[1], []])


@pytest.mark.parametrize("text, said", [
    ("[[1, 2.5]]", r"colours are 0..9 \(whole numbers\), found 2.5 at row 1, column 2"),
    ("[[true, 1]]", r"found True at row 1, column 1"),
    ('[[1, "2"]]', r"found '2' at row 1, column 2"),
    ("[[]]", r"found \[\] as row 1"),
    ("[]", r"expected a non-empty rectangular grid .*, found \[\]$"),
    ("[[[1]]]", r"found \[1\] at row 1, column 1"),
    ("[[1, 2],\n [3, 4]", r"^g.json:2: ARC input .* is not valid JSON: .*\(column \d+\)"),
])
def test_a_json_array_is_read_as_a_grid_and_its_fault_named(codec, text, said):
    """Only arrays of whole numbers were sniffed as ARC: a grid with a 2.5, a true or a "2" in
    it, or cut short, was "cannot tell the puzzle type: ... pass --codec TYPE"."""
    assert registry.detect(text).name == "arc"
    with pytest.raises(ParseError, match=said) as e:
        registry.parse(text, source="g.json")
    assert e.value.hint and "colours 0..9" in e.value.hint


@pytest.mark.parametrize("obj, said", [
    ({"train": [], "test": "x"}, r"ARC task 't': expected .*; its 'test' is \"x\", not a list"),
    ({"train": "x", "test": []}, r"ARC task 't': expected .*; its 'train' is \"x\""),
    ({"train": [{"input": [[1]]}]}, r"ARC task 't': expected .*; it has no 'test'$"),
    ({"train": [{"input": [[1]]}], "test": [{"input": [[1]]}]},
     r"ARC task 't' train pair 0: expected \{'input': grid, 'output': grid\}; it has no "
     r"'output'$"),
    ({"train": [], "test": [5]}, r"ARC task 't' test pair 0: expected \{'input': grid\}, found 5"),
    ({"train": [], "test": []}, r"ARC task 't' has no test pair: its 'test' list is empty"),
    ({"a": TASK, "b": 5}, r"ARC task 'b': expected .*, found 5$"),
])
def test_a_malformed_task_says_what_is_wrong(codec, obj, said):
    """{"test": "x"} was "cannot read this puzzle as arc (TypeError: string indices must be
    integers)"; a task without its 'test' list, or a file of tasks with one that is not, was
    "does not say its puzzle type"."""
    text = json.dumps(obj)
    assert registry.detect(text).name == "arc"
    with pytest.raises(ParseError, match=rf"^t.json: {said}") as e:
        codec.parse(text, source="t.json")
    assert e.value.hint
    with pytest.raises(ParseError, match=said):  # the same through a record
        codec.from_record({"type": "arc", **obj}, source="t.json")


def test_several_tasks_hint_at_what_works_with_any_model(codec):
    """The hint said only `--task ID`, which a model without per-task embeddings refuses."""
    with pytest.raises(ParseError, match="holds 2 ARC tasks") as e:
        codec.parse(json.dumps({"a": TASK, "b": TASK}))
    assert "--task ID (e.g. --task a)" in e.value.hint
    assert "file of its own" in e.value.hint


def test_records(codec):
    """A record's text as a list was "expected a task, a pair or a grid", and a record without
    its answer the same: as if it were not a record."""
    p, s = codec.from_record({"type": "arc", "text": [[1, 2]], "answer": [[2, 1]]})
    assert p.clues.tolist() == [[1, 2]] and s.grid.tolist() == [[2, 1]]
    with pytest.raises(ParseError, match=r"without an output \('answer'") as e:
        codec.from_record({"type": "arc", "text": "[[1, 2]]"}, source="r.json")
    assert '{"input": grid}' in e.value.hint
    with pytest.raises(ParseError, match=r"^r.json: ARC record text .* is not valid JSON: "
                                         r".*\(column \d+\)"):
        codec.from_record({"text": "[[1, 2]", "answer": [[1]]}, source="r.json")


def test_a_solutions_file_that_does_not_fit_its_challenges_is_refused(tmp_path):
    """More outputs than test pairs were dropped, and a solutions file of another set left
    every test pair without its output (the test set then scored nothing) without a word."""
    ch = _write(tmp_path / "arc-agi_x_challenges.json", {"aaaa0001": TASK})
    sols = tmp_path / "arc-agi_x_solutions.json"
    _write(sols, {"aaaa0001": [[[3, 3]], [[4, 4]]]})
    with pytest.raises(ParseError, match=rf"^{sols}: task 'aaaa0001': 2 output grids for 1 test "
                                         r"pair\(s\) in arc-agi_x_challenges.json") as e:
        A.load_tasks(ch)
    assert e.value.hint
    _write(sols, {"ffff0001": [[[3, 3]]]})
    with pytest.raises(ParseError, match=r"names none of the 1 tasks of "
                                         r"arc-agi_x_challenges.json") as e:
        A.load_tasks(ch)
    assert "another challenges file" in e.value.hint
    _write(sols, {"aaaa0001": [[[3, 3]]], "ffff0001": [[[3]]]})  # a superset is fine
    assert A.load_tasks(ch)["aaaa0001"]["test"][0]["output"] == [[3, 3]]


def test_challenges_files_errors_say_where_and_hint(tmp_path):
    bad = _write(tmp_path / "arc-agi_x_challenges.json", '{"a": {"train": [],\n "test": [}}')
    with pytest.raises(ParseError, match=r":2: ARC tasks file is not valid JSON: .*\(column "
                                         r"\d+\)$") as e:
        A.load_tasks(bad)
    assert e.value.hint
    _write(bad, [[1, 2]])
    with pytest.raises(ParseError, match=r"maps task ids to tasks .*, this one holds "
                                         r"\[\[1, 2\]\]") as e:
        A.load_tasks(bad)
    assert "ptrm solve" in e.value.hint


def test_build_refuses_an_empty_build_and_an_empty_test_set(tmp_path):
    """`{}` wrote a dataset of 0 rows ("wrote DIR"), found out only by train or eval."""
    empty = _write(tmp_path / "arc-agi_evaluation_challenges.json", {})
    with pytest.raises(PtrmError, match="no ARC tasks to build from"):
        build_arc([empty], None)
    train = _write(tmp_path / "arc-agi_training_challenges.json", {"aaaa0001": TASK})
    _write(tmp_path / "arc-agi_training_solutions.json", {"aaaa0001": [[[3, 3]]]})
    with pytest.raises(PtrmError, match="the ARC test set 'evaluation' holds no tasks"):
        build_arc([train, empty], None)


def test_a_missing_solution_hints_at_the_solutions_file_or_test_set(tmp_path):
    ch = _write(tmp_path / "arc-agi_x_challenges.json", {"aaaa0001": TASK})
    other = _write(tmp_path / "arc-agi_evaluation_challenges.json",
                   {"bbbb0001": {"train": [], "test": [{"input": [[5]]}]}})
    with pytest.raises(PtrmError, match="test pair 0 has no solution") as e:
        build_arc([ch, other], None)
    assert "arc-agi_x_solutions.json beside it" in e.value.hint
    assert "--test-set x" in e.value.hint


def test_task_file_mistakes(tmp_path):
    """A wrong --task got no hint; a one-task file whose 'test' is not a list was read as a
    Kaggle file of tasks named 'train' and 'test'."""
    ch = _write(tmp_path / "arc-agi_x_challenges.json", {"aaaa0001": TASK, "bbbb0002": TASK})
    with pytest.raises(PtrmError, match=r"has no task 'aaaa001' \(it holds 2 tasks") as e:
        arc_solve.read_task(ch, "aaaa001")
    assert e.value.hint == "did you mean --task aaaa0001?"
    with pytest.raises(PtrmError, match="has no task 'zzzz'") as e:
        arc_solve.read_task(ch, "zzzz")
    assert e.value.hint
    one = _write(tmp_path / "0001.json", {"train": [], "test": "x"})
    with pytest.raises(ParseError, match=r"ARC task '0001': expected .*; its 'test' is \"x\""):
        arc_solve.read_task(one)
    assert arc_solve.task_shaped(one.read_text())
    _write(one, {"train": [], "test": []})
    with pytest.raises(ParseError, match="has no test pair") as e:
        arc_solve.read_task(one)
    assert e.value.hint
    _write(one, '{"train": [], "test": [')
    with pytest.raises(ParseError, match=r"0001.json:1: ARC task file is not valid JSON: .*"
                                         r"\(column \d+\)$") as e:
        arc_solve.read_task(one)
    assert e.value.hint


def test_evaluating_a_split_without_test_pairs_hints_at_the_test_split(tmp_path):
    """ARC's test pairs are scored; a split of demonstrations alone has none, and the error
    did not say where they are."""
    from ptrm_cli.arc_eval import evaluate_arc
    from ptrm_cli.engine.model import TRM, TRMConfig

    ev = _write(tmp_path / "arc-agi_evaluation_challenges.json", {"aaaa0001": TASK})
    build_arc([ev], tmp_path / "ds", num_aug=0)
    model = TRM(TRMConfig(vocab_size=12, seq_len=900, hidden_size=8, num_heads=1,
                          expansion=2.0, L_layers=1, H_cycles=1, L_cycles=1, puzzle_emb_ndim=8,
                          puzzle_emb_len=1, num_puzzle_identifiers=2, halt_max_steps=1,
                          forward_dtype="float32"))
    with pytest.raises(PtrmError, match="split 'train': no test pairs to evaluate") as e:
        evaluate_arc(model, tmp_path / "ds", "train")
    assert "--split test" in e.value.hint


@pytest.mark.parametrize("grid", [((1, 2), (3, 4)), [(1, 2), (3, 4)],
                                  [np.array([1, 2]), np.array([3, 4])],
                                  np.array([[1, 2], [3, 4]], dtype=object)])
def test_a_grid_a_python_caller_builds_is_read(codec, grid):
    """Rows walked one by one took only lists: a grid of tuples or of numpy rows, which numpy
    had read, became "expected a ... grid, found [[1, 2], [3, 4]]", and an object array of
    colours a StopIteration."""
    assert A.as_grid(grid).tolist() == [[1, 2], [3, 4]]
    assert codec.puzzle(grid, output=grid).meta["output"] == [[1, 2], [3, 4]]


def test_a_bad_value_in_an_object_array_is_named(codec):
    with pytest.raises(ParseError, match=r"found 'x' at row 1, column 2$"):
        A.as_grid(np.array([[1, "x"]], dtype=object))


def test_arc_claims_bracketed_text_only_when_it_could_be_a_grid():
    """A list of lists, an empty list or broken JSON in brackets are ARC's to explain; a JSON
    list of anything else (records, numbers) is not, so another codec or --codec can take it
    (the plugin contract: sniff only what is unambiguously yours)."""
    from ptrm_codecs.arc import ArcCodec

    sniff = ArcCodec().sniff
    for text in ("[[1, 2], [3, 4]]", "[]", "[[1, 2], [3]]", "[[1, 2", '[[1, "2"]]'):
        assert sniff(text), text
    for text in ('[{"type": "sudoku", "text": "x"}]', "[3, 3]", '["a", "b"]', "plain text"):
        assert not sniff(text), text
