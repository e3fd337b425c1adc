"""scripts/swiglu_gemm.py (a fused SwiGLU GEMM against the engine's pair, a GPU measurement):
its epilogue rounds where the engine does, its kernel indexes right (Triton's interpreter, when
Triton is installed), and without a GPU it says so instead of failing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from triton_interpreter import interpreter_env, needs_triton

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "swiglu_gemm.py"


def load_script():
    spec = importlib.util.spec_from_file_location("swiglu_gemm", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sg = load_script()


def test_the_epilogue_rounds_where_the_engine_does():
    """Given the GEMM's fp32 sums, the fused epilogue gives the engine's SiLU·up bit for bit:
    only the summation order can part the two."""
    torch.manual_seed(0)
    acc = torch.randn(512, 2 * 96) * 3
    engine = sg.silu_mul_reference(acc.to(torch.bfloat16))
    fused = sg.epilogue(*acc.chunk(2, dim=-1))
    assert fused.dtype == torch.bfloat16 and torch.equal(fused, engine)
    # and rounding only at the end would not be the engine's numbers
    late = (torch.nn.functional.silu(acc[:, :96]) * acc[:, 96:]).to(torch.bfloat16)
    assert not torch.equal(late, engine)


@needs_triton
@pytest.mark.parametrize("kernel", ["fused_swiglu", "fused_swiglu_tma"])
def test_the_kernel_computes_swiglu_in_tritons_interpreter(kernel):
    """Indexing, masks of a ragged last row block and the gate/up halves, on the CPU. fp32
    inputs: the interpreter's bf16 matmul and rounding are not the GPU's (it truncates)."""
    code = (
        "import torch, importlib.util as u\n"
        f"s = u.spec_from_file_location('s', {str(SCRIPT)!r}); m = u.module_from_spec(s)\n"
        "s.loader.exec_module(m)\n"
        "torch.manual_seed(1); x = torch.randn(200, 128); w = torch.randn(128, 128) / 12\n"
        f"h = m.{kernel}(x, w.t().contiguous(), (64, 32, 32, 4, 2)).float()\n"
        "ref = m.silu_mul_reference(x @ w.t())\n"
        "err = float((h - ref).norm() / ref.norm())\n"
        "assert h.shape == (200, 64) and err < 2e-2, err\n"
        "print('ok', err)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=interpreter_env())
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the script would run")
def test_without_a_gpu_it_says_what_it_needs():
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 2 and "needs a CUDA GPU" in r.stderr and "Traceback" not in r.stderr
