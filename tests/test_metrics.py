"""Selectors and scores: the invariants the paper's numbers rest on, and the documented tie
rules."""

from __future__ import annotations

import math

import pytest
import torch

from ptrm_cli.engine import metrics
from ptrm_cli.engine.metrics import SELECTORS, agreement, select


def P(*rows):
    """[1, K, L] predictions from K short answer rows."""
    return torch.tensor([rows])


def Q(*vals):
    return torch.tensor([vals], dtype=torch.float32)


def random_run(seed=0, P=40, K=12, L=6, V=3):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(1, V + 1, (P, L), generator=g)
    preds = torch.randint(1, V + 1, (P, K, L), generator=g)
    # make some rollouts correct so the invariants are not vacuous
    hit = torch.rand(P, K, generator=g) < 0.2
    preds[hit] = labels[:, None, :].expand(-1, K, -1)[hit]
    q = torch.randn(P, K, generator=g)
    valid = torch.rand(P, K, generator=g) < 0.3
    return preds, q, labels, valid


# -- invariants ----------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(5))
def test_pass_at_k_bounds_every_selector(seed):
    preds, q, labels, valid = random_run(seed)
    ok = metrics.correct(preds, labels[:, None, :])
    passed = metrics.pass_at_k(ok)
    for how in SELECTORS:
        chosen = select(preds, q, how, valid)
        got = ok[torch.arange(len(chosen)), chosen]
        assert not (got & ~passed).any(), how  # a selector can only be right where pass@K is
        assert passed.float().mean() >= got.float().mean()


@pytest.mark.parametrize("seed", range(5))
def test_best_q_picks_the_max_q_rollout(seed):
    preds, q, _, _ = random_run(seed)
    chosen = select(preds, q, "best_q")
    assert torch.equal(q[torch.arange(len(q)), chosen], q.max(-1).values)


def test_selectors_agree_when_k_is_1():
    preds, q, labels, valid = random_run(K=1)
    for how in SELECTORS:
        assert (select(preds, q, how, valid) == 0).all()


def test_verified_is_right_by_rules_whenever_any_rollout_is():
    preds, q, _, valid = random_run(3)
    chosen = select(preds, q, "verified", valid)
    picked = valid[torch.arange(len(chosen)), chosen]
    assert torch.equal(picked, valid.any(-1))


# -- tie rules -----------------------------------------------------------------------------------

def test_best_q_ties_go_to_the_lowest_index():
    assert select(P([1], [2], [3]), Q(0.5, 0.9, 0.9), "best_q").item() == 1


def test_mode_picks_the_most_frequent_answer_and_its_highest_q_rollout():
    preds = P([1, 1], [2, 2], [1, 1], [3, 3], [1, 1])
    q = Q(0.1, 5.0, 0.7, 4.0, 0.3)
    assert select(preds, q, "mode").item() == 2  # answer [1,1] x3; its best Q is rollout 2


def test_mode_ties_go_to_the_higher_mean_q():
    preds = P([1], [2], [2], [1])
    q = Q(0.0, 1.0, 0.0, 0.2)  # both answers x2; mean Q: [1] 0.1, [2] 0.5
    assert select(preds, q, "mode").item() == 1


def test_mode_full_ties_go_to_the_answer_reached_first():
    preds = P([2], [1], [1], [2])
    q = Q(0.5, 0.5, 0.5, 0.5)  # equal count and mean Q: answer [2] appears first
    assert select(preds, q, "mode").item() == 0


def test_q_vote_weighs_rollouts_by_confidence():
    preds = P([1], [1], [2])
    q = Q(-3.0, -3.0, 3.0)  # two unsure votes (2 x 0.047) lose to one sure vote (0.95)
    assert select(preds, q, "q_vote").item() == 2
    assert select(preds, q, "mode").item() == 0


def test_verified_picks_the_highest_q_valid_rollout_else_best_q():
    preds = P([1], [2], [3], [4])
    q = Q(0.9, 0.1, 0.5, 0.7)
    assert select(preds, q, "verified", torch.tensor([[False, True, True, False]])).item() == 2
    assert select(preds, q, "verified", torch.zeros(1, 4, dtype=torch.bool)).item() == 0


def test_verified_never_returns_an_invalid_rollout_when_a_valid_one_exists():
    q = Q(-math.inf, -math.inf, 0.0)
    valid = torch.tensor([[False, True, False]])
    assert select(P([1], [2], [3]), q, "verified", valid).item() == 1


def test_selector_errors():
    with pytest.raises(ValueError, match="verdicts"):
        select(P([1]), Q(0.0), "verified")
    with pytest.raises(ValueError, match="unknown selector"):
        select(P([1]), Q(0.0), "oracle")


# -- scores --------------------------------------------------------------------------------------

def test_correct_and_cell_accuracy_ignore_pad():
    labels = torch.tensor([[1, 2, 0, 0]])
    preds = torch.tensor([[[1, 2, 7, 9], [1, 3, 0, 0]]])
    assert metrics.correct(preds, labels[:, None]).tolist() == [[True, False]]
    assert metrics.cell_accuracy(preds, labels[:, None]).tolist() == [[1.0, 0.5]]


def test_agreement_counts_rollouts_with_the_chosen_answer():
    preds = P([1, 1], [2, 2], [1, 1], [1, 1])
    assert agreement(preds, torch.tensor([0])).item() == 3
    assert agreement(preds, torch.tensor([1])).item() == 1


def test_wilson_interval():
    lo, hi = metrics.wilson(5, 10)
    assert lo == pytest.approx(0.2366, abs=1e-4) and hi == pytest.approx(0.7634, abs=1e-4)
    assert metrics.wilson(0, 10)[0] == 0.0 and metrics.wilson(10, 10)[1] == 1.0
    assert metrics.wilson(0, 0) == (0.0, 1.0)
    for s, n in ((1, 61), (55, 61), (30, 30)):
        lo, hi = metrics.wilson(s, n)
        assert 0 <= lo <= s / n <= hi <= 1


def test_width_curve_at_k_max_is_the_full_run():
    preds, q, labels, valid = random_run(1)
    K = preds.shape[1]
    curve = metrics.width_curve(preds, q, labels, [1, 2, 5, K], valid=valid, draws=4)
    ok = metrics.correct(preds, labels[:, None, :])
    ar = torch.arange(len(preds))
    full = curve[K]
    assert full["pass"] == pytest.approx(ok.any(-1).float().mean().item())
    for how in ("best_q", "mode", "verified"):
        chosen = select(preds, q, how, valid)
        assert full[how] == pytest.approx(ok[ar, chosen].float().mean().item()), how
    for k, row in curve.items():
        assert row["pass"] >= max(row["best_q"], row["mode"], row["verified"]) - 1e-9, k
    assert curve[1]["pass"] == pytest.approx(curve[1]["best_q"])  # one rollout: nothing to pick
    assert set(metrics.width_curve(preds, q, labels, [K, K + 1])) == {K}  # k > K is skipped


def test_width_curve_is_reproducible():
    preds, q, labels, valid = random_run(2)
    a = metrics.width_curve(preds, q, labels, [2, 5], valid=valid, seed=3)
    b = metrics.width_curve(preds, q, labels, [2, 5], valid=valid, seed=3)
    assert a == b


def test_width_curve_judged_by_another_matrix():
    """`ok` judges each rollout (eval passes the rules verifier's valid): at k = K the curve is
    then pass = any valid rollout and each selector's pick judged by it, not by label."""
    preds, q, labels, valid = random_run(3)
    K = preds.shape[1]
    curve = metrics.width_curve(preds, q, labels, [1, K], valid=valid, ok=valid, draws=2)
    ar = torch.arange(len(preds))
    assert curve[K]["pass"] == pytest.approx(valid.any(-1).float().mean().item())
    for how in ("best_q", "mode", "verified"):
        chosen = select(preds, q, how, valid)
        assert curve[K][how] == pytest.approx(valid[ar, chosen].float().mean().item()), how
    assert curve[K]["verified"] == curve[K]["pass"]  # by the rules a verifier is the oracle
    # left out, label match (this run's valid is drawn apart from its labels: they differ)
    by_label = metrics.width_curve(preds, q, labels, [K], valid=valid)
    ok = metrics.correct(preds, labels[:, None, :])
    assert by_label[K]["pass"] == pytest.approx(ok.any(-1).float().mean().item())
    assert by_label[K]["pass"] != pytest.approx(curve[K]["pass"])
