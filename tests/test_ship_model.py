"""scripts/ship_model.py: a checkpoint becomes the default model with the σ its validation sweep
chose for exactly its weights; anything that would make the three disagree is refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ptrm_cli import evaluate, solver
from ptrm_cli.engine.checkpoint import load_checkpoint
from ptrm_cli.errors import PtrmError
from ptrm_cli.eval_resume import weights_sha256

from fixtures_scripts import load_script
from test_eval import ckpt, dataset, ptrm, report, sudoku  # noqa: F401 (fixtures)

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "ship_model.py"


@pytest.fixture(scope="module")
def script():
    return load_script("scripts/ship_model.py")


@pytest.fixture()
def trained(ckpt, tmp_path):
    """The eval fixtures' tiny model, as `ptrm train` leaves one: it says what it trained on."""
    out = tmp_path / "best"
    shutil.copytree(ckpt, out)
    cfg = json.loads((out / "config.json").read_text())
    cfg["meta"]["trained_on"] = {"sudoku": "9x9"}
    (out / "config.json").write_text(json.dumps(cfg))
    return out


def sweep_of(report, tmp_path, **changes):
    """The fixture's validation sweep (σ 0 and 0.5) with best-Q set per σ and fields changed."""
    rep = json.loads((report[1] / "report.json").read_text())
    for run in rep["ptrm"]:
        run["summary"]["aggregate"]["rules"]["best_q"]["mean"] = changes.get(f"q{run['sigma']:g}",
                                                                             0.5)
    if "split" in changes:
        rep["split"]["name"] = changes["split"]
    if "sha" in changes:
        rep["model"]["weights_sha256"] = changes["sha"]
    path = tmp_path / f"sweep{len(list(tmp_path.glob('sweep*')))}.json"
    path.write_text(json.dumps(rep))
    return path


def test_ship_writes_the_weights_unchanged_with_the_sweeps_sigma(script, trained, report,
                                                                  tmp_path):
    sweep = sweep_of(report, tmp_path, q0=0.2, **{"q0.5": 0.6})
    assert evaluate.sigma_from_report(sweep).sigma == 0.5
    to = tmp_path / "default"
    meta = script.ship(trained, sweep, "the only candidate", to)
    assert meta["sigma"] == 0.5
    got = json.loads((to / "config.json").read_text())["meta"]
    assert got == meta and got["selected_on"] == "the only candidate"
    assert '"0.5": 60.0' in got["sigma_chosen_on"] and "val" in got["sigma_chosen_on"]
    # byte for byte: reports of the candidate remain reports of the shipped model
    assert weights_sha256(to) == weights_sha256(trained) == got["weights_sha256"]
    assert load_checkpoint(to)[2]["trained_on"] == {"sudoku": "9x9"}
    # and `ptrm solve -c` takes that σ as the model's own
    loaded = solver.load_model(to, "cpu")
    assert loaded.sigma == 0.5
    # shipping again replaces the folder whole: a tie now goes to the smaller σ
    script.ship(trained, sweep_of(report, tmp_path), "again", to)
    assert json.loads((to / "config.json").read_text())["meta"]["sigma"] == 0.0


def test_ship_records_where_the_sweep_put_the_noise(script, trained, report, tmp_path):
    sweep = sweep_of(report, tmp_path, q0=0.2, **{"q0.5": 0.6})
    meta = script.ship(trained, sweep, "on z", tmp_path / "z")
    assert meta["perturb"] == "z" and "noise on" not in meta["sigma_chosen_on"]
    rep = json.loads(sweep.read_text())
    rep["settings"]["perturb"] = "y"
    sweep.write_text(json.dumps(rep))
    meta = script.ship(trained, sweep, "on y", tmp_path / "y")
    assert (meta["sigma"], meta["perturb"]) == (0.5, "y")
    assert "noise on y" in meta["sigma_chosen_on"]
    loaded = solver.load_model(tmp_path / "y", "cpu")
    assert loaded.noise_choice(None, None) == (0.5, "model", "y")


@pytest.mark.parametrize("change, message", [
    ({"split": "golden"}, "golden set"),
    ({"sha": "0" * 64}, "other weights"),
])
def test_ship_refuses_a_sweep_that_does_not_choose_for_these_weights(script, trained, report,
                                                                      tmp_path, change, message):
    with pytest.raises(PtrmError, match=message):
        script.ship(trained, sweep_of(report, tmp_path, **change), "x", tmp_path / "d")
    assert not (tmp_path / "d").exists()


def test_ship_refuses_a_model_without_trained_on_or_a_note(script, ckpt, trained, report,
                                                           tmp_path):
    sweep = sweep_of(report, tmp_path)
    with pytest.raises(PtrmError, match="trained_on"):
        script.ship(ckpt, sweep, "x", tmp_path / "d")
    with pytest.raises(PtrmError, match="selected-on"):
        script.ship(trained, sweep, "  ", tmp_path / "d")
    with pytest.raises(PtrmError, match="not a ptrm checkpoint folder"):
        script.ship(trained / "model.safetensors", sweep, "x", tmp_path / "d")
    assert not (tmp_path / "d").exists()
    # the folder is replaced whole: never one that is not a checkpoint
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("mine")
    with pytest.raises(PtrmError, match="not a ptrm checkpoint; refusing"):
        script.ship(trained, sweep, "x", tmp_path / "home")
    assert (tmp_path / "home" / "notes.txt").read_text() == "mine"


def test_the_command_line_gives_one_error_line_and_exit_2(trained, report, tmp_path):
    sweep = sweep_of(report, tmp_path, split="golden")
    r = subprocess.run([sys.executable, SCRIPT, trained, "--sweep", sweep, "--selected-on", "x",
                        "--to", tmp_path / "d"], capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("error: --sweep"), r.stderr
    assert "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, SCRIPT, trained, "--sweep", sweep_of(report, tmp_path),
                        "--selected-on", "x", "--to", tmp_path / "d"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "wrote" in r.stdout, r.stderr


def test_an_error_without_its_own_hint_gets_the_scripts_help_hint(script, ckpt, report,
                                                                  tmp_path, capsys):
    """The script printed such an error with no hint line, where every `ptrm` command
    names its --help (README: every mistake has a hint)."""
    status = script.main([str(ckpt), "--sweep", str(sweep_of(report, tmp_path)),
                          "--selected-on", "x", "--to", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert status == 2 and "records no trained_on" in err, err
    assert err.endswith("\nhint: python3 scripts/ship_model.py --help says what it takes\n"), err


def test_the_bundled_model_is_within_the_size_the_script_allows(script):
    from ptrm_cli.models import default_checkpoint

    bundled = default_checkpoint()
    if bundled is None:
        pytest.skip("this installation ships no model")
    assert sum(f.stat().st_size for f in bundled.iterdir()) <= script.MAX_BYTES
