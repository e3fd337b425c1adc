"""Tiny random TRMs and PPBench puzzles for the inference tests (CPU, a few milliseconds a step).

    tiny_config(vocab_size)            a TRMConfig small enough to run hundreds of rollouts
    tiny_model(vocab_size, seed)       a TRM whose Q head is random too, so Q values differ
    save_tiny_checkpoint(path, vocab)  the same, written with save_checkpoint
    golden_examples(pids, n)           (codec, record) pairs from PPBench's golden set
    solve_cli(*args)                   `ptrm solve ARGS --device cpu --threads 1`, no traceback
"""

from __future__ import annotations

import warnings

import torch

from ptrm_cli import codec as registry
from ptrm_cli.engine.model import TRM, TRMConfig

import pzpr_oracle

GOLDEN_SIZES = {"sudoku": (9, 9), "lightup": (10, 10), "nurikabe": (10, 10),
                "heyawake": (10, 10), "tapa": (10, 10), "shakashaka": (10, 10)}


def tiny_config(vocab_size: int, seq_len: int = 100, **kw) -> TRMConfig:
    base = dict(vocab_size=vocab_size, seq_len=seq_len, hidden_size=32, num_heads=2,
                expansion=2.0, L_layers=1, H_cycles=2, L_cycles=2, puzzle_emb_ndim=0,
                puzzle_emb_len=0, halt_max_steps=3)
    return TRMConfig(**{**base, **kw})


def tiny_model(vocab_size: int, seed: int = 0, **kw) -> TRM:
    torch.manual_seed(seed)
    model = TRM(tiny_config(vocab_size, **kw))
    with torch.no_grad():  # the reference zero-inits the Q head: every Q would tie
        model.q_head.weight.normal_(0, 1.0)
        model.q_head.bias.zero_()
    return model.eval()


def save_tiny_checkpoint(path, vocab, seed: int = 0, **kw):
    from ptrm_cli.engine.checkpoint import save_checkpoint

    return save_checkpoint(path, tiny_model(len(vocab), seed, **kw), vocab, {"note": "test"})


def installed_codecs() -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {name: reg.codec for name, reg in registry.registered().items()}


def golden_examples(pids, n: int = 1) -> list[tuple[str, dict]]:
    """Up to n golden records per type at the paper's size (pid, record)."""
    out = []
    for pid in pids:
        rows, cols = GOLDEN_SIZES[pid]
        recs = [r for r in pzpr_oracle.golden_by_type(pid)
                if (r.get("height"), r.get("width")) == (rows, cols)]
        out += [(pid, r) for r in recs[:n]]
    return out


def solve_cli(*args):
    """`ptrm solve` in-process on the CPU (one thread): the result, after checking it ended
    without a traceback (an error a user can meet ends in a message and an exit code)."""
    from typer.testing import CliRunner

    from ptrm_cli.app import app

    r = CliRunner().invoke(app, ["solve", *map(str, args), "--device", "cpu", "--threads", "1"])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output, r.output
    return r
