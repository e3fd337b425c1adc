"""The optimizers and schedule of the TRM recipe: AdamATan2 against the update written out per
element (TRM_REFERENCE.md §4), sign-SGD on puzzle-embedding rows, the warm-up/cosine schedule."""

from __future__ import annotations

import math

import pytest
import torch

from ptrm_cli.engine.optim import AdamATan2, SignSGDEmbedding, lr_at


def reference_adam_atan2(p, grads, lrs, b1=0.9, b2=0.95, wd=0.1):
    """The update of TRM_REFERENCE.md §4, one scalar at a time, in float64."""
    p = [float(x) for x in p]
    m = [0.0] * len(p)
    v = [0.0] * len(p)
    for t, (g, lr) in enumerate(zip(grads, lrs), start=1):
        for i, gi in enumerate(g.tolist()):
            p[i] = p[i] * (1 - lr * wd)
            m[i] = m[i] + (1 - b1) * (gi - m[i])
            v[i] = v[i] + (1 - b2) * (gi * gi - v[i])
            denom = math.sqrt(v[i]) / math.sqrt(1 - b2 ** t)
            p[i] = p[i] - lr / (1 - b1 ** t) * math.atan2(m[i], denom)
    return torch.tensor(p, dtype=torch.float64)


def test_adam_atan2_matches_the_elementwise_update():
    gen = torch.Generator().manual_seed(0)
    p0 = torch.randn(40, generator=gen, dtype=torch.float64)
    grads = [torch.randn(40, generator=gen, dtype=torch.float64) * 10 ** k
             for k in (-3, 0, 2, -1, 0)]
    grads[2][:5] = 0  # zero gradients: atan2(0, 0) = 0, no NaN (there is no epsilon)
    lrs = [1e-3, 5e-3, 1e-2, 1e-2, 2e-3]
    param = torch.nn.Parameter(p0.clone())
    opt = AdamATan2([param], lr=0.0, betas=(0.9, 0.95), weight_decay=0.1)
    for g, lr in zip(grads, lrs):
        param.grad = g.clone()
        opt.param_groups[0]["lr"] = lr
        opt.step()
    expected = reference_adam_atan2(p0.tolist(), grads, lrs)
    torch.testing.assert_close(param.detach(), expected, rtol=0, atol=1e-12)


def test_adam_atan2_first_step_is_bounded_and_scale_free():
    # t=1: m = 0.1 g, v/(1-b2) = g^2 -> step = lr / 0.1 * atan(0.1 sign g), for any |g|
    for scale in (1e-8, 1.0, 1e8):
        p = torch.nn.Parameter(torch.zeros(3))
        p.grad = torch.tensor([1.0, -1.0, 0.5]) * scale
        opt = AdamATan2([p], lr=1e-2, weight_decay=0.0)
        opt.step()
        step = 1e-2 / 0.1 * math.atan(0.1)
        torch.testing.assert_close(p.detach(), torch.tensor([-step, step, -step]))


def test_adam_atan2_moments_round_trip():
    a = torch.nn.Parameter(torch.randn(4, 3))
    b = torch.nn.Parameter(torch.randn(5))
    opt = AdamATan2([a, b], lr=1e-3)
    for _ in range(3):
        a.grad, b.grad = torch.randn(4, 3), torch.randn(5)
        opt.step()
    names = {a: "a", b: "b"}
    moments, t = opt.moments(names)
    assert t == 3 and set(moments) == {"a.exp_avg", "a.exp_avg_sq", "b.exp_avg", "b.exp_avg_sq"}
    a2, b2 = torch.nn.Parameter(a.detach().clone()), torch.nn.Parameter(b.detach().clone())
    opt2 = AdamATan2([a2, b2], lr=1e-3)
    opt2.load_moments(moments, t, {a2: "a", b2: "b"})
    g = torch.randn(4, 3), torch.randn(5)
    a.grad, b.grad = g[0].clone(), g[1].clone()
    a2.grad, b2.grad = g[0].clone(), g[1].clone()
    opt.step()
    opt2.step()
    assert torch.equal(a, a2) and torch.equal(b, b2)
    with pytest.raises(KeyError, match="no moments for 'b'"):
        opt2.load_moments({k: v for k, v in moments.items() if k.startswith("a.")}, t,
                          {a2: "a", b2: "b"})


def test_sign_sgd_sums_duplicate_ids_and_leaves_other_rows_alone():
    table = torch.ones(4, 2)
    opt = SignSGDEmbedding(table, lr=0.1, weight_decay=0.5)
    ids = torch.tensor([1, 3, 1])
    # id 1 appears twice: +2 and -3 sum to -1 (sign -1), although the first row alone is +
    grad = torch.tensor([[2.0, 1.0], [0.5, -0.5], [-3.0, 1.0]])
    opt.step(ids, grad)
    decay = 1 - 0.1 * 0.5
    expected = torch.tensor([[1.0, 1.0],                       # untouched: no decay either
                             [decay + 0.1, decay - 0.1],
                             [1.0, 1.0],
                             [decay - 0.1, decay + 0.1]])
    torch.testing.assert_close(table, expected)


def test_lr_schedule():
    kw = dict(base=1e-4, warmup=2000, total=10000)
    assert lr_at(1, **kw) == pytest.approx(1e-4 / 2000)      # the first update: base / warmup
    assert lr_at(1000, **kw) == pytest.approx(0.5e-4)
    assert lr_at(2000, **kw) == pytest.approx(1e-4)
    assert lr_at(9999, **kw) == pytest.approx(1e-4)           # min_ratio 1: constant
    cos = dict(kw, min_ratio=0.1)
    assert lr_at(2000, **cos) == pytest.approx(1e-4)
    assert lr_at(6000, **cos) == pytest.approx(1e-4 * (0.1 + 0.9 * 0.5))
    assert lr_at(10000, **cos) == pytest.approx(1e-5)
    assert lr_at(5, base=1.0, warmup=0, total=10) == pytest.approx(1.0)
