"""`ptrm solve` end to end with a tiny random model: every input format of every built-in codec,
exit codes, the JSON schema, early stop, and one clear message for every user mistake."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from ptrm_cli import solver
from ptrm_cli.app import app
from ptrm_cli.errors import PtrmError
from ptrm_cli.vocab import PAD, Vocab

import pzpr_oracle
from fixtures_models import GOLDEN_SIZES, golden_examples, installed_codecs, save_tiny_checkpoint

TYPES = tuple(GOLDEN_SIZES)
SCHEMA = {"type": str, "solved": bool, "valid": bool, "violations": list, "solution": dict,
          "confidence": float, "q": float, "agree": int, "K": int, "D": int, "sigma": float,
          "sigma_source": str,
          "seed": int, "selector": str, "time_s": float, "checkpoint": str}


@pytest.fixture(scope="module")
def ckpt(tmp_path_factory):
    from ptrm_codecs.families import PPBENCH

    return save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "tiny", PPBENCH.vocab)


def ptrm(*args, input=None):
    result = CliRunner().invoke(app, [str(a) for a in args], input=input)
    assert "Traceback" not in result.output, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), \
        repr(result.exception)
    return result


def solve_json(ckpt, *args, input=None):
    r = ptrm("solve", *args, "-c", ckpt, "--K", 3, "--D", 1, "--json", input=input)
    assert r.exit_code in (0, 1), r.output
    out = json.loads(r.stdout)
    for key, typ in SCHEMA.items():
        assert isinstance(out[key], typ), (key, out[key])
    assert out["solved"] == out["valid"] == (r.exit_code == 0)
    assert out["valid"] == (not out["violations"])
    assert 0 <= out["confidence"] <= 1 and 1 <= out["agree"] <= out["rollouts"] <= out["K"]
    assert set(out["solution"]) == {"pzprv3", "grid", "url", "legend"}
    return r, out


# -- every format of every built-in codec -------------------------------------------------------

def formats_of(pid: str, record: dict) -> dict[str, str]:
    """The puzzle of a golden record in each text format its codec reads."""
    codec = installed_codecs()[pid]
    puzzle, solution = codec.from_record(record)
    rows = puzzle.rows
    texts = {"url": codec.to_url(puzzle), "pzprv3": codec.to_pzprv3(puzzle),
             "pzprv3+answer": codec.to_pzprv3(puzzle, solution),
             "record": json.dumps(record)}
    body = codec.to_pzprv3(puzzle).splitlines()
    if pid == "sudoku":
        texts["line"] = codec.to_line(puzzle)
        texts["grid"] = "\n".join(texts["line"][i * 9:(i + 1) * 9] for i in range(9))
    elif pid == "heyawake":  # room ids, a blank line, clues
        ids, clues = body[5:5 + rows], body[5 + rows:5 + 2 * rows]
        texts["grid"] = "heyawake\n" + "\n".join(ids) + "\n\n" + "\n".join(clues)
    else:  # the pzprv3 grid without its header, after a line naming the type
        texts["grid"] = pid + "\n" + "\n".join(body[4:4 + rows])
    return texts


def format_params():
    path, why = pzpr_oracle.find_golden()
    if path is None:
        return [pytest.param(None, None, marks=pytest.mark.skip(reason=why))]
    codecs = installed_codecs()
    out = []
    for pid in TYPES:
        names = ["url", "pzprv3", "pzprv3+answer", "record", "grid"]
        names += ["line"] if pid == "sudoku" else []
        why = f"codec {pid!r} not installed yet"
        mark = [] if pid in codecs else [pytest.mark.skip(reason=why)]
        out += [pytest.param(pid, f, marks=mark, id=f"{pid}-{f}") for f in names]
    return out


@pytest.mark.parametrize("pid,fmt", format_params())
def test_solve_every_format(ckpt, tmp_path, pid, fmt):
    (_, record), = golden_examples([pid])
    text = formats_of(pid, record)[fmt]
    f = tmp_path / "puzzle.txt"
    f.write_text(text + "\n")
    _, out = solve_json(ckpt, f)
    assert out["type"] == pid and out["K"] == 3 and out["D"] == 1 and out["selector"] == "verified"
    rows, cols = GOLDEN_SIZES[pid]
    assert np.asarray(out["solution"]["grid"]).shape == (rows, cols)
    assert out["format"] == fmt.split("+")[0].replace("line", "grid")
    # only an input that carries a complete answer has one to compare with
    assert (out["matches_answer"] is None) == (fmt not in ("pzprv3+answer", "record"))
    # the written solution is pzprv3 text the same codec reads back
    if out["solution"]["pzprv3"] is not None:
        codec = installed_codecs()[pid]
        assert codec.parse(out["solution"]["pzprv3"]).puzzle.rows == rows


# -- inputs, exit codes, selection -------------------------------------------------------------

@pytest.fixture(scope="module")
def sudoku():
    codecs = installed_codecs()
    if "sudoku" not in codecs:
        pytest.skip("codec 'sudoku' is not installed")
    found = golden_examples(["sudoku"])
    if not found:
        pytest.skip("PPBench golden set not found")
    codec = codecs["sudoku"]
    puzzle, solution = codec.from_record(found[0][1])
    full = "".join(str(v) for v in solution.grid.reshape(-1))  # every cell given: always valid
    return codec, puzzle, full


def test_url_argument_stdin_and_inline_text(ckpt, sudoku):
    codec, puzzle, _ = sudoku
    url = codec.to_url(puzzle)
    _, a = solve_json(ckpt, url)
    _, b = solve_json(ckpt, "-", input=url + "\n")
    _, c = solve_json(ckpt, codec.to_line(puzzle))
    assert a["source"] == "URL" and b["source"] == "<stdin>" and c["source"] == "<argument>"
    assert a["solution"] == b["solution"] == c["solution"]  # same puzzle, same seed


def test_json_names_the_checkpoint_by_an_absolute_path(ckpt, sudoku, tmp_path, monkeypatch):
    """`-c best` was recorded as typed: read from another folder it named nothing. Absolute
    now, as eval's reports record it, and a link stays the link it was given as."""
    codec, puzzle, _ = sudoku
    os.symlink(ckpt, tmp_path / "best")
    monkeypatch.chdir(tmp_path)
    _, out = solve_json("best", codec.to_line(puzzle))
    assert out["checkpoint"] == os.path.join(os.getcwd(), "best")


def test_same_seed_same_answer(ckpt, sudoku):
    codec, puzzle, _ = sudoku
    line = codec.to_line(puzzle)
    _, a = solve_json(ckpt, line, "--sigma", 1.0, "--seed", 3)
    _, b = solve_json(ckpt, line, "--sigma", 1.0, "--seed", 3)
    assert (a["q"], a["solution"]) == (b["q"], b["solution"])


def test_exit_0_on_a_valid_solution_with_early_stop(ckpt, sudoku):
    *_, full = sudoku
    r = ptrm("solve", full, "-c", ckpt, "--K", 8, "--D", 1, "--wave", 2, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["solved"] and out["valid"] and out["violations"] == []
    assert out["rollouts"] == 2 and out["stopped_early"] and out["K"] == 8
    r = ptrm("solve", full, "-c", ckpt, "--K", 4, "--D", 1, "--wave", 2, "--no-early-stop",
             "--json")
    assert r.exit_code == 0 and json.loads(r.stdout)["rollouts"] == 4


def test_memory_budget_caps_the_wave(ckpt, sudoku):
    codec, puzzle, _ = sudoku
    row = solver.bytes_per_row(solver.load_model(str(ckpt), "cpu").config, 1)
    r = ptrm("solve", codec.to_url(puzzle), "-c", ckpt, "--K", 3, "--D", 1, "--memory",
             str(row), "--json")  # room for one rollout at a time
    out = json.loads(r.stdout)
    assert r.exit_code == 1 and out["waves"] == 3 and out["rollouts"] == 3


def test_exit_1_when_no_rollout_satisfies_the_rules(ckpt, sudoku):
    codec, puzzle, _ = sudoku
    r = ptrm("solve", codec.to_url(puzzle), "-c", ckpt, "--K", 3, "--D", 1)
    assert r.exit_code == 1
    assert "no rules-valid solution" in r.stdout and "K=3 D=1 sigma=0.2" in r.stdout
    assert "device=cpu" in r.stdout and "rollouts agree" in r.stdout
    assert "among 3 rollouts;" in r.stdout
    one = ptrm("solve", codec.to_url(puzzle), "-c", ckpt, "--K", 1, "--D", 1)
    assert one.exit_code == 1 and "among 1 rollout;" in one.stdout  # was "1 rollouts"


def test_an_unsolved_puzzle_says_what_was_shown_and_what_to_try_next(ckpt, sudoku):
    """It said "shown: the verified pick" (no pick is verified then: the selector falls back
    to the highest Q) and ended there, leaving a puzzle person no way forward."""
    codec, puzzle, _ = sudoku
    r = ptrm("solve", codec.to_url(puzzle), "-c", ckpt, "--K", 3, "--D", 1, "--seed", 5)
    out = " ".join(r.stdout.split())
    assert r.exit_code == 1 and "verified pick" not in out
    assert "shown: the most confident rollout, with" in out
    assert "to try harder: more rollouts, --K 12" in out and "--seed 6" in out
    r = ptrm("solve", codec.to_url(puzzle), "-c", ckpt, "--K", 3, "--D", 1, "--time-limit",
             100, "--device", "cpu")  # a time limit would stop the extra rollouts too
    assert "--K 12 --time-limit 0 (no time limit; minutes on a CPU)" in " ".join(r.stdout.split())


def test_a_sudoku_written_to_a_file_keeps_its_givens_apart(ckpt, sudoku, tmp_path):
    """`ptrm solve sudoku.txt > out.txt` lost the givens' bold: every digit looked alike. A
    given is written `[5]`, a digit the model filled in bare (docs/INFERENCE.md, Output)."""
    from test_codec_sudoku import read_board

    codec, puzzle, _ = sudoku
    args = (codec.to_url(puzzle), "-c", ckpt, "--K", 3, "--D", 1)
    answer = np.asarray(json.loads(ptrm("solve", *args, "--json").stdout)["solution"]["grid"])
    r = ptrm("solve", *args)  # not a terminal: styles are dropped, as in a file
    assert r.exit_code in (0, 1), r.output
    givens, digits = read_board(r.stdout)
    assert (givens == (puzzle.clues > 0)).all(), r.stdout
    assert (digits == answer).all(), r.stdout


def test_a_solved_puzzle_gets_no_advice_and_an_early_stop_says_why(ckpt, sudoku):
    *_, full = sudoku
    r = ptrm("solve", full, "-c", ckpt, "--K", 8, "--D", 1, "--wave", 2)
    out = " ".join(r.stdout.split())
    assert r.exit_code == 0 and "to try harder" not in out
    assert "2 of K=8 rollouts run, stopped at step 1 of D=1 (an answer satisfied the " \
           "rules)" in out
    assert "stopped early of" not in out  # was "2 rollouts (stopped early of K=8)"


def test_agreement_compares_answers_not_tokens(ckpt, sudoku):
    # every cell given: the rollouts' tokens differ, their decoded answers cannot
    *_, full = sudoku
    r = ptrm("solve", full, "-c", ckpt, "--K", 4, "--D", 1, "--sigma", 1.0, "--json")
    out = json.loads(r.stdout)
    assert out["agree"] == 4 and out["distinct_answers"] == 1 and out["valid_rollouts"] == 4
    r = ptrm("solve", full, "-c", ckpt, "--K", 4, "--D", 1)
    assert r.exit_code == 0
    assert "solved" in r.stdout and "4/4 rollouts agree" in r.stdout and "confidence" in r.stdout


def test_sigma_defaults_to_the_checkpoints_validated_one(ckpt, sudoku, tmp_path):
    from ptrm_codecs.families import PPBENCH
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from fixtures_models import tiny_model

    line = sudoku[0].to_line(sudoku[1])
    tuned = save_checkpoint(tmp_path / "tuned", tiny_model(len(PPBENCH.vocab)), PPBENCH.vocab,
                            {"sigma": 0.7})
    _, plain = solve_json(ckpt, line)
    assert (plain["sigma"], plain["sigma_source"]) == (solver.DEFAULT_SIGMA, "default")
    _, own = solve_json(tuned, line)
    _, explicit = solve_json(tuned, line, "--sigma", 0.7)
    _, given = solve_json(tuned, line, "--sigma", 0.0)
    assert (own["sigma"], own["sigma_source"]) == (0.7, "model")
    assert (own["q"], own["solution"]) == (explicit["q"], explicit["solution"])
    assert (given["sigma"], given["sigma_source"]) == (0.0, "option")  # --sigma wins
    assert "sigma=0.7 (the model's)" in ptrm("solve", line, "-c", tuned, "--K", 3).stdout
    cfg = Path(tuned) / "config.json"
    doc = json.loads(cfg.read_text())
    doc["meta"]["sigma"] = None  # recorded as null: no σ of its own
    cfg.write_text(json.dumps(doc))
    assert solve_json(tuned, line)[1]["sigma_source"] == "default"
    assert "sigma=0.2 (default)" in ptrm("solve", line, "-c", tuned, "--K", 3).stdout
    doc["meta"]["sigma"] = "high"
    cfg.write_text(json.dumps(doc))
    r = ptrm("solve", line, "-c", tuned, "--K", 3, "--D", 1)
    assert r.exit_code == 2 and "meta.sigma" in r.output and "'high'" in r.output
    assert solve_json(tuned, line, "--sigma", 0.3)[1]["sigma"] == 0.3  # --sigma still works


def test_the_noise_goes_where_the_models_sigma_was_chosen_for(sudoku, tmp_path):
    """meta.perturb says where meta.sigma puts the noise: left out, --perturb follows it; a
    σ chosen for one target is never used on another (2.0 on z solves, on y nothing does)."""
    from ptrm_codecs.families import PPBENCH
    from ptrm_cli.engine.checkpoint import save_checkpoint
    from fixtures_models import tiny_model

    line = sudoku[0].to_line(sudoku[1])
    on_y = save_checkpoint(tmp_path / "y", tiny_model(len(PPBENCH.vocab)), PPBENCH.vocab,
                           {"sigma": 0.4, "perturb": "y"})
    _, own = solve_json(on_y, line)
    assert (own["sigma"], own["sigma_source"], own["perturb"]) == (0.4, "model", "y")
    assert solve_json(on_y, line, "--sigma", 0.1)[1]["perturb"] == "y"  # σ given: same target
    assert solve_json(on_y, line, "--perturb", "z", "--sigma", 0.4)[1]["perturb"] == "z"
    r = ptrm("solve", line, "-c", on_y, "--K", 3, "--D", 1, "--perturb", "z")
    assert r.exit_code == 2 and "chosen for noise on y" in r.output and "--sigma" in r.output
    assert "Traceback" not in r.output
    # the hint's sweep runs as given: `--split val` needs its --data (it once lacked it)
    assert "`ptrm eval --split val --data DIR --perturb z --sigma ...`" in \
        " ".join(r.output.split())
    import inspect

    from ptrm_cli.commands.solve import solve as command
    # --sigma's help said "added to the latent" (z's), whatever the target
    assert "where --perturb says" in inspect.signature(command).parameters["sigma"].default.help
    # a σ recorded without a target is z's, as every checkpoint before meta.perturb
    on_z = save_checkpoint(tmp_path / "z", tiny_model(len(PPBENCH.vocab)), PPBENCH.vocab,
                           {"sigma": 0.4})
    assert solve_json(on_z, line)[1]["perturb"] == "z"
    r = ptrm("solve", line, "-c", on_z, "--K", 3, "--D", 1, "--perturb", "both")
    assert r.exit_code == 2 and "chosen for noise on z" in r.output
    # no σ of its own: any target takes the default σ
    no_sigma = save_checkpoint(tmp_path / "none", tiny_model(len(PPBENCH.vocab)),
                               PPBENCH.vocab, {})
    got = solve_json(no_sigma, line, "--perturb", "y")[1]
    assert (got["sigma"], got["sigma_source"], got["perturb"]) == (solver.DEFAULT_SIGMA,
                                                                   "default", "y")
    cfg = Path(on_y) / "config.json"
    doc = json.loads(cfg.read_text())
    doc["meta"]["perturb"] = "w"
    cfg.write_text(json.dumps(doc))
    r = ptrm("solve", line, "-c", on_y, "--K", 3, "--D", 1)
    assert r.exit_code == 2 and "meta.perturb" in r.output and "'w'" in r.output
    r = ptrm("solve", line, "-c", on_y, "--K", 3, "--D", 1, "--perturb", "w")
    assert r.exit_code == 2 and "expected z, y, both or init" in r.output


@pytest.mark.parametrize("selector", solver.SELECTORS)
def test_every_selector(ckpt, sudoku, selector):
    codec, puzzle, _ = sudoku
    r = ptrm("solve", codec.to_url(puzzle), "-c", ckpt, "--K", 4, "--D", 1, "--sigma", 1.0,
             "--select", selector, "--json")
    assert r.exit_code == 1 and json.loads(r.stdout)["selector"] == selector


def test_a_wrong_pick_among_valid_rollouts_is_not_called_no_valid_solution(ckpt, sudoku,
                                                                           monkeypatch):
    """With --select mode (or best_q, q_vote) the pick can break the rules while other
    rollouts are valid: it said "no rules-valid solution" next to "2 valid"."""
    codec, puzzle, _ = sudoku
    real = solver.solve_puzzle

    def two_valid(*args, **kwargs):
        res = real(*args, **kwargs)
        assert not res.valid     # the tiny model solves nothing
        res.valid_rollouts = 2
        return res

    monkeypatch.setattr(solver, "solve_puzzle", two_valid)
    r = ptrm("solve", codec.to_url(puzzle), "-c", ckpt, "--K", 4, "--D", 1, "--select", "mode")
    out = " ".join(r.stdout.split())
    assert r.exit_code == 1
    assert "the mode pick breaks the rules although 2 of the 4 rollouts are rules-valid" in out
    assert "no rules-valid solution" not in out


@pytest.mark.parametrize("confidence, noted", [(0.95, True), (0.8, True), (0.79, False)])
def test_a_confident_answer_the_rules_reject_gets_a_note(ckpt, sudoku, monkeypatch,
                                                        confidence, noted):
    """A 5x5 lightup for the 10x10 model was shown at "confidence 0.942" with three rule
    violations and nothing more: Q is sure off its training data too. Said now, once."""
    codec, puzzle, _ = sudoku
    real = solver.solve_puzzle

    def sure(*args, **kwargs):
        res = real(*args, **kwargs)
        assert not res.valid     # the tiny model solves nothing
        res.confidence = confidence
        return res

    monkeypatch.setattr(solver, "solve_puzzle", sure)
    r = ptrm("solve", codec.to_url(puzzle), "-c", ckpt, "--K", 2, "--D", 1)
    out = " ".join(r.stdout.split())
    assert r.exit_code == 1
    said = f"the model is confident ({confidence:.3f}) in an answer that the rules reject"
    assert (said in out) is noted


def test_best_q_selection_reports_the_max_q_rollout(ckpt, sudoku):
    codec, puzzle, _ = sudoku
    loaded = solver.load_model(ckpt, "cpu")
    family = solver.family_for(codec, loaded)
    res = solver.solve_puzzle(loaded, codec, puzzle, family, K=6, D=1, sigma=1.0,
                              selector="best_q", wave=2)
    assert res.rollouts == 6 and res.waves == 3 and not res.stopped_early
    assert res.q == pytest.approx(float(res.q_all.max()))
    # waves draw fresh noise: the three waves are not copies of each other
    assert len(set(res.q_all.tolist())) > 2


def test_the_library_defaults_are_ptrm_solves(ckpt, sudoku):
    """From Python, solve_puzzle without D, σ or a noise target ran with perturb='z' whatever
    the model's, and load_model needed a device: now both decide as `ptrm solve` does."""
    codec, puzzle, _ = sudoku
    loaded = solver.load_model(ckpt)
    assert loaded.device == ("cuda" if torch.cuda.is_available() else "cpu")
    loaded = solver.load_model(ckpt, "cpu")
    loaded.meta.update(sigma=0.7, perturb="y")   # as a checkpoint chosen on validation says
    family = solver.family_for(codec, loaded)
    mine = solver.solve_puzzle(loaded, codec, puzzle, family, K=3, seed=2, selector="best_q")
    same = solver.solve_puzzle(loaded, codec, puzzle, family, K=3, seed=2, selector="best_q",
                               D=loaded.config.halt_max_steps, sigma=0.7, perturb="y")
    assert torch.equal(mine.q_all, same.q_all) and torch.equal(mine.preds, same.preds)
    other = solver.solve_puzzle(loaded, codec, puzzle, family, K=3, seed=2, selector="best_q",
                                D=loaded.config.halt_max_steps, sigma=0.7, perturb="z")
    assert not torch.equal(mine.q_all, other.q_all)   # the target changes the rollouts


def test_one_wave_is_exactly_the_sampler(ckpt, sudoku):
    from ptrm_cli.engine.sampler import SamplerConfig, sample

    codec, puzzle, _ = sudoku
    loaded = solver.load_model(ckpt, "cpu")
    family = solver.family_for(codec, loaded)
    res = solver.solve_puzzle(loaded, codec, puzzle, family, K=4, D=2, sigma=0.5, seed=5,
                              selector="best_q")
    tokens = torch.as_tensor(codec.encode(puzzle, family=family))[None]
    ref = sample(loaded.model, tokens, SamplerConfig(K=4, D=2, sigma=0.5), seed=5)
    assert torch.equal(res.q_all, ref.q[0]) and torch.equal(res.preds, ref.preds[0])


# -- user mistakes: one message, exit code 2, no traceback -------------------------------------

@pytest.fixture(scope="module")
def other_family_ckpt(tmp_path_factory):
    vocab = Vocab("maze", (PAD, "wall", "open", "start", "goal", "path"))
    return save_tiny_checkpoint(tmp_path_factory.mktemp("maze") / "m", vocab, seq_len=900 // 9)


def bad(*args, match: str, input=None):
    r = ptrm(*args, input=input)
    assert r.exit_code == 2, (r.exit_code, r.output)
    assert match.lower() in " ".join(r.output.split()).lower(), r.output  # Rich wraps lines
    return r


def test_bad_inputs(ckpt, sudoku, tmp_path):
    codec, puzzle, _ = sudoku
    good = codec.to_url(puzzle)
    bad("solve", tmp_path / "missing.txt", "-c", ckpt, match="no such file")
    bad("solve", tmp_path, "-c", ckpt, match="is a directory")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    bad("solve", empty, "-c", ckpt, match="empty input")
    junk = tmp_path / "junk.txt"
    junk.write_text("hello world\nthis is not a puzzle\n")
    bad("solve", junk, "-c", ckpt, match="cannot tell the puzzle type")
    binary = tmp_path / "x.bin"
    binary.write_bytes(b"\x00\x01\x02\xff")
    bad("solve", binary, "-c", ckpt, match="binary")
    bad("solve", "https://example.com/puzzle.txt", "-c", ckpt, match="not a puzzle URL")
    # mistyped paths: a folder with a dot was read as a URL, a long name as puzzle text, a
    # glob that matched nothing as a URL ("URL: cannot tell the puzzle type")
    for typo in ("my.puzzles/lightup.url", "puzzles_for_testing_sudoku", "puzzles/sudok?.txt"):
        bad("solve", typo, "-c", ckpt, match=f"{typo}: no such file")
    # while a URL cut after its type, scheme or not, is still read as one
    bad("solve", "puzz.link/p?sudoku", "-c", ckpt, match="has no <cols>/<rows> size")
    bad("solve", "https://puzz.link/p?nosuchtype/9/9/abc", "-c", ckpt, match="unknown puzzle type")
    bad("solve", good, "-c", ckpt, "--codec", "nosuchtype", match="unknown puzzle type")
    # `--codec "$TYPE"` with TYPE unset: said, not read as "detect the type"
    bad("solve", good, "-c", ckpt, "--codec", "", match="--codec '': expected a puzzle type")
    bad("solve", "-", "-c", ckpt, input='{"pid": "sudoku", "oops": 1', match="not valid JSON")
    bad("solve", "-", "-c", ckpt, input='{"oops": 1}', match="puzzle type")
    short = tmp_path / "short.txt"
    short.write_text("sudoku\n123\n456\n")
    bad("solve", short, "-c", ckpt, match="short.txt")


def test_a_grid_no_type_claims_is_refused_with_the_types_that_read_it(ckpt, tmp_path):
    """A header-less grid that several types read, and no type's sniff claims, said "cannot
    tell the puzzle type" with "pass --codec TYPE": which types, the user had to find out."""
    rows = [". . . 1 . . . . .", ". 2 . . . . . . .", ". . . . . 3 . . ."]
    grid = tmp_path / "grid.txt"
    grid.write_text("\n".join(rows) + "\n")
    r = bad("solve", grid, "-c", ckpt, match="cannot tell the puzzle type: the text names none, "
            "and it reads as any of lightup, nurikabe, shakashaka, tapa")
    assert "start it with a line naming its type (`lightup`, say), or pass --codec TYPE" in \
        " ".join(r.output.split())
    # both ways the hint gives then work
    solve_json(ckpt, grid, "--codec", "tapa")
    (tmp_path / "named.txt").write_text("nurikabe\n" + grid.read_text())
    assert solve_json(ckpt, tmp_path / "named.txt")[1]["type"] == "nurikabe"
    # a grid only one type reads is that type's: it was refused with "it reads only as
    # heyawake", the user left to say so
    heyawake = tmp_path / "heyawake.txt"
    heyawake.write_text("0 0 1\n0 0 1\n\n2 . 1\n. . .\n")
    assert solve_json(ckpt, heyawake)[1]["type"] == "heyawake"


def test_windows_text_files(ckpt, sudoku, tmp_path):
    """What Windows editors and PowerShell's `>` write: a BOM and CRLF, or UTF-16 text."""
    codec, puzzle, _ = sudoku
    url = codec.to_url(puzzle)
    for name, data in (("bom.txt", b"\xef\xbb\xbf" + (url + "\r\n").encode()),
                       ("utf16.txt", (url + "\r\n").encode("utf-16")),  # with its BOM
                       ("utf16be.txt", b"\xfe\xff" + (url + "\r\n").encode("utf-16-be")),
                       # its BOM starts with UTF-16's: a NUL between characters, "cannot tell"
                       ("utf32.txt", (url + "\r\n").encode("utf-32"))):
        f = tmp_path / name
        f.write_bytes(data)
        _, out = solve_json(ckpt, f)
        assert out["format"] == "url" and out["type"] == "sudoku", name


def test_a_url_cut_after_its_type(ckpt):
    bad("solve", "https://puzz.link/p?sudoku", "-c", ckpt, match="URL for 'sudoku' has no")
    bad("solve", "https://puzz.link/p?pzprv3", "-c", ckpt, match="ends before the puzzle type")


def test_json_of_a_known_shape_reports_its_own_error():
    """A JSON puzzle without a type field (an ARC pair) is read by the codec that knows it, whose
    error names the file and the problem, rather than 'does not say its puzzle type'."""
    with pytest.raises(PtrmError, match=r"^pair.json: ARC output: colours are 0..9"):
        solver.parse_puzzle('{"input": [[1, 2]], "output": [[3, 11]]}', source="pair.json")
    with pytest.raises(PtrmError,
                       match=r"^grid.json: ARC input: rows differ in length: row 2 has 1 cell"):
        solver.parse_puzzle('[[1, 2], [3]]', source="grid.json")
    with pytest.raises(PtrmError, match="does not say its puzzle type"):
        solver.parse_puzzle('{"oops": 1}', source="x.json")


def test_user_text_prints_as_itself(ckpt, sudoku, tmp_path):
    """Paths and values go into Rich markup: brackets and emoji codes must print literally
    (a `[/b]` in a file name once crashed the error printer with a traceback)."""
    r = bad("solve", tmp_path / "a[/b].txt", "-c", ckpt, match="no such file")
    assert "a[/b].txt" in r.output
    named = tmp_path / "p[copy]:smile:.txt"
    named.write_text("sudoku\n123\n456\n")
    r = bad("solve", named, "-c", ckpt, match="p[copy]:smile:.txt")
    r = bad("solve", sudoku[0].to_url(sudoku[1]), "-c", ckpt, "--device", "cuda:x",
            match="--device 'cuda:x'")
    assert "cuda:N" in r.output


def test_one_puzzle_per_input(ckpt, sudoku, tmp_path):
    codec, puzzle, _ = sudoku
    url = codec.to_url(puzzle)
    two = tmp_path / "two.txt"
    two.write_text(f"{url}\n{url}\n")
    bad("solve", two, "-c", ckpt, match="two.txt:2: expected one puzzle")
    records = tmp_path / "two.jsonl"
    record = json.dumps({"pid": "sudoku", "puzzlink_url": url})
    records.write_text(f"{record}\n{record}\n")
    bad("solve", records, "-c", ckpt, match="two.jsonl:2: expected one puzzle")


def test_a_type_line_that_contradicts_codec(ckpt, sudoku, tmp_path):
    codec, puzzle, _ = sudoku
    grid = tmp_path / "grid.txt"
    line = codec.to_line(puzzle)
    grid.write_text("sudoku\n" + "\n".join(line[i * 9:(i + 1) * 9] for i in range(9)) + "\n")
    bad("solve", grid, "-c", ckpt, "--codec", "lightup",
        match="grid.txt:1: the first line names the type 'sudoku'")
    # --codec reads a type in any case, as a type line does
    from ptrm_cli import codec as registry
    assert registry.get("SuDoKu") is registry.get("sudoku") is registry.type_named(" SUDOKU ")


def test_a_type_line_may_use_the_url_id(ckpt):
    found = golden_examples(["lightup"]) if "lightup" in installed_codecs() else []
    if not found:
        pytest.skip("lightup codec or PPBench golden set not found")
    grid = formats_of("lightup", found[0][1])["grid"]
    assert grid.startswith("lightup\n")
    _, out = solve_json(ckpt, "-", input="akari\n" + grid.split("\n", 1)[1])
    assert out["type"] == "lightup" and out["format"] == "grid"


def test_an_unencodable_puzzle_names_its_file(ckpt, tmp_path):
    if "lightup" not in installed_codecs():
        pytest.skip("codec 'lightup' is not installed")
    big = [r for r in pzpr_oracle.golden_by_type("lightup") if r.get("width", 0) > 10]
    if not big:
        pytest.skip("PPBench golden set not found")
    path = tmp_path / "big.url"
    path.write_text(big[0]["puzzlink_url"] + "\n")
    bad("solve", path, "-c", ckpt, match="big.url: a lightup puzzle of")


@pytest.mark.skipif(not Path("/dev/fd").is_dir(), reason="no /dev/fd here")
def test_a_pipe_is_read_like_a_file(ckpt, sudoku):
    """`ptrm solve <(cat puzzle.txt)`: a pipe exists but is not a regular file."""
    codec, puzzle, _ = sudoku
    read, write = os.pipe()
    try:
        os.write(write, codec.to_url(puzzle).encode())
        os.close(write)
        r = ptrm("solve", f"/dev/fd/{read}", "-c", ckpt, "--K", 2, "--D", 1, "--json")
    finally:
        os.close(read)
    assert r.exit_code in (0, 1), r.output
    assert json.loads(r.stdout)["source"] == f"/dev/fd/{read}"


def test_time_limit_zero_is_no_limit(ckpt, sudoku):
    codec, puzzle, _ = sudoku
    r = ptrm("solve", codec.to_url(puzzle), "-c", ckpt, "--K", 2, "--D", 1, "--time-limit", 0,
             "--device", "cpu", "--json")
    out = json.loads(r.stdout)
    assert out["time_limit"] is None and not out["timed_out"] and out["rollouts"] >= 1


def test_check_every_without_early_stop_warns(ckpt, sudoku):
    codec, puzzle, _ = sudoku
    r = ptrm("solve", codec.to_url(puzzle), "-c", ckpt, "--K", 2, "--D", 1, "--select",
             "best_q", "--check-every", 2, "--json")
    assert r.exit_code in (0, 1)
    assert "--check-every applies to early stopping" in " ".join(r.stderr.split())
    assert json.loads(r.stdout)["check_every"] is None  # ignored, so not reported as used


def test_a_puzzle_larger_than_the_models_grid(ckpt):
    if "lightup" not in installed_codecs():
        pytest.skip("codec 'lightup' is not installed")
    big = [r for r in pzpr_oracle.golden_by_type("lightup") if r.get("width", 0) > 10]
    if not big:
        pytest.skip("PPBench golden set not found")
    bad("solve", big[0]["puzzlink_url"], "-c", ckpt, match="does not fit the ppbench family")


def test_bad_checkpoints(ckpt, sudoku, tmp_path, other_family_ckpt, monkeypatch):
    codec, puzzle, _ = sudoku
    good = codec.to_url(puzzle)
    bad("solve", good, "-c", tmp_path / "nope", match="no such file")
    (tmp_path / "empty_dir").mkdir()
    bad("solve", good, "-c", tmp_path / "empty_dir", match="not a ptrm checkpoint")
    notckpt = tmp_path / "weights.bin"
    notckpt.write_text("not a checkpoint")
    bad("solve", good, "-c", notckpt, match="not a checkpoint")
    bad("solve", good, "-c", other_family_ckpt, match="cannot encode for a model of the 'maze' family")
    bad("solve", good, "-c", other_family_ckpt, match="pass -c CHECKPOINT, a model trained on")
    import ptrm_cli.models

    monkeypatch.setattr(ptrm_cli.models, "default_checkpoint", lambda: None)
    r = bad("solve", good, match="--checkpoint")
    assert "no bundled checkpoint" in r.output


def test_bad_options(ckpt, sudoku):
    codec, puzzle, _ = sudoku
    good = codec.to_url(puzzle)
    bad("solve", good, "-c", ckpt, "--perturb", "x", match="--perturb")
    bad("solve", good, "-c", ckpt, "--select", "oracle", match="--select")
    bad("solve", good, "-c", ckpt, "--K", 0, match="--K")
    bad("solve", good, "-c", ckpt, "--sigma", -1, match="--sigma")
    bad("solve", good, "-c", ckpt, "--sigma", "inf", match="finite")
    bad("solve", good, "-c", ckpt, "--sigma", "nan", match="--sigma nan: expected a finite")
    bad("solve", "", "-c", ckpt, match="empty INPUT: expected a puzzle file")
    bad("solve", good, "-c", ckpt, "--memory", "lots", match="--memory")
    bad("solve", good, "-c", ckpt, "--device", "tpu", match="--device")


# -- helpers ------------------------------------------------------------------------------------

def test_default_checkpoint_helper(tmp_path, monkeypatch):
    import ptrm_cli.models as models

    monkeypatch.setattr(models, "DEFAULT_DIR", tmp_path)
    assert models.default_checkpoint() is None
    for name in models.FILES:
        (tmp_path / name).write_text("{}")
    assert models.default_checkpoint() == tmp_path


@pytest.mark.parametrize("text,expected", [("2GB", 2 << 30), ("512MiB", 512 << 20),
                                           ("1.5g", 3 << 29), ("1000", 1000), ("auto", None),
                                           (None, None)])
def test_parse_memory(text, expected):
    assert solver.parse_memory(text) == expected


def test_chunk_rows_hold_whole_puzzles():
    from fixtures_models import tiny_config

    cfg = tiny_config(294)
    assert solver.plan_chunk_rows(cfg, 100, 16, 1) == 100  # never less than one puzzle
    rows = solver.plan_chunk_rows(cfg, 7, 16, 64 << 20)
    assert rows % 7 == 0 and rows > 7
    assert solver.plan_chunk_rows(cfg, 7, 16, 64 << 20, record_latents=True) <= rows


def test_verifier_caches_per_distinct_prediction(sudoku):
    codec, puzzle, _ = sudoku
    family = codec.family()
    calls = []
    real = codec.verify

    class Spy:
        def __getattr__(self, name):
            return getattr(codec, name)

        def verify(self, p, s):
            calls.append(1)
            return real(p, s)

    v = solver.Verifier(Spy(), puzzle, family)
    tokens = codec.encode(puzzle, family=family)
    preds = torch.as_tensor(np.stack([tokens, tokens, tokens + 0]))
    assert v.valid(preds).tolist() == [False] * 3
    assert len(calls) == 1 and len(v) == 1


def test_json_writer_keeps_rows_on_one_line():
    text = solver.to_json({"grid": [[1, 2], [3, 4]], "v": [{"c": [0, 1]}], "e": {}, "n": None})
    assert "[1, 2]" in text and json.loads(text)["grid"] == [[1, 2], [3, 4]]


# -- found by a QA pass (session 11) ---------------------------------------------------------

LIGHTUP = Path(__file__).resolve().parents[1] / "examples" / "puzzles" / "lightup.url"


def test_json_is_strict_and_given_cpu_settings_are_not_called_defaults(ckpt):
    """`--time-limit inf` printed `Infinity` (node's JSON.parse refuses it), a huge σ printed
    NaN, and a given --threads was listed among the CPU defaults."""
    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))

    r = ptrm("solve", LIGHTUP, "-c", ckpt, "--K", 1, "--D", 1, "--time-limit", "inf",
             "--threads", 1, "--device", "cpu", "--json")
    out = strict(r.stdout)
    assert out["time_limit"] is None and "threads" not in (out["cpu_defaults"] or {})
    assert strict(solver.to_json({"q": float("nan"), "curve": [1.0, float("inf")]})) == \
        {"q": None, "curve": [1.0, None]}


@pytest.mark.parametrize("args, message", [
    (["--D", "99999999999999999999"], "less than or equal to 100000"),
    (["--K", "1000000000"], "less than or equal to 100000"),
    (["--time-limit", "nan"], "--time-limit nan: expected seconds >= 0"),
])
def test_sizes_and_limits_out_of_range_are_one_message(ckpt, args, message):
    bad("solve", LIGHTUP, "-c", ckpt, *args, match=message)


def test_out_of_memory_is_one_message(ckpt, monkeypatch):
    def too_big(*a, **k):
        raise RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate "
                           "80000000000 bytes")

    monkeypatch.setattr(solver, "solve_puzzle", too_big)
    bad("solve", LIGHTUP, "-c", ckpt, "--K", 4, "--D", 1, "--device", "cpu",
        match="out of memory on cpu: 4 rollouts of 1 steps")


def test_type_names_match_whatever_their_case(ckpt):
    """`?Sudoku/...` said "URL is a 'Sudoku' puzzle, not 'sudoku'", while --codec LIGHTUP
    worked."""
    url = LIGHTUP.read_text().strip()
    pid = url.split("?")[1].split("/")[0]
    r = ptrm("solve", url.replace(f"?{pid}/", f"?{pid.upper()}/"), "-c", ckpt, "--K", 1,
             "--D", 1, "--json")
    assert r.exit_code in (0, 1) and json.loads(r.stdout)["type"] == "lightup", r.output


def test_a_closed_pipe_and_a_full_disk_end_cleanly(tmp_path):
    """`ptrm ... | head` ended with status 1 (Rich's choice), which `ptrm solve` uses for "no
    valid answer"; output to a full device was a traceback."""
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "ptrm_cli", "codecs"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()  # the reader is gone before the first line
    assert p.wait(timeout=300) == 141 and b"Traceback" not in p.stderr.read()
    if Path("/dev/full").exists():
        with open("/dev/full", "w") as full:
            r = subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
        assert r.returncode == 2 and "No space left on device" in r.stderr, r.stderr


def test_a_line_of_a_built_datasets_puzzles_jsonl_solves(ckpt, tmp_path):
    """INFERENCE.md says "one JSON dataset record"; a puzzles.jsonl line (type, key, text,
    answer) was refused as an unrecognised record."""
    url = LIGHTUP.read_text().strip()
    line = {"answer": [[0] * 10 for _ in range(10)], "key": url, "line": 1,
            "source": "gen.jsonl", "text": url, "type": "lightup"}
    (tmp_path / "rec.json").write_text(json.dumps(line, sort_keys=True) + "\n")
    r = ptrm("solve", tmp_path / "rec.json", "-c", ckpt, "--K", 1, "--D", 1, "--json")
    assert r.exit_code in (0, 1), r.output
    out = json.loads(r.stdout)
    assert out["type"] == "lightup" and out["format"] == "record"


def test_a_memory_budget_too_small_or_that_cuts_the_wave_says_so(ckpt):
    """`--memory 1B` ran with waves of 1 and `--wave 4` was silently cut to what fit."""
    loaded = solver.load_model(str(ckpt), "cpu")
    row = solver.bytes_per_row(loaded.config, 2)
    bad("solve", LIGHTUP, "-c", ckpt, "--D", 2, "--memory", "1B",
        match="--memory 1B: one rollout of this model needs about")
    r = ptrm("solve", LIGHTUP, "-c", ckpt, "--K", 4, "--wave", 4, "--D", 2, "--memory",
             str(2 * row), "--json")
    assert r.exit_code in (0, 1), r.output
    assert json.loads(r.stdout)["wave"] == 2 and "waves of 2 rollouts, not 4" in r.stderr


def test_classic_mac_line_ends_read_as_newlines(ckpt, tmp_path):
    """A pzprv3 file with CR-only line ends said it ended before the puzzle type line."""
    text = (Path(__file__).resolve().parents[1] / "examples" / "puzzles" /
            "shakashaka.pzprv3").read_text()
    (tmp_path / "cr.pzprv3").write_bytes(text.replace("\n", "\r").encode())
    r = ptrm("solve", tmp_path / "cr.pzprv3", "-c", ckpt, "--K", 1, "--D", 1, "--json")
    assert r.exit_code in (0, 1), r.output
    assert json.loads(r.stdout)["format"] == "pzprv3"


def test_a_puzzle_outside_what_the_model_trained_on_gets_a_note(tmp_path):
    """A checkpoint that says what it trained on (meta.trained_on, written by `ptrm train`;
    the bundled model's lists 9x9 sudoku and 10x10 of the rest): a 4x4 sudoku, or a type it
    never saw, is solved anyway but with a note on stderr and in the JSON's `notes`."""
    from ptrm_codecs.families import PPBENCH
    from fixtures_models import tiny_model
    from ptrm_cli.engine.checkpoint import save_checkpoint

    seen = {"sudoku": "9x9", "lightup": "10x10"}
    ck = save_checkpoint(tmp_path / "m", tiny_model(len(PPBENCH.vocab), 0), PPBENCH.vocab,
                         {"trained_on": seen})
    small = tmp_path / "s4.txt"
    small.write_text("sudoku\n1...\n..3.\n.4..\n...2\n")
    r, out = solve_json(ck, small)
    assert out["notes"] == ["this model trained on 9x9 sudoku only, and this one is 4x4: it "
                            "may not find a valid answer"]
    assert "note: this model trained on 9x9 sudoku only" in r.stderr
    # rows and columns named where they differ: "10x10 ... this one is 8x9" read both ways
    rows = "\n".join([". " * 9] * 8) + "\n"
    assert solve_json(ck, "-", input="lightup\n" + rows)[1]["notes"] == [
        "this model trained on 10x10 lightup only, and this one is 8 rows x 9 columns: it may "
        "not find a valid answer"]
    ck8 = save_checkpoint(tmp_path / "m8", tiny_model(len(PPBENCH.vocab), 0), PPBENCH.vocab,
                          {"trained_on": {"nurikabe": "9x8"}})
    assert solve_json(ck8, "-", input="nurikabe\n" + rows)[1]["notes"] == [
        "this model trained on 9 rows x 8 columns nurikabe only, and this one is 8 rows x 9 "
        "columns: it may not find a valid answer"]
    nine = "sudoku\n" + "\n".join(["1........"] + ["........."] * 8) + "\n"
    assert solve_json(ck, "-", input=nine)[1]["notes"] == []
    # a size written with a leading zero (the format check takes it) is that size: the note
    # said "trained on 9x9 sudoku only, and this one is 9x9"
    ck09 = save_checkpoint(tmp_path / "m09", tiny_model(len(PPBENCH.vocab), 0), PPBENCH.vocab,
                           {"trained_on": {"sudoku": "09x09"}})
    assert solve_json(ck09, "-", input=nine)[1]["notes"] == []
    # a puzzle the model cannot hold at all (12x12 in a 10x10 family): the error, no note
    r = ptrm("solve", "-", "-c", ck, "--K", 1, "--D", 1,
             input="lightup\n" + "\n".join(["." * 12] * 12) + "\n")
    assert r.exit_code == 2 and "does not fit" in r.stderr and "note:" not in r.stderr
    (pid, rec), = golden_examples(["nurikabe"])
    r, out = solve_json(ck, rec["puzzlink_url"])
    assert out["notes"] == ["this model did not train on nurikabe (it trained on lightup, "
                            "sudoku): it may not find a valid answer"]
    # no record, no note (checkpoints from before it, official TRM files)
    plain = save_tiny_checkpoint(tmp_path / "plain", PPBENCH.vocab)
    assert solve_json(plain, small)[1]["notes"] == []
    # "*" stands for the types it does not name; sizes in any case
    for i, (kept, n_notes) in enumerate([({"*": "4X4"}, 0), ({"*": "any"}, 0),
                                         ({"lightup": "10x10", "*": "9x9"}, 1)]):
        ck = save_checkpoint(tmp_path / f"k{i}", tiny_model(len(PPBENCH.vocab), 0),
                             PPBENCH.vocab, {"trained_on": kept})
        assert len(solve_json(ck, small)[1]["notes"]) == n_notes, kept
    # a hand-edited record that is not {type: size}: one clear message, exit 2
    for bad in ([9, 9], {"sudoku": 9}, {"sudoku": None}, {"sudoku": "nine"}):
        ck = save_checkpoint(tmp_path / f"bad{len(str(bad))}", tiny_model(len(PPBENCH.vocab), 0),
                             PPBENCH.vocab, {"trained_on": bad})
        r = ptrm("solve", small, "-c", ck, "--K", 1, "--D", 1)
        assert r.exit_code == 2 and "config.json meta.trained_on is" in r.output, r.output


def test_the_bundled_model_says_what_it_trained_on():
    meta = json.loads((Path(solver.__file__).parent / "models/default/config.json").read_text())
    assert meta["meta"]["trained_on"] == {"heyawake": "10x10", "lightup": "10x10",
                                          "nurikabe": "10x10", "shakashaka": "10x10",
                                          "sudoku": "9x9", "tapa": "10x10"}


def test_a_type_the_bundled_model_cannot_read_says_so_in_its_words(installed_codec, tmp_path):
    """Without -c it said "codec 'maze' cannot encode for a 'ppbench' model", naming a model
    the user never chose, and its recipe left out the family to build: it now says it as
    `ptrm codecs maze` does, and the hint gives the family."""
    installed_codec("maze")
    path = tmp_path / "m.txt"
    path.write_text("maze\nS . #\n# . #\n# . G\n")
    r = ptrm("solve", path, "--K", 1, "--D", 1)
    out = " ".join(r.output.split())
    assert r.exit_code == 2
    assert ("the bundled model does not solve maze puzzles (it reads the ppbench token family, "
            "and maze is encoded in the maze family)") in out
    assert "`ptrm build-data SOURCES --family maze`, then `ptrm train`" in out


def test_cpu_threads_leave_busy_cores_alone(monkeypatch):
    """ptrm solve's CPU thread rule, public for library users: the cores the 1-minute load
    leaves idle, at least one (two threads ran 6x slower than one at load 12 on 2 cores)."""
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    for load, threads in ((0.0, 8), (2.6, 5), (7.9, 1), (12.0, 1)):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert solver.cpu_threads() == threads, load

    def no_load():
        raise OSError

    monkeypatch.setattr(os, "getloadavg", no_load)   # no load average here: every core
    assert solver.cpu_threads() == 8


def test_a_type_read_off_the_grid_alone_is_said(ckpt):
    """A header-less lightup grid ('-' a wall, digits its clues) reads as a 4x4 sudoku too: it
    was solved as one without a word. A grid that names no type now says what it was read
    as; a grid with its type line, a URL, or --codec say nothing."""
    grid = ". . . .\n1 . . .\n. . . 2\n- . . -\n"
    r, out = solve_json(ckpt, "-", input=grid)
    said = [n for n in out["notes"] if "names no type" in n]
    assert said == ["the text names no type and reads like sudoku; if it is another type, "
                    "start it with a line naming the type, or pass --codec TYPE"]
    for given, extra in (("lightup\n" + grid, []), (grid, ["--codec", "lightup"])):
        r, out = solve_json(ckpt, "-", *extra, input=given)
        assert not [n for n in out["notes"] if "names no type" in n], out["notes"]


def test_a_grid_only_its_own_type_reads_needs_no_note(ckpt):
    """The README's first command solves examples/puzzles/sudoku.txt, a header-less 9x9 grid
    no other codec reads: it printed "if it is another type, ..." about a grid that is none."""
    grid = (Path(__file__).resolve().parents[1] / "examples/puzzles/sudoku.txt").read_text()
    r, out = solve_json(ckpt, "-", input=grid)
    assert not [n for n in out["notes"] if "names no type" in n], out["notes"]
