"""engine/norm_kernel.py: add + RMSNorm with the fixed-order sum as one Triton kernel, which the
compiled engine runs on a GPU under `--exact`. Its sum of squares is `pairwise_mean_square`'s
bit for bit (in Triton's interpreter, where Triton is installed); elsewhere the custom op is the
eager definition; only a compiled GPU engine's copy of a fixed-order model takes it; and the
GPU measurement script says what it needs instead of failing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ptrm_cli.engine import norm_kernel
from ptrm_cli.engine.fast import Engine
from ptrm_cli.engine.model import TRM, TRMConfig, rms_norm
from triton_interpreter import interpreter_env, needs_triton

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "norm_kernel.py"


def tiny(mlp_t: bool = False) -> TRM:
    torch.manual_seed(0)
    return TRM(TRMConfig(vocab_size=20, seq_len=16, hidden_size=64, num_heads=4,
                         mlp_t=mlp_t, puzzle_emb_ndim=0, puzzle_emb_len=0)).eval()


@needs_triton
@pytest.mark.parametrize("width", [32, 512])
def test_the_kernel_sums_the_squares_in_the_models_pairwise_order(width):
    """b = 0 keeps the bf16 add exact (the interpreter truncates where a GPU rounds), so the
    mean squares must be the model's to the bit; rows of very different scale make the order
    matter, and 15 rows in blocks of 2 leave a ragged last block. 32: chunks of 2, the
    smallest; 512: the model's."""
    code = (
        "import torch\n"
        "from ptrm_cli.engine import norm_kernel as m\n"
        "from ptrm_cli.engine.model import pairwise_mean_square, rms_norm\n"
        "torch.manual_seed(0)\n"
        f"a = (torch.randn(3, 5, {width}) * torch.logspace(-3, 3, {width})).to(torch.bfloat16)\n"
        "out, ms = m.launch(a, torch.zeros_like(a), 1e-5, (2, 4), interpret=True)\n"
        "h = a.float()\n"
        "assert torch.equal(ms, pairwise_mean_square(h)[..., 0])\n"
        f"assert not torch.equal(ms, h.square().sum(-1) / {width})  # the order matters\n"
        "ref = rms_norm(a, 1e-5, pairwise=True).float()\n"
        "assert float(((out.float() - ref).abs() / ref.abs().clamp(min=1e-3)).max()) < 2e-2\n"
        "print('ok')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=interpreter_env())
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]


def test_where_the_kernel_does_not_apply_the_op_is_the_eager_definition():
    torch.manual_seed(0)
    a, b = (torch.randn(3, 7, 64).to(torch.bfloat16) for _ in range(2))
    assert not norm_kernel.applies(a, b)  # on the CPU
    assert torch.equal(norm_kernel.add_rms_norm(a, b, 1e-5), rms_norm(a + b, 1e-5, True))
    # the op's schema, fake tensor and dispatch registrations, as torch checks custom ops
    torch.library.opcheck(norm_kernel.add_rms_norm, (a, b, 1e-5))


@pytest.mark.parametrize("kernel", [False, True])
def test_the_fake_output_has_the_real_ones_strides_for_any_input_layout(kernel, monkeypatch):
    """torch.compile plans around the op with its fake output's strides. The kernel writes a
    contiguous output whatever its inputs' layout; the fake was `empty_like(a)`, transposed
    for a transposed input. kernel: the Triton path, stood in for by the eager math laid out
    as `launch` lays it out (no GPU here)."""
    torch.manual_seed(0)
    a, b = (torch.randn(3, 64, 7).to(torch.bfloat16).transpose(1, 2) for _ in range(2))
    if kernel:
        monkeypatch.setattr(norm_kernel, "applies", lambda a, b: True)
        monkeypatch.setattr(norm_kernel, "launch", lambda a, b, eps: (
            rms_norm(a.contiguous() + b.contiguous(), eps, True), None))
    assert torch.equal(norm_kernel.add_rms_norm(a, b, 1e-5), rms_norm(a + b, 1e-5, True))
    torch.library.opcheck(norm_kernel.add_rms_norm, (a, b, 1e-5))  # fake vs real metadata


@pytest.mark.parametrize("shape, dtype, applies", [
    ((4, 512), torch.bfloat16, True), ((4, 32), torch.bfloat16, True),
    ((4, 97), torch.bfloat16, False), ((4, 16), torch.bfloat16, False),
    ((4, 2048), torch.bfloat16, False), ((4, 512), torch.float32, False)])
def test_the_kernel_takes_bf16_rows_of_a_power_of_two_from_32_to_1024(shape, dtype, applies,
                                                                 monkeypatch):
    """What `applies` would say on a GPU (the tensor's device faked)."""
    monkeypatch.setattr(norm_kernel, "triton", object())
    a = torch.zeros(shape, dtype=dtype)
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    assert norm_kernel.applies(a, a) is applies


@pytest.mark.parametrize("mlp_t", [False, True])
def test_a_block_with_the_kernel_computes_what_it_did_without(mlp_t):
    """The op in the network (its CPU definition here): a step's bits unchanged, and traced
    as one node by torch.compile with the batch dynamic. TRM-MLP's first norm (across the
    sequence) is not the kernel's: one call a block there, two in TRM-Att."""
    model = tiny(mlp_t).fixed_order_norm()
    x = model.embed(torch.randint(0, 20, (3, 16)))
    with torch.no_grad():
        plain = model.step(model.init_carry(3), x)
        for block in model.L_level.layers:
            block.add_norm = norm_kernel.add_rms_norm
        again = model.step(model.init_carry(3), x)
        assert torch.equal(again.carry.z, plain.carry.z)
        assert torch.equal(again.logits, plain.logits)
        net = torch.compile(model.L_level, backend="aot_eager", dynamic=None)
        rope = model._rope()
        z, yx = plain.carry.z, plain.carry.y + x
        assert torch.equal(net(z, yx, rope), model.L_level(z, yx, rope))
        calls = []
        for block in model.L_level.layers:  # and the blocks do call it: twice each
            block.add_norm = lambda *a: calls.append(1) or norm_kernel.add_rms_norm(*a)
        model.L_level(z, yx, rope)
        assert len(calls) == (1 if mlp_t else 2) * len(model.L_level.layers)
        # switched off again: the kernel is the fixed-order sum's, so it goes with it
        model.fixed_order_norm(False)
        calls = []
        for block in model.L_level.layers:
            block.add_norm = lambda *a: calls.append(1)
        model.L_level(z, yx, rope)
        assert calls == []


def test_only_fixed_order_blocks_take_the_kernel(monkeypatch):
    model = tiny()
    assert not norm_kernel.use(model)  # summed by a reduction: not the kernel's math
    model.fixed_order_norm()
    monkeypatch.setattr(norm_kernel, "triton", None)
    assert not norm_kernel.use(model)  # no Triton
    assert all(b.add_norm is None for b in model.L_level.layers)
    monkeypatch.setattr(norm_kernel, "triton", object())
    assert norm_kernel.use(model)
    assert all(b.add_norm is norm_kernel.add_rms_norm for b in model.L_level.layers)
    mlp = tiny(mlp_t=True).fixed_order_norm()  # TRM-MLP: its norm over the hidden width
    assert norm_kernel.use(mlp)
    assert all(b.add_norm is norm_kernel.add_rms_norm for b in mlp.L_level.layers)
    # where the op would only run its eager definition, Inductor's fused code is kept
    for kw in (dict(forward_dtype="float32"), dict(hidden_size=96, num_heads=4)):
        torch.manual_seed(0)
        other = TRM(TRMConfig(vocab_size=20, seq_len=16, **{"hidden_size": 64, "num_heads": 4,
                              **kw}, puzzle_emb_ndim=0, puzzle_emb_len=0)).fixed_order_norm()
        assert not norm_kernel.use(other), kw
        assert all(b.add_norm is None for b in other.L_level.layers)


@pytest.mark.parametrize("options", [dict(compile=True, backend="aot_eager"),
                                     dict(compile=True), dict(compile=False)])
def test_an_engine_gives_the_kernel_only_to_its_compiled_gpu_copy(options, monkeypatch):
    """On the CPU no engine takes it: not Inductor's (aot_eager), not on a GPU (Inductor, the
    default backend, which builds nothing until called), not compiled. Each gate alone."""
    monkeypatch.setattr(norm_kernel, "triton", object())
    model = tiny().fixed_order_norm()
    eng = Engine(model, **options)
    assert not eng.norm_kernel
    assert all(b.add_norm is None for b in eng.model.L_level.layers)
    assert all(b.add_norm is None for b in model.L_level.layers)  # never the caller's model


@pytest.mark.skipif(not torch.cuda.is_available() or norm_kernel.triton is None,
                    reason="needs a CUDA GPU and Triton")
def test_a_compiled_gpu_engine_takes_the_kernel_on_its_copy_alone():
    model = tiny().fixed_order_norm().cuda()
    eng = Engine(model)  # compiled by default on CUDA
    assert eng.norm_kernel
    assert all(b.add_norm is norm_kernel.add_rms_norm for b in eng.model.L_level.layers)
    assert all(b.add_norm is None for b in model.L_level.layers)  # the eager loop's yardstick
    assert not Engine(model.fixed_order_norm(False)).norm_kernel  # a reduction's order


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the script would run")
def test_without_a_gpu_it_says_what_it_needs():
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 2 and "needs a CUDA GPU" in r.stderr and "Traceback" not in r.stderr
