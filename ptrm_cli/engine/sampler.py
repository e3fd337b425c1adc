"""PTRM inference (the paper's Algorithm 1): K rollouts per puzzle, D supervision steps, Gaussian
noise of scale sigma added to the latent before every step, then one answer and one Q-halt logit
per rollout. Selecting among the rollouts is metrics.py's job.

Two implementations share this module's noise and give the same rollouts:

  eager  (`fast=False`)  this file: puzzles x K flattened into one batch (puzzle-major) and run
                         in chunks of whole puzzles through `TRM.step`. The reference, and the
                         path for CPU, MPS and analysis runs that record latents.
  fast   (`fast=True`, the default on CUDA)  engine/fast.py: a row pool on the device with
                         weights pre-cast once, the network compiled, per-row step counters,
                         argmax and Q on the device and a single host sync at the end; it also
                         does adaptive compute (stop a puzzle once a rollout verifies or its Q
                         is confident).

Noise is counter-based: element e of rollout k of a puzzle at step t is a Gaussian computed
from a 32-bit integer hash of (puzzle key, k, t, target, e) and Box-Muller, where the puzzle key
comes from the run's seed and the puzzle's tokens. Nothing is drawn from a generator, so a
rollout's noise does not depend on chunking, on the order of puzzles, on which puzzles share the
batch or the GPU (sharding gives the same answers), on K (rollout k of a run with K=4 is rollout
k of a run with K=100: waves of rollouts are prefixes of one run), or on how many steps other
rows have taken. It is a handful of elementwise integer ops, so a compiler fuses it into one
kernel and CUDA graphs can hold it. With K=1 and sigma=0 no noise is added at all: it is exactly
the deterministic TRM.
"""

from __future__ import annotations

import hashlib
import math
import numbers
from dataclasses import dataclass, field
from typing import Callable

import torch

from ..errors import UsageError
from .model import TRM, Carry

PERTURB = ("z", "y", "both", "init")
#: which latent a noise stream feeds (part of the hash, so y and z never share noise)
TARGET_Z, TARGET_Y = 0, 1


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
        check_run(self.K, self.D, self.sigma, self.perturb)


def check_run(K, D, sigma, perturb) -> None:
    """What every entry point that runs rollouts takes (SamplerConfig, fast.run,
    solver.solve_puzzle): K=0 failed after the model ran, with "max() arg is an empty
    sequence"."""
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1
               for v in (K, D)):
        raise UsageError(f"K and D must be whole numbers >= 1 (got K={K!r}, D={D!r})")
    check_noise(sigma, perturb)


def check_noise(sigma, perturb) -> None:
    """A σ and noise target the sampler takes: a typo in `perturb`, or a negative σ, ran with
    no noise at all."""
    if not (isinstance(sigma, numbers.Real) and math.isfinite(sigma) and sigma >= 0):
        raise UsageError(f"sigma must be a finite number >= 0 (got {sigma!r})")
    if perturb not in PERTURB:
        raise UsageError(f"perturb must be one of {', '.join(PERTURB)} (got {perturb!r})")


def check_inputs(config, inputs, puzzle_ids=None) -> None:
    """Token ids a model of `config` can run: a [P, seq_len] integer tensor, every id in its
    vocabulary, and puzzle ids [P] in its table. A wrong length, vocabulary or shape failed
    deep inside torch ("The size of tensor a (116) must match the size of tensor b (97)",
    "index out of range in self")."""
    L, V = config.seq_len, config.vocab_size
    if not isinstance(inputs, torch.Tensor):
        raise UsageError(f"inputs must be a torch tensor of token ids [P, {L}], got "
                         f"{type(inputs).__name__} (torch.as_tensor(x) converts one)")
    if inputs.dim() != 2 or inputs.shape[1] != L:
        raise UsageError(f"inputs must be token ids [P, {L}] (this model's seq_len {L}), got "
                         f"shape {tuple(inputs.shape)}")
    if inputs.dtype.is_floating_point or inputs.dtype.is_complex or inputs.dtype == torch.bool:
        raise UsageError(f"inputs must be integer token ids, got {inputs.dtype}")
    if inputs.numel():  # widened: a dataset's uint16 tokens have no min() of their own
        lo, hi = (int(v) for v in torch.aminmax(inputs.long()))
        if lo < 0 or hi >= V:
            raise UsageError(f"token ids must be in [0, {V}) (this model's vocabulary), got "
                             f"{lo}..{hi}",
                             hint="encode the puzzle in the model's family (solver.family_for)")
    if puzzle_ids is not None:
        n = config.num_puzzle_identifiers
        if not isinstance(puzzle_ids, torch.Tensor) or puzzle_ids.shape != inputs.shape[:1]:
            shape = tuple(puzzle_ids.shape) if isinstance(puzzle_ids, torch.Tensor) else \
                type(puzzle_ids).__name__
            raise UsageError(f"puzzle_ids must be a tensor [P] = [{inputs.shape[0]}], one "
                             f"per puzzle, got {shape}")
        if puzzle_ids.numel() and config.puzzle_emb_ndim > 0:  # no table: ids go unused
            lo, hi = (int(v) for v in torch.aminmax(puzzle_ids.long()))
            if lo < 0 or hi >= n:
                raise UsageError(f"puzzle_ids must be in [0, {n}) (this model's puzzle "
                                 f"table), got {lo}..{hi}")


def check_first_rollout(first_rollout) -> None:
    """The number of a run's first rollout: a whole number >= 0. A negative one ran, its
    rollouts numbered below 0 (no prefix of any run), and True ran as rollout 1."""
    if not (isinstance(first_rollout, numbers.Integral) and not isinstance(first_rollout, bool)
            and first_rollout >= 0):
        raise UsageError(f"first_rollout must be a whole number >= 0 (got {first_rollout!r})")


@dataclass
class Rollouts:
    preds: torch.Tensor  # [P, K, L] int64 predicted tokens after the last step
    q: torch.Tensor  # [P, K] float32 Q-halt logit after the last step
    step_q: torch.Tensor | None = None  # [P, K, D]
    step_preds: torch.Tensor | None = None  # [P, K, D, L] int16
    latents: torch.Tensor | None = None  # [P, K, D, S*hidden] float16
    stats: dict = field(default_factory=dict)


# -- counter-based noise -------------------------------------------------------------------------
#
# All integers are 32-bit values held in int64 tensors (torch has no unsigned 32-bit arithmetic
# on every device). Both multipliers are below 2**31, so x * c < 2**63 never overflows and the
# low 32 bits are exact on every backend: CPU, CUDA, MPS, eager or compiled.

M32 = 0xFFFFFFFF
_MUL1, _MUL2 = 0x21F0AAAD, 0x735A2D97  # C. Wellons' "lowbias32" (improved) constants
_TWO_PI = 2 * math.pi


def mix32(x: torch.Tensor) -> torch.Tensor:
    """A bijective 32-bit integer hash (xorshift-multiply, two rounds)."""
    x = x ^ (x >> 16)
    x = (x * _MUL1) & M32
    x = x ^ (x >> 15)
    x = (x * _MUL2) & M32
    return x ^ (x >> 15)


def puzzle_seed(seed: int, tokens: torch.Tensor) -> int:
    """A 63-bit seed from the run's seed and one puzzle's input tokens."""
    h = hashlib.blake2b(tokens.detach().to("cpu", torch.int64).numpy().tobytes(), digest_size=8,
                        key=int(seed).to_bytes(8, "little", signed=True))
    return int.from_bytes(h.digest(), "little") >> 1


def puzzle_keys(seed: int, inputs: torch.Tensor) -> torch.Tensor:
    """[P, 2] int64: the (low, high) 32-bit words of each puzzle's seed."""
    seeds = [puzzle_seed(seed, row) for row in inputs]
    return torch.tensor([[s & M32, s >> 32] for s in seeds], dtype=torch.long).view(-1, 2)


def stream_keys(key_lo: torch.Tensor, key_hi: torch.Tensor, k: torch.Tensor, t: torch.Tensor,
                target: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two 32-bit keys per row (all arguments [B] int64) naming the noise stream of rollout k of
    a puzzle at step t (0-based) for one target latent."""
    h = mix32(key_lo ^ 0x6A09E667)
    h = mix32(h ^ key_hi)
    h = mix32(h ^ (k & M32))
    h = mix32(h ^ ((t * 2 + target) & M32))
    return h, mix32(h ^ 0x5BE0CD19)


def gaussian(a: torch.Tensor, b: torch.Tensor, n: int) -> torch.Tensor:
    """[B, n] float32 standard normals: element e of the stream keyed (a, b) ([B] int64).
    Two hashes of (e, a, b) give two 24-bit uniforms; Box-Muller turns them into one normal."""
    e = torch.arange(n, device=a.device, dtype=torch.long)
    a, b = a[:, None], b[:, None]
    h1 = mix32(mix32((e + a) & M32) ^ b)
    h2 = mix32(mix32((e + b) & M32) ^ a)
    u1 = ((h1 >> 8) + 1).to(torch.float32) * (2.0 ** -24)  # (0, 1]: log is finite
    u2 = (h2 >> 8).to(torch.float32) * (2.0 ** -24)  # [0, 1)
    return torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(_TWO_PI * u2)


def add_noise(v: torch.Tensor, key_lo: torch.Tensor, key_hi: torch.Tensor, k: torch.Tensor,
              t: torch.Tensor, target: int, sigma: float | torch.Tensor) -> torch.Tensor:
    """v + sigma * N(0, I) for a batch of rows v [B, ...] (any float dtype), the noise of each row
    named by its (puzzle key, rollout k, step t). Pure elementwise: compiles to one kernel."""
    a, b = stream_keys(key_lo, key_hi, k, t, target)
    eps = gaussian(a, b, v[0].numel()).view(v.shape)
    return v + (sigma * eps).to(v.dtype)


#: elements per noise block in the eager path: bounds the int64 temporaries (~8 x 256 MB)
_NOISE_BLOCK = 1 << 25


def add_noise_blocked(v: torch.Tensor, key_lo, key_hi, k, t, target: int,
                      sigma: float) -> torch.Tensor:
    """add_noise in row blocks, so eager memory stays bounded for any batch (same values)."""
    per_row = max(1, v[0].numel())
    rows = max(1, _NOISE_BLOCK // per_row)
    if v.shape[0] <= rows:
        return add_noise(v, key_lo, key_hi, k, t, target, sigma)
    out = torch.empty_like(v)
    for i in range(0, v.shape[0], rows):
        j = i + rows
        out[i:j] = add_noise(v[i:j], key_lo[i:j], key_hi[i:j], k[i:j], t[i:j], target, sigma)
    return out


# -- sampling ------------------------------------------------------------------------------------

@torch.inference_mode()
def sample(model: TRM, inputs: torch.Tensor, cfg: SamplerConfig, *, seed: int = 0,
           puzzle_ids: torch.Tensor | None = None,
           on_chunk: Callable[[float, int], None] | None = None,
           fast: bool | None = None, first_rollout: int = 0, **fast_options) -> Rollouts:
    """Run cfg.K noisy rollouts of cfg.D supervision steps for each puzzle in `inputs` [P, L].

    Rollouts are numbered first_rollout .. first_rollout+K-1 (their noise depends on the
    number, so rollouts 4..7 of one call are rollouts 4..7 of a call with K=8). `fast` None:
    the fast engine on CUDA (unless latents are recorded), the eager loop elsewhere;
    `fast_options` go to fast.Engine (compile, mode, ...). `on_chunk(done, P)`: progress in
    puzzles done, after each chunk (the eager loop also after each step, in fractions)."""
    device = next(model.parameters()).device
    if fast is None:
        fast = device.type == "cuda" and not cfg.record_latents
    if fast and not cfg.record_latents:
        from . import fast as fast_mod

        res = fast_mod.run(fast_mod.engine_for(model, **fast_options), inputs, K=cfg.K,
                           D=cfg.D, sigma=cfg.sigma, perturb=cfg.perturb, seed=seed,
                           puzzle_ids=puzzle_ids, capacity=cfg.chunk_rows,
                           record_steps=cfg.record_steps, first_rollout=first_rollout,
                           on_progress=None if on_chunk is None else
                           (lambda done, total: on_chunk(done // cfg.K, total // cfg.K)))
        return res.rollouts()
    check_inputs(model.config, inputs, puzzle_ids)  # (fast.run checks its own)
    check_first_rollout(first_rollout)
    P, L = inputs.shape
    K = cfg.K
    if P == 0:  # nothing to do; keep the documented shapes (torch.cat of nothing would fail)
        S_hidden = model.config.total_len * model.config.hidden_size
        return Rollouts(torch.zeros(0, K, L, dtype=torch.long), torch.zeros(0, K),
                        torch.zeros(0, K, cfg.D) if cfg.record_steps else None,
                        torch.zeros(0, K, cfg.D, L, dtype=torch.int16) if cfg.record_steps else None,
                        torch.zeros(0, K, cfg.D, S_hidden, dtype=torch.float16)
                        if cfg.record_latents else None)
    keys = puzzle_keys(seed, inputs)
    per_chunk = max(1, (cfg.chunk_rows or P * K) // K)  # whole puzzles per chunk
    preds, qs, step_qs, step_preds, latents = [], [], [], [], []
    for start in range(0, P, per_chunk):
        stop = min(P, start + per_chunk)
        # progress within a chunk too, in fractions of puzzles: on a CPU one chunk (the
        # K*D-step baseline of a whole split) ran for hours without a word
        on_step = None if on_chunk is None else \
            (lambda t, start=start, stop=stop: on_chunk(start + (stop - start) * t / cfg.D, P))
        out = _sample_chunk(model, inputs[start:stop].to(device),
                            None if puzzle_ids is None else puzzle_ids[start:stop].to(device),
                            keys[start:stop].to(device), cfg, first_rollout, on_step)
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
                  keys: torch.Tensor, cfg: SamplerConfig, first_rollout: int,
                  on_step: Callable[[int], None] | None = None) -> Rollouts:
    """cfg.K rollouts of each of these puzzles, all in one batch; `on_step(t)` after each
    supervision step t = 1 .. D-1 (the caller reports the chunk's end itself)."""
    p, L = inputs.shape
    K, D = cfg.K, cfg.D
    rows = inputs.repeat_interleave(K, dim=0)  # puzzle-major: rows [i*K, (i+1)*K) = puzzle i
    ids = None if puzzle_ids is None else puzzle_ids.repeat_interleave(K, dim=0)
    x = model.embed(rows, ids)
    carry = model.init_carry(p * K, device=inputs.device)
    noisy = cfg.sigma > 0
    key_lo, key_hi = (c.repeat_interleave(K) for c in keys.unbind(-1))
    k = torch.arange(first_rollout, first_rollout + K, device=inputs.device).repeat(p)

    step_q, step_preds, latents = [], [], []
    out = None
    for t in range(D):
        if noisy and (cfg.perturb != "init" or t == 0):
            carry = perturb(carry, cfg.perturb, cfg.sigma, key_lo, key_hi, k,
                            torch.full_like(k, t))
        out = model.step(carry, x)
        carry = out.carry
        if on_step is not None and t + 1 < D:
            on_step(t + 1)
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


def halted(r: Rollouts, threshold: float) -> tuple[Rollouts, torch.Tensor]:
    """Each rollout as if it had stopped at its first step with sigmoid(Q) > threshold (the
    halting rule TRM's ACT trains the Q head for; 0.5 in training), or at its last step if it
    never gets there: its answer and Q are that step's. Applied to a run that recorded its steps,
    so the same run gives both. Also returns the [P, K] steps each rollout used (1-based).

    Why: a model can reach a valid answer early and drift off it by step D (the Q head usually
    falls as it does); the paper's protocol takes step D regardless."""
    if r.step_q is None or r.step_preds is None:
        raise UsageError("halting needs the per-step record: sample with record_steps=True")
    P, K, D = r.step_q.shape
    over = torch.sigmoid(r.step_q.float()) > threshold  # [P, K, D]
    t = torch.where(over.any(-1), over.float().argmax(-1),
                    torch.full((P, K), D - 1, device=over.device))  # first step over, else last
    preds = r.step_preds.gather(2, t[..., None, None].expand(P, K, 1, r.step_preds.shape[-1]))
    q = r.step_q.gather(2, t[..., None]).float()
    return Rollouts(preds[:, :, 0].long(), q[..., 0], r.step_q, r.step_preds, r.latents,
                    dict(r.stats)), t + 1


def perturb(carry: Carry, where: str, sigma: float, key_lo, key_hi, k, t) -> Carry:
    """The noise of one supervision step (before it), for rows named by (key, k, t)."""
    y, z = carry.y, carry.z
    if where in ("z", "init", "both"):
        z = add_noise_blocked(z, key_lo, key_hi, k, t, TARGET_Z, sigma)
    if where in ("y", "both"):
        y = add_noise_blocked(y, key_lo, key_hi, k, t, TARGET_Y, sigma)
    return Carry(y=y, z=z)
