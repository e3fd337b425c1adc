"""scripts/gpu/validation_prime.py: the selection score of stages 4 and 5 - validation with its
sudoku swapped for sudoku-check's - counted from two `ptrm eval` reports."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures_scripts import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu" / "validation_prime.py"


@pytest.fixture(scope="module")
def vp():
    return load_script("scripts/gpu/validation_prime.py")


def report(accs: dict[str, tuple[int, float, float]], sigmas=(1.0,), halt=None, D=16,
           split="val") -> dict:
    """A report of per-type (n, TRM accuracy, PTRM accuracy for every selector)."""
    n_all = sum(n for n, _, _ in accs.values())
    det = {t: {"n": n, "rules": {"acc": a}} for t, (n, a, _) in accs.items()}
    det["aggregate"] = {"n": n_all, "rules": {"acc": -1.0}}  # never summed: a trap
    summary = {t: {"n": n, "rules": {s: {"mean": p} for s in ("pass", "best_q", "verified")}}
               for t, (n, _, p) in accs.items()}
    summary["aggregate"] = {"n": n_all, "rules": {s: {"mean": -1.0}
                                                   for s in ("pass", "best_q", "verified")}}
    return {"checkpoint": "ckpt", "split": {"name": split},
            "settings": {"halt": halt, "K": 100, "D": D, "perturb": "z"},
            "deterministic": [{"D": D, "groups": det}],
            "ptrm": [{"sigma": s, "K": 100, "D": D, "summary": summary} for s in sigmas]}


def test_validation_sudoku_is_replaced_by_sudoku_check(vp):
    val = report({"sudoku": (100, 0.9, 1.0), "lightup": (100, 0.5, 0.75), "tapa": (50, 0.4, 0.6)})
    check = report({"sudoku": (100, 0.2, 0.3)})
    lines = vp.score(val, check)
    # 250 = 100 lightup + 50 tapa + 100 sudoku-check; validation's own sudoku count nowhere
    assert lines[0].strip() == "TRM D=16: 90/250 (36.0%)"  # 50 + 20 + 20
    assert "best_q 135 (54.0%)" in lines[1]  # 75 + 30 + 30


def test_a_sigma_without_its_sudoku_check_run_is_named(vp):
    val = report({"sudoku": (10, 1.0, 1.0), "lightup": (10, 1.0, 1.0)}, sigmas=(1.0, 2.0))
    check = report({"sudoku": (10, 0.5, 0.5)}, sigmas=(1.0,))
    lines = vp.score(val, check)
    assert lines[-1].strip() == "sigma 2: no sudoku-check run"


def test_the_command_prints_each_model(tmp_path):
    val, check = tmp_path / "v.json", tmp_path / "c.json"
    val.write_text(json.dumps(report({"sudoku": (4, 1.0, 1.0), "nurikabe": (4, 0.5, 1.0)},
                                     halt=0.5)))
    check.write_text(json.dumps(report({"sudoku": (4, 0.25, 0.5)}, halt=0.5)))
    r = subprocess.run([sys.executable, str(SCRIPT), f"m={val},{check}"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == "m (ckpt):"
    assert "halt 0.5" in r.stdout and "TRM D=16: 3/8 (37.5%)" in r.stdout


VAL = {"sudoku": (10, 1.0, 1.0), "lightup": (10, 0.5, 0.5)}
CHECK = {"sudoku": (10, 0.5, 0.5)}


@pytest.mark.parametrize("val, check, match", [
    (report(VAL, D=48), report(CHECK), "different D (48 vs 16)"),
    (report(VAL, halt=0.5), report(CHECK), "different halt (0.5 vs None)"),
    (report(CHECK), report(VAL), "CHECK holds ['lightup', 'sudoku']: expected sudoku only"),
    (report(VAL, split="golden"), report(CHECK), "chosen on validation only"),
])
def test_reports_that_do_not_make_one_score_are_refused(vp, val, check, match):
    with pytest.raises(vp.Mismatch, match=re.escape(match)):
        vp.score(val, check)


@pytest.mark.parametrize("arg, match", [("foo", "expected NAME=VAL.json,CHECK.json"),
                                        ("m=one.json", "expected NAME=VAL.json,CHECK.json"),
                                        ("m=/nope/v.json,/nope/c.json", "No such file")])
def test_bad_arguments_are_one_error_line(arg, match):
    r = subprocess.run([sys.executable, str(SCRIPT), arg], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and match in r.stderr and "Traceback" not in r.stderr
    assert r.stdout == ""
