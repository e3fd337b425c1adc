"""The README's main command works: the bundled model solves the example puzzles on a CPU.

The examples are puzzles made by `ptrm generate` (never training data); the bundled model
solves these two with every rollout agreeing, so a failure here means the model, the codecs or
the solve path regressed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ptrm_cli.app import app
from ptrm_cli.models import default_checkpoint

ROOT = Path(__file__).resolve().parents[1]


def test_readme_names_the_example_it_runs():
    readme = (ROOT / "README.md").read_text()
    assert "ptrm solve examples/puzzles/sudoku.txt --K 100" in readme
    assert (ROOT / "examples/puzzles/sudoku.txt").is_file()


@pytest.mark.skipif(default_checkpoint() is None, reason="no bundled model in this checkout")
@pytest.mark.parametrize("example", ["sudoku.txt", "lightup.url"])
def test_bundled_model_solves_the_example(example):
    res = CliRunner().invoke(app, ["solve", str(ROOT / "examples/puzzles" / example),
                                   "--K", "100", "--device", "cpu", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["valid"] is True and out["violations"] == []
    assert out["checkpoint"].endswith("default")
