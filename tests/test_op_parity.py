"""scripts/op_parity.py (which compiled op parts fast from eager, a GPU measurement): its
stages are the block's elementwise work on the model's shapes, and without a GPU it says so
instead of failing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ptrm_cli.engine.model import TRMConfig, rms_norm

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "op_parity.py"
spec = importlib.util.spec_from_file_location("op_parity", SCRIPT)
op = importlib.util.module_from_spec(spec)
spec.loader.exec_module(op)


def test_the_stages_are_the_blocks_elementwise_work():
    cfg = TRMConfig(vocab_size=20, seq_len=12, hidden_size=64, num_heads=4, puzzle_emb_len=4,
                    puzzle_emb_ndim=64)
    stages = op.stages(cfg, 3, torch.device("cpu"))
    shapes = {name: tuple(fn(*args).shape) for name, (fn, args) in stages.items()}
    S, D = cfg.total_len, cfg.hidden_size
    assert shapes["add + RMSNorm"] == shapes["add + RMSNorm, pairwise sum"] == (3, S, D)
    assert shapes["RoPE"] == (3, S, cfg.num_heads, D // cfg.num_heads)
    assert shapes["SiLU·up"] == (3, S, cfg.inter_size)
    fn, (a, b) = stages["add + RMSNorm, pairwise sum"]
    assert torch.equal(fn(a, b), rms_norm(a + b, cfg.rms_norm_eps, pairwise=True))


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is here: the script would run")
def test_without_a_gpu_it_says_what_it_needs():
    r = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True)
    assert r.returncode == 2 and "needs a CUDA GPU" in r.stderr and "Traceback" not in r.stderr
