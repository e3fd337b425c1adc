"""The PTRM sampler: exact reduction to the deterministic TRM, reproducibility, chunking."""

from __future__ import annotations

import re

import pytest
import torch

from ptrm_cli.engine import sampler
from ptrm_cli.engine.sampler import PERTURB, SamplerConfig, sample
from ptrm_cli.errors import UsageError

from fixtures_models import tiny_model

V = 40


@pytest.fixture(scope="module")
def model():
    return tiny_model(V, seed=1)


@pytest.fixture(scope="module")
def inputs():
    return torch.randint(1, V, (5, 100), generator=torch.Generator().manual_seed(0))


def run(model, inputs, seed=0, ids=None, **kw):
    return sample(model, inputs, SamplerConfig(**{"K": 4, "D": 2, "sigma": 0.5, **kw}), seed=seed,
                  puzzle_ids=ids)


@pytest.mark.parametrize("variant", [
    {}, {"forward_dtype": "float32"}, {"mlp_t": True, "pos_encodings": "none"},
    {"puzzle_emb_ndim": 32, "puzzle_emb_len": 1, "num_puzzle_identifiers": 3},
], ids=["att-bf16", "att-fp32", "mlp", "puzzle-emb"])
def test_k1_sigma0_is_the_deterministic_trm_bit_for_bit(variant, inputs):
    m = tiny_model(V, seed=2, **variant)
    ids = torch.tensor([0, 1, 2, 1, 0]) if variant.get("puzzle_emb_ndim") else None
    if ids is not None:
        m.puzzle_emb.weights.normal_()
    with torch.no_grad():
        ref = m(inputs, ids, steps=3)
    r = run(m, inputs, ids=ids, K=1, D=3, sigma=0.0, record_steps=True)
    assert torch.equal(r.preds[:, 0], ref.preds)
    assert torch.equal(r.q[:, 0], ref.q_halt)
    assert torch.equal(r.step_q[:, 0, -1], ref.q_halt)


def test_same_seed_same_result_other_seed_other_result(model, inputs):
    a, b, c = run(model, inputs, seed=7), run(model, inputs, seed=7), run(model, inputs, seed=8)
    assert torch.equal(a.preds, b.preds) and torch.equal(a.q, b.q)
    assert not torch.equal(a.q, c.q)


def test_noise_makes_rollouts_differ(model, inputs):
    r = run(model, inputs, K=6)
    assert (r.q.std(-1) > 0).all()
    r0 = run(model, inputs, K=3, sigma=0.0)  # no noise: K copies of the same trajectory
    assert torch.equal(r0.q, r0.q[:, :1].expand(-1, 3))


@pytest.mark.parametrize("chunk_rows", [1, 4, 8, 12, 1000])
def test_chunking_gives_the_same_result_as_one_batch(model, inputs, chunk_rows):
    whole = run(model, inputs, record_steps=True)
    part = run(model, inputs, chunk_rows=chunk_rows, record_steps=True)
    assert torch.equal(part.preds, whole.preds)
    assert torch.equal(part.q, whole.q)
    assert torch.equal(part.step_q, whole.step_q)
    assert torch.equal(part.step_preds, whole.step_preds)


def test_chunk_progress_is_reported(model, inputs):
    seen = []
    sample(model, inputs, SamplerConfig(K=4, D=1, sigma=0.1, chunk_rows=8),
           on_chunk=lambda done, total: seen.append((done, total)))
    assert seen == [(2, 5), (4, 5), (5, 5)]


def test_progress_within_a_chunk_comes_step_by_step(model, inputs):
    """One chunk held a whole split's K*D-step baseline and reported only at its end: on a
    CPU, hours without a progress line. Each step now reports its fraction of the chunk."""
    seen = []
    sample(model, inputs, SamplerConfig(K=2, D=4, sigma=0.1, chunk_rows=6),  # 3 puzzles a chunk
           on_chunk=lambda done, total: seen.append(done))
    assert seen == [0.75, 1.5, 2.25, 3, 3.5, 4, 4.5, 5]


def test_a_puzzles_rollouts_do_not_depend_on_its_neighbours(model, inputs):
    full = run(model, inputs)
    perm = torch.tensor([3, 0, 4, 1, 2])
    shuffled = run(model, inputs[perm])
    assert torch.equal(shuffled.preds, full.preds[perm]) and torch.equal(shuffled.q, full.q[perm])
    alone = run(model, inputs[2:3])
    assert torch.equal(alone.q, full.q[2:3])


@pytest.mark.parametrize("perturb", PERTURB)
def test_every_perturbation_target_runs_and_is_seeded(model, inputs, perturb):
    a = run(model, inputs, perturb=perturb, D=3)
    b = run(model, inputs, perturb=perturb, D=3)
    assert torch.equal(a.q, b.q)
    assert (a.q.std(-1) > 0).any()


def test_perturbation_targets_differ_as_documented(model, inputs):
    z, y, init = (run(model, inputs, perturb=p, D=3).q for p in ("z", "y", "init"))
    assert not torch.equal(z, y) and not torch.equal(z, init)
    # one step: "init" (noise before the first step only) is the same draw as "z"
    assert torch.equal(run(model, inputs, perturb="init", D=1).q, run(model, inputs, D=1).q)


def test_recorded_steps_and_latents(model, inputs):
    r = run(model, inputs, D=3, record_steps=True, record_latents=True)
    cfg = model.config
    assert r.step_q.shape == (5, 4, 3) and r.step_preds.shape == (5, 4, 3, 100)
    assert r.latents.shape == (5, 4, 3, cfg.total_len * cfg.hidden_size)
    assert r.latents.dtype == torch.float16 and r.step_preds.dtype == torch.int16
    assert torch.equal(r.step_q[..., -1], r.q)
    assert torch.equal(r.step_preds[..., -1, :].long(), r.preds)
    plain = run(model, inputs, D=3)
    assert plain.step_q is None and plain.latents is None
    assert torch.equal(plain.q, r.q)  # recording changes nothing


def test_halted_takes_each_rollouts_first_confident_step(model, inputs):
    r = run(model, inputs, D=4, sigma=0.3, record_steps=True)
    threshold = float(torch.sigmoid(r.step_q.float()).median())  # some rollouts halt, some not
    h, steps = sampler.halted(r, threshold)
    assert h.preds.shape == r.preds.shape and h.q.shape == r.q.shape
    assert steps.min() >= 1 and steps.max() <= 4 and (steps < 4).any()
    for p in range(r.q.shape[0]):  # the rule, one rollout at a time
        for k in range(r.q.shape[1]):
            conf = torch.sigmoid(r.step_q[p, k].float()) > threshold
            t = int(conf.nonzero()[0]) if conf.any() else 3
            assert int(steps[p, k]) == t + 1
            assert torch.equal(h.preds[p, k], r.step_preds[p, k, t].long())
            assert h.q[p, k] == r.step_q[p, k, t]
    never, steps = sampler.halted(r, 1.0)  # nothing is above 1: every rollout's last step
    assert torch.equal(never.preds, r.preds) and torch.equal(never.q, r.q)
    assert (steps == 4).all()
    with pytest.raises(ValueError, match="record_steps"):
        sampler.halted(run(model, inputs, D=2), 0.5)


def test_no_puzzles(model):
    r = run(model, torch.zeros(0, 100, dtype=torch.long), record_steps=True)
    assert r.preds.shape == (0, 4, 100) and r.q.shape == (0, 4) and r.step_q.shape == (0, 4, 2)


@pytest.mark.parametrize("bad", [{"K": 0}, {"D": 0}, {"sigma": -0.1}, {"perturb": "x"}])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError):
        SamplerConfig(**bad)


@pytest.mark.parametrize("bad", [-1, True, 1.5, "4"])
@pytest.mark.parametrize("fast", [False, True], ids=["eager", "fast"])
def test_a_bad_first_rollout_is_refused(model, inputs, bad, fast):
    """first_rollout=-1 ran, numbering rollouts below 0, and True ran as rollout 1."""
    cfg = SamplerConfig(K=2, D=1, sigma=0.5)
    with pytest.raises(UsageError, match=rf"first_rollout must be a whole number >= 0 \(got "
                                         rf"{re.escape(repr(bad))}\)"):
        sample(model, inputs, cfg, first_rollout=bad, fast=fast, compile=False)
    assert sample(model, inputs[:1], cfg, first_rollout=0, fast=fast, compile=False).q.shape \
        == (1, 2)


def test_rank0_reports_its_shards_progress_for_every_rank(model, inputs, monkeypatch):
    """Sharded over processes, progress came only when every rank had finished: a long
    evaluation on 4 GPUs printed nothing until its end (one was cut off with no output)."""
    from ptrm_cli.engine import distributed

    monkeypatch.setattr(distributed, "world", lambda: (0, 2))
    monkeypatch.setattr(distributed, "gather", lambda local, n=None: [local, local])
    seen = []
    distributed.sample(model, inputs, SamplerConfig(K=2, D=1, chunk_rows=2),
                       on_chunk=lambda done, total: seen.append((done, total)))
    P = inputs.shape[0]
    assert len(seen) > 2 and all(total == P for _, total in seen)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert all(d < P for d, _ in seen[:-1]) and seen[-1] == (P, P)  # 100% once gathered
