"""scripts/average_weights.py: the weighted mean of checkpoints of one model, as a checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ptrm_cli.engine.checkpoint import load_checkpoint
from ptrm_cli.errors import PtrmError

from fixtures_models import save_tiny_checkpoint
from fixtures_scripts import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "average_weights.py"


@pytest.fixture(scope="module")
def script():
    return load_script("scripts/average_weights.py")


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    from ptrm_codecs.families import PPBENCH

    d = tmp_path_factory.mktemp("ckpts")
    return (save_tiny_checkpoint(d / "a", PPBENCH.vocab, seed=1),
            save_tiny_checkpoint(d / "b", PPBENCH.vocab, seed=2))


def weights(path):
    return load_checkpoint(path)[0].state_dict()


def test_average_is_the_weighted_mean_and_records_its_sources(script, pair, tmp_path):
    a, b = pair
    out = script.average([a, b], [0.25, 0.75], tmp_path / "avg")
    wa, wb, wm = weights(a), weights(b), weights(out)
    moved = [k for k in wa if wa[k].is_floating_point() and not torch.equal(wa[k], wb[k])]
    assert moved  # the two models differ, so the mean is a new model
    for k in wa:
        want = 0.25 * wa[k].double() + 0.75 * wb[k].double() if wa[k].is_floating_point() \
            else wa[k].double()
        assert torch.equal(wm[k], want.to(wa[k].dtype)), k  # rounded once, to its own dtype
    meta = json.loads((out / "config.json").read_text())["meta"]
    assert [s["weight"] for s in meta["averaged_from"]] == [0.25, 0.75]
    assert "sigma" not in meta  # a new model: its sigma is chosen again
    same = script.average([a, b], [1.0, 0.0], tmp_path / "same")  # all of one: that model
    assert all(torch.equal(weights(same)[k], wa[k]) for k in wa)


def test_errors_are_one_line_with_exit_2(pair, tmp_path):
    from ptrm_codecs.families import PPBENCH

    a, b = pair
    other = save_tiny_checkpoint(tmp_path / "wide", PPBENCH.vocab, hidden_size=64)

    def run(*args):
        return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)],
                              capture_output=True, text=True, timeout=300)

    for args, says in (([a, other], "another model configuration"),
                       ([a, b, "--weights", "0.5,0.6"], "sum to 1"),
                       ([a, b, "--weights", "nan,0.5"], "sum to 1"),
                       ([a, b, "--weights", "x"], "expected numbers"),
                       ([a], "two or more"),
                       ([a, tmp_path / "missing"], "no such file"),
                       ([a, a / "model.safetensors"], "hold the same weights")):
        proc = run(*args, "--out", tmp_path / "o")
        assert proc.returncode == 2 and says in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    before = (b / "model.safetensors").read_bytes()
    proc = run(a, b, "--out", b)  # never over an input (nor any existing folder)
    assert proc.returncode == 2 and "exists" in proc.stderr, proc.stderr
    assert "hint: name a new folder" in proc.stderr
    in_the_way = tmp_path / "afile"
    in_the_way.write_text("x")
    proc = run(a, b, "--out", in_the_way / "sub")
    assert proc.returncode == 2 and f"{in_the_way} is a file, not a folder" in proc.stderr, \
        proc.stderr
    assert "Traceback" not in proc.stderr
    assert (b / "model.safetensors").read_bytes() == before
    proc = run(a, b, "--out", tmp_path / "ok")
    assert proc.returncode == 0 and (tmp_path / "ok" / "model.safetensors").exists()


def test_an_error_without_its_own_hint_gets_the_scripts_help_hint(script, pair, tmp_path,
                                                                  capsys):
    """The script printed such an error with no hint line, where every `ptrm` command
    names its --help (README: every mistake has a hint)."""
    assert script.main([str(pair[0]), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == (
        "error: give two or more checkpoints to average\n"
        "hint: python3 scripts/average_weights.py --help says what it takes\n")


def test_puzzle_embedding_names_go_with_the_average_and_must_agree(script, tmp_path):
    from ptrm_codecs.families import PPBENCH
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from ptrm_cli.errors import PtrmError

    from fixtures_models import tiny_model

    def emb(name, seed, ids):
        model = tiny_model(len(PPBENCH.vocab), seed, puzzle_emb_ndim=32, puzzle_emb_len=1,
                           num_puzzle_identifiers=3)
        return save_checkpoint(tmp_path / name, model, PPBENCH.vocab, identifiers=ids)

    a, b = emb("a", 1, ["x", "y", "z"]), emb("b", 2, ["x", "y", "z"])
    out = script.average([a, b], [0.5, 0.5], tmp_path / "avg")
    assert json.loads((out / "identifiers.json").read_text()) == ["x", "y", "z"]
    c = emb("c", 3, ["x", "z", "y"])
    with pytest.raises(PtrmError, match="identifiers.json differ"):
        script.average([a, c], [0.5, 0.5], tmp_path / "avg2")


def test_the_average_says_what_its_checkpoints_trained_on(script, tmp_path):
    """meta.trained_on of the average: every type either trained on; a type seen at two sizes
    is "any" (checkpoint.merge_trained_on)."""
    from ptrm_codecs.families import PPBENCH
    from fixtures_models import tiny_model
    from ptrm_cli.engine.checkpoint import save_checkpoint

    def ckpt(name, seed, seen):
        return save_checkpoint(tmp_path / name, tiny_model(len(PPBENCH.vocab), seed),
                               PPBENCH.vocab, {"trained_on": seen})

    a = ckpt("a", 1, {"sudoku": "9x9", "tapa": "10x10"})
    b = ckpt("b", 2, {"sudoku": "4x4", "lightup": "10X10"})
    out = script.average([a, b], [0.5, 0.5], tmp_path / "avg")
    meta = json.loads((out / "config.json").read_text())["meta"]
    assert meta["trained_on"] == {"sudoku": "any", "tapa": "10x10", "lightup": "10x10"}
    bad = ckpt("bad", 3, {"sudoku": 9})   # hand-edited: one clear error, no average
    with pytest.raises(PtrmError, match=r"meta.trained_on \{'sudoku': 9\}: expected"):
        script.average([a, bad], [0.5, 0.5], tmp_path / "avg2")
    assert not (tmp_path / "avg2").exists()
