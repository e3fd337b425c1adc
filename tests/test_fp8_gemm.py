"""scripts/fp8_gemm.py (FP8 against bf16 GEMMs, a GPU measurement): its e4m3 quantisation is
checked on the CPU, and without a GPU it says so instead of failing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "fp8_gemm.py"

spec = importlib.util.spec_from_file_location("fp8_gemm", SCRIPT)
fp8 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fp8)

pytestmark = pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn"), reason="no float8 in torch")


def test_rowwise_scales_put_each_rows_largest_value_at_the_e4m3_maximum():
    x = torch.randn(64, 128) * torch.logspace(-3, 3, 64)[:, None]  # rows of very different size
    q, scale = fp8.to_e4m3_rowwise(x)
    assert q.dtype == torch.float8_e4m3fn and scale.shape == (64, 1)
    assert torch.equal(q.float().abs().amax(dim=1), torch.full((64,), fp8.E4M3_MAX))
    back = q.float() * scale
    # e4m3 keeps 3 mantissa bits: every value within 1/16 of its row's scale-relative size
    assert float(((back - x).abs() / x.abs().amax(1, keepdim=True)).max()) < 2 ** -4


def test_one_scale_for_a_tensor_loses_the_small_rows():
    x = torch.randn(64, 128) * torch.logspace(-3, 3, 64)[:, None]
    rel = []
    for quantise in (fp8.to_e4m3_rowwise, fp8.to_e4m3_tensorwise):
        q, scale = quantise(x)
        rel.append(float(((q.float() * scale - x).norm(dim=1) / x.norm(dim=1))[:8].max()))
    assert rel[0] < 0.1 < rel[1]  # why the script times row scales: a recursion mixes sizes


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the script would run")
def test_without_a_gpu_it_says_what_it_needs():
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 2 and "needs a CUDA GPU" in r.stderr and "Traceback" not in r.stderr
