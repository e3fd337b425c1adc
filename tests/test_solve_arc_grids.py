"""`ptrm solve` on lone ARC grids and pairs with a model without per-task embeddings: a grid
with no known output is not judged, so it must not stop early on a vacuous "valid", and
rollouts whose answers differ in size (or are empty) must not crash the answer selection."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from ptrm_cli import solver
from ptrm_cli.app import app
from ptrm_cli.codec import Puzzle, size_name
from ptrm_cli.engine.checkpoint import save_checkpoint

from fixtures_models import tiny_model

A = pytest.importorskip("ptrm_codecs.arc")
from ptrm_codecs.families import ARC  # noqa: E402

GRID = [[1, 2, 3], [4, 5, 6]]
STEPS = 3  # tiny_config's halt_max_steps: the default D


def _ckpt(path, *, blank: bool = False):
    model = tiny_model(len(ARC.vocab), seq_len=ARC.seq_len, halt_max_steps=STEPS)
    if blank:  # every logit equal: every cell is token 0 (pad), every answer the empty grid
        with torch.no_grad():
            model.lm_head.weight.zero_()
    return save_checkpoint(path, model, ARC.vocab, {"note": "test"})


def _solve(*args):
    res = CliRunner().invoke(app, ["solve", *map(str, args), "--device", "cpu", "--threads",
                                   "1"])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output, res.output
    return res


def test_a_lone_grid_runs_every_step(tmp_path):
    """Nothing judges a grid without its output, so every rollout passed the check at its
    first step and the default early stop read all answers there (chosen_step 1 of D)."""
    ck = _ckpt(tmp_path / "ck")
    (tmp_path / "g.json").write_text(json.dumps(GRID))
    res = _solve(tmp_path / "g.json", "-c", ck, "--K", 2, "--json")
    out = json.loads(res.stdout)
    assert res.exit_code == 0 and out["solved"] is None
    assert out["stopped_early"] is False and out["chosen_step"] == STEPS
    assert out["row_steps"] == 2 * STEPS
    text = " ".join(_solve(tmp_path / "g.json", "-c", ck, "--K", 2).output.split())
    assert "not judged" in text and " valid ·" not in text  # no count of "valid" rollouts


def test_an_unjudged_grid_counts_no_valid_rollouts(tmp_path):
    """valid_rollouts was K: every rollout passes an empty check, none was verified. Null, as
    `solved`; a judged pair keeps its count."""
    ck = _ckpt(tmp_path / "ck")
    (tmp_path / "g.json").write_text(json.dumps(GRID))
    out = json.loads(_solve(tmp_path / "g.json", "-c", ck, "--K", 2, "--json").stdout)
    assert out["rollouts"] == 2 and out["valid_rollouts"] is None
    (tmp_path / "p.json").write_text(json.dumps({"input": GRID, "output": GRID}))
    out = json.loads(_solve(tmp_path / "p.json", "-c", ck, "--K", 2, "--json").stdout)
    assert out["solved"] is False and out["valid_rollouts"] == 0


TASK = {"train": [{"input": GRID, "output": GRID}], "test": [{"input": GRID}]}


def test_a_task_run_without_task_embeddings_is_not_called_a_lone_grid(tmp_path):
    """A task file and a model without per-task embeddings: its first test input runs alone,
    and the output says that of the task, not "a lone arc grid"."""
    ck = _ckpt(tmp_path / "ck")
    (tmp_path / "0934a4d8.json").write_text(json.dumps(TASK))
    res = _solve(tmp_path / "0934a4d8.json", "-c", ck, "--K", 2)
    text = " ".join(res.stdout.split())
    assert res.exit_code == 0 and "not judged" in text
    assert "a lone arc grid" not in text
    assert "first test input" in text and "no per-task embeddings" in text


def test_a_wrong_task_id_is_reported_before_the_model(tmp_path):
    """--task naming a task a challenges file does not hold: the id is the mistake, said with
    the ids the file holds, not that the model has no per-task embeddings. A file holding one
    task takes --task as its id (a downloaded task may be saved under any name)."""
    ck = _ckpt(tmp_path / "ck")
    (tmp_path / "kaggle.json").write_text(json.dumps({"0934a4d8": TASK}))
    res = _solve(tmp_path / "kaggle.json", "--task", "wrong", "-c", ck, "--K", 2)
    text = " ".join(res.output.split())
    assert res.exit_code == 2, text
    assert "has no task 'wrong' (its only task is 0934a4d8)" in text
    assert "per-task" not in text
    # the right id, or a one-task file under any id, gets as far as the model, whose problem
    # it then is
    (tmp_path / "saved.json").write_text(json.dumps(TASK))
    for args in (("kaggle.json", "--task", "0934a4d8"), ("saved.json", "--task", "0934a4d8")):
        res = _solve(tmp_path / args[0], *args[1:], "-c", ck, "--K", 2)
        assert res.exit_code == 2 and "no per-task puzzle embeddings" in res.output


def test_empty_answers_do_not_crash(tmp_path):
    """A model whose every answer crops to 0x0 made torch.unique fail on zero-size rows (a
    traceback); now it is a wrong answer like any other."""
    ck = _ckpt(tmp_path / "ck", blank=True)
    (tmp_path / "p.json").write_text(json.dumps({"input": GRID, "output": GRID}))
    res = _solve(tmp_path / "p.json", "-c", ck, "--K", 2, "--json")
    out = json.loads(res.stdout)
    assert res.exit_code == 1 and out["solved"] is False
    assert out["solution"]["grid"] == [] and out["agree"] == 2
    assert out["violations"][0]["code"] == "mismatch"


def test_answers_of_different_sizes_compare_by_shape_and_cells():
    """ARC answers take the size the model gives them: stacking them failed on different
    sizes, and the same cells in another shape must not count as the same answer."""
    c = A.ArcCodec()
    puzzle = c.parse(json.dumps({"input": GRID, "output": GRID})).puzzle
    verifier = solver.Verifier(c, puzzle, ARC)

    def canvas(grid):  # the tokens of `grid` as an answer on the canvas
        g = np.asarray(grid, dtype=np.int8)
        return c.encode(Puzzle("arc", g.shape[0], g.shape[1], g, {}), family=ARC)

    wide, tall = [[1, 1, 1, 1]], [[1, 1], [1, 1]]  # the same cells, as 1x4 and 2x2
    preds = torch.as_tensor(np.stack([np.zeros(ARC.seq_len, np.int64), canvas(wide),
                                      canvas(tall), canvas(tall)]), dtype=torch.long)
    answers = verifier.answers(preds)
    assert answers.shape[0] == 4
    assert len(torch.unique(answers, dim=0)) == 3  # empty, 1x4 and 2x2 (twice)
    assert torch.equal(answers[2], answers[3]) and not torch.equal(answers[1], answers[2])
    assert len(torch.unique(verifier.answers(preds[:1].repeat(2, 1)), dim=0)) == 1


def test_a_wrong_pair_answer_is_said_against_the_expected_output(tmp_path):
    """An ARC pair answered wrong read "no rules-valid solution ... 1 rule violation(s):
    mismatch the answer is 1x2, the output is 2x3", then "differs from the answer given in
    the input": ARC has no rules, only the expected output, which the verdict names once."""
    ck = _ckpt(tmp_path / "ck")
    pair = tmp_path / "p.json"
    pair.write_text(json.dumps({"input": GRID, "output": GRID}))
    answer = np.asarray(json.loads(_solve(pair, "-c", ck, "--K", 2, "--json").stdout)
                        ["solution"]["grid"])
    assert answer.size, "the tiny model's answer is empty: no same-size output to differ from"
    # expected outputs the answer misses by its size, and by one cell at the same size
    bigger = np.zeros((answer.shape[0] + 1, answer.shape[1]), dtype=int)
    one_off = answer.copy()
    one_off[-1, -1] = (one_off[-1, -1] + 1) % 10
    for output, verdict in (
            # one more row: one size at least is not square, said as rows and columns
            (bigger, f"wrong size: {size_name(*answer.shape)}, expected "
                     f"{size_name(*bigger.shape)}"),
            (one_off, f"differs from the expected output in 1 of {answer.size} cells: "
                      f"r{answer.shape[0]}c{answer.shape[1]}")):
        pair.write_text(json.dumps({"input": GRID, "output": output.tolist()}))
        res = _solve(pair, "-c", ck, "--K", 2)
        text = " ".join(res.stdout.split())
        assert res.exit_code == 1, text
        assert "none of the 2 rollouts gives the expected output" in text
        assert f"rollout: {verdict} " in text  # the verdict line, without a code
        assert "0 correct ·" in text
        assert "rule" not in text and "mismatch" not in text
        assert "answer given in the input" not in text  # the expected output: said already
