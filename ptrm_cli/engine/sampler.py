"""PTRM inference (the paper's Algorithm 1): K rollouts per puzzle, D supervision steps, Gaussian
noise of scale sigma added to the latent before every step, then one answer and one Q-halt logit
per rollout. Selecting among the rollouts is metrics.py's job.

Puzzles x K rollouts are flattened into one batch (puzzle-major) and processed in chunks of
whole puzzles. Noise for a puzzle comes from its own generator, seeded by the run's seed and the
puzzle's tokens, so a rollout's noise does not depend on chunking, on the order of puzzles, or
on which other puzzles share the batch (sharding across GPUs gives the same answers).
With K=1 and sigma=0 no noise is drawn at all: it is exactly the deterministic TRM.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

import torch

from .model import TRM, Carry

PERTURB = ("z", "y", "both", "init")


@dataclass
class SamplerConfig:
    K: int = 100
    D: int = 16
    sigma: float = 0.2
    #: which latent gets noise: z (default, the paper), y, both, or only z before the first step
    perturb: str = "z"
    #: rows (puzzles x K) per forward pass; whole puzzles per chunk. None: everything at once
    chunk_rows: int | None = None
    #: keep per-step Q and predictions ([P, K, D] and [P, K, D, L]) for analysis
    record_steps: bool = False
    #: keep per-step answer latents y ([P, K, D, S*hidden] float16): large, for PCA plots only
    record_latents: bool = False

    def __post_init__(self):
        if self.K < 1 or self.D < 1:
            raise ValueError(f"K and D must be >= 1 (got K={self.K}, D={self.D})")
        if self.sigma < 0:
            raise ValueError(f"sigma must be >= 0 (got {self.sigma})")
        if self.perturb not in PERTURB:
            raise ValueError(f"perturb must be one of {PERTURB} (got {self.perturb!r})")


@dataclass
class Rollouts:
    preds: torch.Tensor  # [P, K, L] int64 predicted tokens after the last step
    q: torch.Tensor  # [P, K] float32 Q-halt logit after the last step
    step_q: torch.Tensor | None = None  # [P, K, D]
    step_preds: torch.Tensor | None = None  # [P, K, D, L] int16
    latents: torch.Tensor | None = None  # [P, K, D, S*hidden] float16
    stats: dict = field(default_factory=dict)


def puzzle_seed(seed: int, tokens: torch.Tensor) -> int:
    """A 63-bit seed from the run's seed and one puzzle's input tokens."""
    h = hashlib.blake2b(tokens.detach().to("cpu", torch.int64).numpy().tobytes(), digest_size=8,
                        key=int(seed).to_bytes(8, "little", signed=True))
    return int.from_bytes(h.digest(), "little") >> 1


@torch.inference_mode()
def sample(model: TRM, inputs: torch.Tensor, cfg: SamplerConfig, *, seed: int = 0,
           puzzle_ids: torch.Tensor | None = None,
           on_chunk: Callable[[int, int], None] | None = None) -> Rollouts:
    """Run cfg.K noisy rollouts of cfg.D supervision steps for each puzzle in `inputs` [P, L]."""
    device = next(model.parameters()).device
    P, L = inputs.shape
    K = cfg.K
    if P == 0:  # nothing to do; keep the documented shapes (torch.cat of nothing would fail)
        S_hidden = model.config.total_len * model.config.hidden_size
        return Rollouts(torch.zeros(0, K, L, dtype=torch.long), torch.zeros(0, K),
                        torch.zeros(0, K, cfg.D) if cfg.record_steps else None,
                        torch.zeros(0, K, cfg.D, L, dtype=torch.int16) if cfg.record_steps else None,
                        torch.zeros(0, K, cfg.D, S_hidden, dtype=torch.float16)
                        if cfg.record_latents else None)
    per_chunk = max(1, (cfg.chunk_rows or P * K) // K)  # whole puzzles per chunk
    preds, qs, step_qs, step_preds, latents = [], [], [], [], []
    for start in range(0, P, per_chunk):
        stop = min(P, start + per_chunk)
        out = _sample_chunk(model, inputs[start:stop].to(device),
                            None if puzzle_ids is None else puzzle_ids[start:stop].to(device),
                            cfg, seed)
        preds.append(out.preds.cpu())
        qs.append(out.q.cpu())
        if cfg.record_steps:
            step_qs.append(out.step_q.cpu())
            step_preds.append(out.step_preds.cpu())
        if cfg.record_latents:
            latents.append(out.latents.cpu())
        if on_chunk is not None:
            on_chunk(stop, P)
    cat = (lambda xs: torch.cat(xs) if xs else None)
    return Rollouts(torch.cat(preds), torch.cat(qs), cat(step_qs), cat(step_preds), cat(latents))


def _sample_chunk(model: TRM, inputs: torch.Tensor, puzzle_ids: torch.Tensor | None,
                  cfg: SamplerConfig, seed: int) -> Rollouts:
    p, L = inputs.shape
    K, D = cfg.K, cfg.D
    rows = inputs.repeat_interleave(K, dim=0)  # puzzle-major: rows [i*K, (i+1)*K) = puzzle i
    ids = None if puzzle_ids is None else puzzle_ids.repeat_interleave(K, dim=0)
    x = model.embed(rows, ids)
    carry = model.init_carry(p * K, device=inputs.device)
    noisy = cfg.sigma > 0
    gens = [_generator(seed, inputs[i], inputs.device) for i in range(p)] if noisy else []

    step_q, step_preds, latents = [], [], []
    out = None
    for t in range(D):
        if noisy and (cfg.perturb != "init" or t == 0):
            carry = _perturb(carry, cfg, gens, K)
        out = model.step(carry, x)
        carry = out.carry
        if cfg.record_steps:
            step_q.append(out.q_halt.float().view(p, K))
            step_preds.append(out.logits.argmax(-1).to(torch.int16).view(p, K, L))
        if cfg.record_latents:
            latents.append(carry.y.reshape(p, K, -1).to(torch.float16))
    preds = out.logits.argmax(-1).view(p, K, L)
    res = Rollouts(preds, out.q_halt.float().view(p, K))
    if cfg.record_steps:
        res.step_q = torch.stack(step_q, dim=2)
        res.step_preds = torch.stack(step_preds, dim=2)
    if cfg.record_latents:
        res.latents = torch.stack(latents, dim=2)
    return res


def _generator(seed: int, tokens: torch.Tensor, device) -> torch.Generator:
    g = torch.Generator(device=device)
    g.manual_seed(puzzle_seed(seed, tokens))
    return g


def _noise(like: torch.Tensor, sigma: float, gens: list[torch.Generator], K: int) -> torch.Tensor:
    """sigma * N(0, I) shaped like `like` [p*K, S, hidden], drawn puzzle by puzzle."""
    shape = (K, *like.shape[1:])
    eps = torch.cat([torch.randn(shape, generator=g, device=like.device, dtype=torch.float32)
                     for g in gens])
    return (sigma * eps).to(like.dtype)


def _perturb(carry: Carry, cfg: SamplerConfig, gens, K: int) -> Carry:
    y, z = carry.y, carry.z
    if cfg.perturb in ("z", "init", "both"):
        z = z + _noise(z, cfg.sigma, gens, K)
    if cfg.perturb in ("y", "both"):
        y = y + _noise(y, cfg.sigma, gens, K)
    return Carry(y=y, z=z)
