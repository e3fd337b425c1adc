"""RMSNorm summed in a fixed order (TRM.fixed_order_norm, `ptrm bench --exact`): the same
function as the reduction up to float32 rounding, a pairwise order no backend may change, and
a compiled network that gives eager's bits where the reduction does not."""

from __future__ import annotations

import copy

import pytest
import torch

from ptrm_cli.engine.fast import precast
from ptrm_cli.engine.model import TRM, TRMConfig, pairwise_mean_square, rms_norm


def tiny(mlp_t: bool = False) -> TRM:
    torch.manual_seed(0)
    return TRM(TRMConfig(vocab_size=20, seq_len=16, hidden_size=64, num_heads=4,
                         mlp_t=mlp_t, puzzle_emb_ndim=0, puzzle_emb_len=0)).eval()


@pytest.mark.parametrize("width", [512, 97, 7, 2, 1])
def test_the_pairwise_mean_is_the_mean(width):
    h = torch.randn(5, width, dtype=torch.float64) * 3
    assert pairwise_mean_square(h).shape == (5, 1)
    assert torch.allclose(pairwise_mean_square(h), h.square().mean(-1, keepdim=True),
                          rtol=1e-12, atol=0)


def test_the_order_is_pairwise_halvings_with_an_odd_element_carried():
    """Squares whose float32 sum depends on the order: 2^24 + 1 rounds back to 2^24."""
    h = torch.tensor([4096.0, 1.0, 1.0, 1.0, 1.0])  # squares: 2^24, 1, 1, 1, 1
    s = h.square()
    # width 5: (s0+s2, s1+s3), s4 carried; width 3: ((s0+s2)+(s1+s3)), s4; then their sum
    level1 = torch.stack([s[0] + s[2], s[1] + s[3], s[4]])
    level2 = torch.stack([level1[0] + level1[1], level1[2]])
    tree = (level2[0] + level2[1]) / 5
    in_turn = s[0]
    for v in s[1:]:
        in_turn = in_turn + v
    assert tree != in_turn / 5  # the order matters for these values
    assert torch.equal(pairwise_mean_square(h), tree.reshape(1))


def test_a_model_switches_every_block_and_keeps_it_through_copies():
    model = tiny()
    assert not any(b.pairwise_norm for b in model.L_level.layers)
    assert model.fixed_order_norm() is model
    assert all(b.pairwise_norm for b in model.L_level.layers)
    for copied in (copy.deepcopy(model), precast(model)):  # what the fast engine runs
        assert all(b.pairwise_norm for b in copied.L_level.layers)
    model.fixed_order_norm(False)
    assert not any(b.pairwise_norm for b in model.L_level.layers)


@pytest.mark.parametrize("mlp_t", [False, True])
def test_the_switch_reaches_the_networks_norms(mlp_t, monkeypatch):
    """Every RMSNorm of a step asks for the pairwise sum (TRM-MLP's over the sequence too)."""
    import ptrm_cli.engine.model as M

    calls = []
    real = M.rms_norm
    monkeypatch.setattr(M, "rms_norm", lambda x, eps, pairwise=False:
                        calls.append(pairwise) or real(x, eps, pairwise))
    model = tiny(mlp_t).fixed_order_norm()
    x = model.embed(torch.randint(0, 20, (2, 16)))
    with torch.no_grad():
        model.step(model.init_carry(2), x)
    cfg = model.config
    assert calls == [True] * (cfg.H_cycles * (cfg.L_cycles + 1) * cfg.L_layers * 2)


def test_compiled_it_gives_eagers_bits_where_the_reduction_does_not():
    """Inductor on the CPU stands in for the GPU's: its reduction sums in another order than
    eager torch (so some outputs differ by a bf16 step); the pairwise sum does not."""
    torch.manual_seed(0)
    a, b = (torch.randn(4, 116, 512).to(torch.bfloat16) for _ in range(2))
    opts = {"deterministic": True, "emulate_precision_casts": True}  # the fast engine's
    same = {}
    for pairwise in (False, True):
        fn = lambda a, b: rms_norm(a + b, 1e-5, pairwise)  # noqa: E731
        try:
            compiled = torch.compile(fn, backend="inductor", options=opts, dynamic=False)(a, b)
        except Exception as e:  # noqa: BLE001 - no C++ compiler for Inductor here
            pytest.skip(f"Inductor cannot compile on this machine ({type(e).__name__})")
        finally:
            torch._dynamo.reset()
        same[pairwise] = torch.equal(compiled, fn(a, b))
    assert same[True]
    if same[False]:  # this machine's compiled reduction happens to sum as eager torch does
        pytest.skip("the reduction gave eager's bits here too: nothing to tell apart")


def test_an_engine_built_before_the_switch_is_built_again():
    """engine_for keeps one engine a model; one built before fixed_order_norm() ran the old
    order on its copy, silently."""
    from ptrm_cli.engine import fast

    model = tiny()
    before = fast.engine_for(model, compile=False)
    assert fast.engine_for(model, compile=False) is before  # nothing changed: the same one
    model.fixed_order_norm()
    after = fast.engine_for(model, compile=False)
    assert after is not before and all(b.pairwise_norm for b in after.model.L_level.layers)


def test_inference_sums_in_the_fixed_order_by_default():
    """Every model loaded for inference (solve, eval, bench) sums RMSNorm in the fixed order;
    bench and eval take --no-exact to undo it."""
    from typer.testing import CliRunner

    from ptrm_cli import benchmark, solver
    from ptrm_cli.app import app

    loaded = solver.load_model(None, "cpu")  # the bundled model
    assert all(b.pairwise_norm for b in loaded.model.L_level.layers)
    assert benchmark.BenchOptions().exact is True
    assert benchmark.parser().parse_args([]).exact is True
    assert benchmark.parser().parse_args(["--no-exact"]).exact is False
    for flag, exact in ((None, True), ("--no-exact", False)):  # `ptrm bench`'s own options
        r = CliRunner().invoke(app, ["bench", "--model", "tiny", "--K", "2", "--D", "1",
                                     "--puzzles", "1", "--modes", "fast", "--device", "cpu",
                                     *([flag] if flag else [])])
        assert r.exit_code == 0, r.output
        assert ("exact (RMSNorm summed in a fixed order)" in r.output) is exact
