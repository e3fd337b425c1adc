"""scripts/norm_kernel.py (add + RMSNorm with the fixed-order sum as one Triton kernel, a GPU
measurement): in Triton's interpreter its sum of squares is `pairwise_mean_square`'s bit for
bit, and without a GPU it says so instead of failing."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "norm_kernel.py"


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton not installed")
def test_the_kernel_sums_the_squares_in_the_models_pairwise_order():
    """b = 0 keeps the bf16 add exact (the interpreter truncates where a GPU rounds), so the
    mean squares must be the model's to the bit; rows of very different scale make the order
    matter, and 15 rows in blocks of 2 leave a ragged last block."""
    code = (
        "import torch, importlib.util as u\n"
        f"s = u.spec_from_file_location('s', {str(SCRIPT)!r}); m = u.module_from_spec(s)\n"
        "s.loader.exec_module(m)\n"
        "from ptrm_cli.engine.model import pairwise_mean_square, rms_norm\n"
        "torch.manual_seed(0)\n"
        "a = (torch.randn(3, 5, 64) * torch.logspace(-3, 3, 64)).to(torch.bfloat16)\n"
        "out, ms = m.add_rms_norm(a, torch.zeros_like(a), (2, 4), interpret=True)\n"
        "h = a.float()\n"
        "assert torch.equal(ms, pairwise_mean_square(h)[..., 0])\n"
        "assert not torch.equal(ms, h.square().sum(-1) / 64)  # the order matters here\n"
        "ref = rms_norm(a, 1e-5, pairwise=True).float()\n"
        "assert float(((out.float() - ref).abs() / ref.abs().clamp(min=1e-3)).max()) < 2e-2\n"
        "print('ok')\n")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the script would run")
def test_without_a_gpu_it_says_what_it_needs():
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 2 and "needs a CUDA GPU" in r.stderr and "Traceback" not in r.stderr
