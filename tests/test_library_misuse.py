"""ptrm as a library (docs/PYTHON_API.md): an argument outside what a function takes is a
UsageError, both a PtrmError and a ValueError, that names the argument, raised before any
rollout runs. Each case was found by a researcher's script (QA 2026-11-27): some ran wrong
without a word, others failed deep inside torch."""

from __future__ import annotations

import re

import numpy as np
import pytest
import torch

from fixtures_models import installed_codecs, save_tiny_checkpoint
from ptrm_cli import solver
from ptrm_cli.engine import fast, metrics
from ptrm_cli.engine.sampler import SamplerConfig, sample
from ptrm_cli.errors import PtrmError, UsageError

SUDOKU = ".4...5...\n7..24...8\n.........\n.6....7..\n4...98..3\n...5...12\n...3.1...\n" \
         "321..7.5.\n9......2.\n"


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    if "sudoku" not in installed_codecs():
        pytest.skip("the sudoku codec is not installed")
    from ptrm_codecs.families import PPBENCH

    path = save_tiny_checkpoint(tmp_path_factory.mktemp("model") / "tiny", PPBENCH.vocab)
    return solver.load_model(path, "cpu")


@pytest.fixture(scope="module")
def sudoku(loaded):
    codec, parsed = solver.parse_puzzle(SUDOKU, codec="sudoku")
    return codec, parsed.puzzle, solver.family_for(codec, loaded)


def test_usage_errors_are_ptrm_errors_and_value_errors():
    assert issubclass(UsageError, PtrmError) and issubclass(UsageError, ValueError)


@pytest.mark.parametrize("kw, says", [
    ({"perturb": "latent"}, "perturb must be one of z, y, both, init (got 'latent')"),
    ({"sigma": -0.5}, "sigma must be a finite number >= 0 (got -0.5)"),
    ({"sigma": float("nan")}, "sigma must be a finite number >= 0"),
    ({"K": 0}, "K and D must be whole numbers >= 1 (got K=0, D=2)"),
    ({"K": 2.5}, "K and D must be whole numbers >= 1 (got K=2.5, D=2)"),
    ({"D": -1}, "K and D must be whole numbers >= 1 (got K=2, D=-1)"),
])
def test_solve_puzzle_refuses_settings_that_ran_without_noise_or_failed_late(loaded, sudoku,
                                                                             monkeypatch, kw,
                                                                             says):
    """perturb="latent" or sigma=-0.5 ran K copies of the deterministic TRM; K=0 failed after
    the model ran ("max() arg is an empty sequence")."""
    codec, puzzle, family = sudoku
    monkeypatch.setattr(fast, "_Pool", None)  # nothing may run
    with pytest.raises(UsageError, match=f"^{re.escape(says)}"):
        solver.solve_puzzle(loaded, codec, puzzle, family, **{"K": 2, "D": 2, "sigma": 0.3,
                                                              **kw})
    if "perturb" in kw:
        with pytest.raises(UsageError, match="perturb must be one of"):
            loaded.noise_choice(0.3, kw["perturb"])


def test_tokens_of_the_wrong_shape_or_vocabulary_are_named(loaded, sudoku):
    model = loaded.model
    L, V = model.config.seq_len, model.config.vocab_size
    codec, puzzle, family = sudoku
    tokens = torch.as_tensor(solver.encode_puzzle(codec, puzzle, family))
    cfg = SamplerConfig(K=2, D=1)
    cases = [
        (tokens, rf"inputs must be token ids \[P, {L}\] \(this model's seq_len {L}\), got "
                 rf"shape \({L},\)"),
        (tokens[None, :81], rf"got shape \(1, 81\)"),
        (tokens[None].numpy(), "inputs must be a torch tensor of token ids .* got ndarray"),
        (tokens[None].float(), "inputs must be integer token ids, got torch.float32"),
        (torch.full((1, L), V), rf"token ids must be in \[0, {V}\) .* got {V}..{V}"),
    ]
    for inputs, says in cases:
        with pytest.raises(UsageError, match=says):
            sample(model, inputs, cfg)
        with pytest.raises(UsageError, match=says):
            fast.run(fast.engine_for(model, compile=False), inputs, K=2, D=1, sigma=0.1)
    with pytest.raises(UsageError, match=r"puzzle_ids must be a tensor \[P\] = \[1\]"):
        sample(model, tokens[None], cfg, puzzle_ids=torch.zeros(3, dtype=torch.long))
    # the right calls run: a dataset's uint16 tokens (no min() of their own in torch), and
    # puzzle ids a model without a puzzle table ignores, whatever they are
    want = sample(model, tokens[None], cfg, seed=3).preds
    assert want.shape == (1, 2, L)
    assert model.config.puzzle_emb_ndim == 0
    for inputs, ids in ((tokens[None].to(torch.uint16), None),
                        (tokens[None].to(torch.int32), torch.tensor([7], dtype=torch.int32))):
        assert torch.equal(sample(model, inputs, cfg, seed=3, puzzle_ids=ids).preds, want)


def test_metrics_take_one_label_per_puzzle_and_check_shapes():
    """labels [P, L] of preds [P, K, L] lined P up with K: with P == K every rollout was
    judged against another puzzle's label, without an error."""
    preds = torch.tensor([[[1] * 5, [2] * 5], [[3] * 5, [4] * 5]])
    labels = torch.tensor([[2] * 5, [3] * 5])  # right: puzzle 0's rollout 1, puzzle 1's 0
    assert metrics.correct(preds, labels).tolist() == [[False, True], [True, False]]
    assert torch.equal(metrics.correct(preds, labels), metrics.correct(preds, labels[:, None]))
    q = torch.tensor([[0.1, 0.2], [0.3, 0.4]])
    with pytest.raises(UsageError, match=r"preds \[P, K, L\] and q \[P, K\], got "
                                         r"\(2, 2, 5\) and \(4,\)"):
        metrics.select(preds, q.flatten(), "best_q")
    with pytest.raises(UsageError, match=r"valid must be bool \[P, K\] = \[2, 2\], got "
                                         r"torch.bool \[2\]"):
        metrics.select(preds, q, "verified", torch.tensor([True, False]))
    with pytest.raises(UsageError, match="got torch.int64"):
        metrics.select(preds, q, "verified", torch.ones(2, 2, dtype=torch.long))
    assert metrics.select(preds, q, "best_q").tolist() == [1, 1]
    # rollout-major preds [K, P, L] with K != P broadcast as before
    kpl = torch.stack([labels, labels, torch.zeros_like(labels)])
    assert metrics.correct(kpl, labels).tolist() == [[True, True], [True, True], [False, False]]


def test_verifiers_check_what_they_are_given(loaded, sudoku):
    """A 100-token answer given to a sudoku-native verifier was a CodecBug ("a bug in the
    codec, not in the puzzle: tell its author"); one verifier for two puzzles' predictions
    judged only the first; a lightup given to the sudoku codec was "a 10x10 sudoku does not
    fit"."""
    from ptrm_cli import codec as registry

    codec, puzzle, family = sudoku
    native = codec.family("sudoku-native")
    tokens = np.asarray(solver.encode_puzzle(codec, puzzle, family))
    with pytest.raises(UsageError, match=r"a 'sudoku-native' answer is 81 tokens, got shape "
                                         r"\(100,\)"):
        solver.Verifier(codec, puzzle, native)(tokens)
    one = solver.Verifier(codec, puzzle, family)
    assert one(tokens).valid in (True, False)
    preds = torch.as_tensor(np.stack([tokens, tokens]))[:, None, :]
    with pytest.raises(UsageError, match="1 verifiers for 2 puzzles' predictions"):
        solver.valid_matrix([one], preds)
    if "lightup" in installed_codecs():
        _, lightup = registry.parse("https://puzz.link/p?akari/2/2/j")
        with pytest.raises(UsageError, match="a lightup puzzle given to the 'sudoku' codec"):
            solver.encode_puzzle(codec, lightup.puzzle, family)


@pytest.mark.parametrize("kw, says", [
    ({"wave": 0}, "wave must be a whole number >= 1 or None (got 0)"),
    ({"check_every": 0}, "check_every must be a whole number >= 1 or None (got 0)"),
    ({"chunk_rows": 0}, "chunk_rows must be a whole number >= 1 or None (got 0)"),
    ({"time_limit": -1}, "time_limit must be seconds >= 0 or None"),
    ({"time_limit": float("nan")}, "time_limit must be seconds >= 0 or None"),
    ({"q_threshold": 2.0}, "q_threshold must be a probability in [0, 1]"),
    ({"selector": "bestq"}, "unknown selector 'bestq'"),
])
def test_solve_puzzle_refuses_run_options_outside_what_ptrm_solve_takes(loaded, sudoku,
                                                                         monkeypatch, kw, says):
    """wave=0 ran waves of 1, check_every=0 meant None (checks at the end of a wave only), a
    negative time_limit or a q_threshold of 2 ran without a word (QA 2026-11-28)."""
    codec, puzzle, family = sudoku
    monkeypatch.setattr(fast, "_Pool", None)  # nothing may run
    with pytest.raises(UsageError, match=f"^{re.escape(says)}"):
        solver.solve_puzzle(loaded, codec, puzzle, family, **{"K": 2, "D": 2, **kw})


def test_a_family_the_codec_does_not_encode_into_is_named(loaded, sudoku):
    """A sudoku encoded "into" the maze family failed inside the codec with a message about
    the maze's wall numbers; a Verifier took it and decoded nonsense (QA 2026-11-28)."""
    from ptrm_cli import codec as registry

    if "maze" not in installed_codecs():
        pytest.skip("the maze codec is not installed")
    codec, puzzle, _ = sudoku
    maze = registry.get("maze").families[0]
    says = r"the 'sudoku' codec does not encode into the 'maze' family \(its families: ppbench"
    with pytest.raises(UsageError, match=says):
        solver.encode_puzzle(codec, puzzle, maze)
    with pytest.raises(UsageError, match=says):
        solver.Verifier(codec, puzzle, maze)


def test_width_curve_and_resolve_split_check_their_arguments(loaded):
    """width_curve(ks=[0]) failed in torch's argmax; resolve_split(types="sudoku") read the
    type letter by letter ("no s, u, d, o, k, u puzzles"), and sample=0 gave an empty set
    (QA 2026-11-28)."""
    from ptrm_cli import eval_sets

    preds = torch.zeros(2, 4, 5, dtype=torch.long)
    with pytest.raises(UsageError, match=r"ks must be whole numbers >= 1 \(got \[0, 2\]\)"):
        metrics.width_curve(preds, torch.zeros(2, 4), preds[:, 0], [0, 2])
    for kw, says in (({"types": "sudoku"}, r"types must be a list of type names, e\.g\. "
                                           r"\['sudoku'\] \(got 'sudoku'\)"),
                     ({"sample": 0}, r"sample must be a whole number >= 1 or None \(got 0\)"),
                     ({"limit": -1}, r"limit must be a whole number >= 1 or None \(got -1\)")):
        with pytest.raises(UsageError, match=says):
            eval_sets.resolve_split("golden", None, loaded, **kw)
