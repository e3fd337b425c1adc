"""The README's commands work as written: the bundled model solves the example puzzles on a
CPU, and the toy-scale pipeline runs from generated puzzles to a solve.

The examples are puzzles made by `ptrm generate` (never training data); the bundled model
solves all three on a CPU, so a failure here means the model, the codecs or the
solve path regressed."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ptrm_cli.app import app
from ptrm_cli.models import default_checkpoint

from shared_data import SHARED

ROOT = Path(__file__).resolve().parents[1]


def test_readme_names_the_example_it_runs():
    readme = (ROOT / "README.md").read_text()
    assert "ptrm solve examples/puzzles/sudoku.txt --K 100" in readme
    assert (ROOT / "examples/puzzles/sudoku.txt").is_file()


@pytest.mark.skipif(default_checkpoint() is None, reason="no bundled model in this checkout")
@pytest.mark.parametrize("example", ["sudoku.txt", "lightup.url", "shakashaka.pzprv3"])
def test_bundled_model_solves_the_example(example):
    res = CliRunner().invoke(app, ["solve", str(ROOT / "examples/puzzles" / example),
                                   "--K", "100", "--device", "cpu", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["valid"] is True and out["violations"] == []
    assert out["checkpoint"].endswith("default")


def readme_block(after: str) -> list[str]:
    """The commands of the first ```bash block after the text `after` in README.md."""
    text = (ROOT / "README.md").read_text()
    assert after in text, f"README.md no longer has {after!r}"
    block = text[text.index(after):].split("```bash\n", 1)[1].split("```", 1)[0]
    return [ln for ln in block.splitlines() if ln.strip()]


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "data" / "janko").is_dir()
                    or not (SHARED / "data" / "ppbench" / "golden_300.jsonl").is_file(),
                    reason=f"the toy pipeline reads janko and golden from {SHARED / 'data'}")
def test_the_toy_pipeline_runs_as_written(tmp_path, monkeypatch):
    """Every command of the README's toy run, verbatim, from a folder beside ../shared as the
    repository is (about 30 s: one generated type, as the block's first line runs it)."""
    commands = readme_block("The same pipeline at toy scale")
    assert len(commands) == 7 and all(c.startswith("ptrm ") for c in commands)
    work = tmp_path / "repo"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "shared").symlink_to(SHARED)
    monkeypatch.chdir(work)
    for i, line in enumerate(commands):
        res = CliRunner().invoke(app, shlex.split(line, comments=True)[1:])
        last = i == len(commands) - 1
        # the README: the model learns next to nothing, so the solve ends with exit status 1
        assert res.exit_code == (1 if last else 0), f"{line}\n{res.output}"
    assert "no rules-valid solution" in res.stdout
    assert (work / "runs/tiny_golden/report.json").is_file()
