"""The fast PTRM engine: a pool of rollout rows on the device, fixed or adaptive compute.

A row is one rollout (puzzle p, rollout k) with its own carry (y, z), input embedding x and step
counter t. Every supervision step advances all rows in the pool at once; nothing goes back to
the host between steps. The host only acts at *checks*, and a fixed run has none before the end:

    fixed      every rollout runs D steps; final argmax and Q are written into device buffers as
               rows finish; the one host sync is the copy of the results at the end.
    adaptive   every `check_every` steps (and when rows reach D) the host reads argmax and Q of
               the rows (one sync), and a puzzle stops as soon as one of its rollouts satisfies
               the rules (`verify` callback) or is confident (sigmoid(Q) > q_threshold). Its
               rows leave the pool (the batch is compacted), and the rows that finished make
               room for the next *wave* of rollouts of puzzles still unsolved (at most `wave`
               rollouts of a puzzle in flight: the anytime schedule). The pool never holds more
               than `capacity` rows.

A rollout's noise is keyed by (puzzle, k, t) (sampler.py), and every row is computed
independently of the others, so a rollout's trajectory is the same whatever else is in the
pool: an adaptive run follows exactly the trajectories of the fixed run up to the step where it
stops, a puzzle it never stops gets exactly the fixed run's rollouts, and the accuracy/compute
trade-off of any stopping rule can be computed from one recorded fixed run (engine/adaptive.py).

`Engine` holds what makes it fast on a GPU: a copy of the model with its weights cast once to
the forward dtype (bf16), and `torch.compile`d pieces (one network application, the noise, the
heads) with the batch dimension dynamic, so compaction and refills never recompile. Without a
compiler (CPU by default, MPS, or when compilation fails) the same code runs eagerly and gives
bit-identical results to the eager sampler.
"""

from __future__ import annotations

import copy
import math
import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..errors import UsageError
from . import norm_kernel
from .model import TRM, SwiGLU, flops_per_step
from .sampler import (TARGET_Y, TARGET_Z, Rollouts, add_noise, add_noise_blocked,
                      check_first_rollout, check_inputs, check_run, puzzle_keys)

#: torch.compile modes that keep the batch dimension dynamic (CUDA-graph modes need fixed shapes)
COMPILE_MODES = ("default", "max-autotune-no-cudagraphs")
SCOPES = ("app", "step")

#: verify(puzzle index, predictions [n, L] int64 on the CPU) -> [n] bool rules verdicts
Verify = Callable[[int, torch.Tensor], "torch.Tensor | np.ndarray | list[bool]"]


# -- the engine ----------------------------------------------------------------------------------

def precast(model: TRM) -> TRM:
    """A copy of `model` whose parameters are already in the forward dtype (CastedLinear's cast
    at each call becomes a no-op; the values are the same, so results are too). Buffers (the
    puzzle table, H_init/L_init, RoPE tables) are shared, not copied."""
    memo = {id(b): b for b in model.buffers()}
    clone = copy.deepcopy(model, memo)
    dtype = model.config.dtype
    for p in clone.parameters():
        p.requires_grad_(False)
        if p.is_floating_point() and p.dtype != dtype:
            p.data = p.data.to(dtype)
    return clone.eval()


class SplitSwiGLU(nn.Module):
    """SwiGLU with its gate and up projections as two matmuls (the same weights, split). The
    product silu(gate) * up then reads two matmul outputs at the same index, which lets a
    compiler with matmul templates (max-autotune) fuse it into the second matmul's epilogue
    instead of writing and re-reading the 2x-wide gate_up output."""

    def __init__(self, m: SwiGLU):
        super().__init__()
        gate, up = m.gate_up_proj.weight.detach().chunk(2, dim=0)
        self.gate = nn.Parameter(gate.contiguous(), requires_grad=False)
        self.up = nn.Parameter(up.contiguous(), requires_grad=False)
        self.down_proj = m.down_proj

    def forward(self, x):
        return self.down_proj(F.silu(F.linear(x, self.gate)) * F.linear(x, self.up))


def split_swiglu(model: TRM) -> TRM:
    """Replace every SwiGLU of `model` (in place) by a SplitSwiGLU."""
    for block in model.L_level.layers:
        for name in ("mlp", "mlp_t"):
            if isinstance(getattr(block, name, None), SwiGLU):
                setattr(block, name, SplitSwiGLU(getattr(block, name)))
    return model


class _Guarded:
    """A compiled function that falls back to its eager twin (once, for good) if compiling or
    running the compiled code fails: a missing compiler must never stop a solve."""

    def __init__(self, engine: "Engine", eager, compiled, dynamic_args: tuple[int, ...]):
        self.engine, self.eager, self.compiled, self.dynamic_args = engine, eager, compiled, \
            dynamic_args

    def __call__(self, *args):
        if self.compiled is None or self.engine.compile_error is not None:
            return self.eager(*args)
        one = args[self.dynamic_args[0]].shape[0] == 1
        if one:  # a batch of 1 would be compiled again (sizes 0/1 are specialised): run the
            # row twice instead (rows are independent, so the first is the same result)
            args = tuple(torch.cat((a, a)) if i in self.dynamic_args else a
                         for i, a in enumerate(args))
        for i in self.dynamic_args:
            torch._dynamo.maybe_mark_dynamic(args[i], 0)
        try:
            out = self.compiled(*args)
        except Exception as e:  # noqa: BLE001 - any compiler failure: fall back, say why once
            self.engine._fail(e)
            out = self.eager(*args)
        if one:
            out = tuple(o[:1] for o in out) if isinstance(out, tuple) else out[:1]
        return out


class Engine:
    """The model, pre-cast, and its step/noise/heads functions (compiled where possible).

    compile: None = on CUDA only. mode: a torch.compile mode without CUDA graphs.
    scope: "app" compiles one network application (small graph, fast to compile, called
    T*(n+1) times a step); "step" compiles the whole supervision step (more fusion, longer
    compile). deterministic: ask Inductor to make no kernel choice by timing where it would
    change numerics, so every GPU picks the same kernels (for bit-identical sharding); it
    also rounds fused low-precision intermediates the way eager does. backend: torch.compile
    backend ("inductor"; tests use "aot_eager" to check the traced code without a compiler).
    split: SwiGLU as two matmuls (SplitSwiGLU), for epilogue fusion under max-autotune; the
    same math, but matmul kernels of other shapes may round differently.
    """

    def __init__(self, model: TRM, *, compile: bool | None = None, mode: str = "default",
                 scope: str = "app", deterministic: bool = True, backend: str = "inductor",
                 split: bool = False):
        if mode not in COMPILE_MODES:
            raise UsageError(f"compile mode must be one of {COMPILE_MODES} (got {mode!r})")
        if scope not in SCOPES:
            raise UsageError(f"compile scope must be one of {SCOPES} (got {scope!r})")
        self.device = next(model.parameters()).device
        self.model = precast(model)
        if split:
            split_swiglu(self.model)
        self.split = split
        self.cfg = model.config
        self.fps = flops_per_step(self.cfg)
        self.rope = self.model._rope()
        self.compile = self.device.type == "cuda" if compile is None else bool(compile)
        self.mode, self.scope, self.backend = mode, scope, backend
        # under fixed_order_norm, compiled on a GPU: the fixed-order add + RMSNorm as one kernel
        self.norm_kernel = (self.compile and backend == "inductor" and self.device.type == "cuda"
                            and norm_kernel.use(self.model))
        self.deterministic = deterministic
        self.compile_error: str | None = None
        app, step_fn = self.model.L_level, self._step_eager
        noise, heads = add_noise_blocked, self._heads_eager
        if self.compile:
            opts = self._compile_options()
            if scope == "app":
                app = _Guarded(self, self.model.L_level, torch.compile(self.model.L_level, **opts),
                               (0, 1))
            else:
                step_fn = _Guarded(self, self._step_eager, torch.compile(self._step_eager, **opts),
                                   (0, 1, 2))
            noise = _Guarded(self, add_noise_blocked, torch.compile(add_noise, **opts),
                             (0, 1, 2, 3, 4))
            heads = _Guarded(self, self._heads_eager, torch.compile(self._heads_eager, **opts),
                             (0,))
        self._app, self._step_fn, self._noise, self._heads_fn = app, step_fn, noise, heads

    def _compile_options(self) -> dict:
        """torch.compile arguments. Inductor settings go in per compiled function (`options`),
        not in the global config, so engines of different modes can live in one process."""
        # many small graphs (app, noise, heads; a few dtypes and sigmas): allow recompiles
        for name in ("cache_size_limit", "recompile_limit"):
            if hasattr(torch._dynamo.config, name):
                setattr(torch._dynamo.config, name, max(getattr(torch._dynamo.config, name), 64))
        if self.backend != "inductor":
            return dict(backend=self.backend, dynamic=None)
        from torch import _inductor
        from torch._inductor import config as ind

        options = dict(_inductor.list_mode_options(self.mode))
        if self.deterministic:
            # no autotuning that changes numerics; round fused low-precision intermediates
            # the way eager does (newer torch only: skipped where the option does not exist)
            options.update(deterministic=True, emulate_precision_casts=True)
        options = {k: v for k, v in options.items() if hasattr(ind, k.split(".")[0])}
        return dict(backend="inductor", dynamic=None, options=options)

    def _fail(self, e: Exception):
        if self.compile_error is None:
            self.compile_error = f"{type(e).__name__}: {' '.join(str(e).split())[:400]}"
            warnings.warn(f"torch.compile failed, running eagerly instead ({self.compile_error})",
                          stacklevel=3)

    @property
    def compiled(self) -> bool:
        return self.compile and self.compile_error is None

    # -- the pieces, eager versions (the compiled ones trace these) ---------------------------
    def _step_eager(self, y: torch.Tensor, z: torch.Tensor, x: torch.Tensor):
        """One supervision step: TRM.step's recursion, with y + x formed once per recursion
        (the same values TRM.step adds before each of the n latent updates)."""
        for _ in range(self.cfg.H_cycles):
            yx = y + x
            for _ in range(self.cfg.L_cycles):
                z = self._app(z, yx, self.rope)
            y = self._app(y, z, self.rope)
        return y, z

    def _heads_eager(self, y: torch.Tensor):
        logits = self.model.lm_head(y)[:, self.cfg.prefix_len:]
        return logits.argmax(-1), self.model.q_head(y[:, 0]).float()[:, 0]

    # -- public --------------------------------------------------------------------------------
    def step(self, y, z, x):
        return self._step_fn(y, z, x)

    def heads(self, y):
        """(argmax predictions [B, L] int64, Q-halt logits [B] float32) of the answer state."""
        return self._heads_fn(y)

    def noise(self, v, key_lo, key_hi, k, t, target: int, sigma: float):
        return self._noise(v, key_lo, key_hi, k, t, target, float(sigma))

    def embed(self, inputs, puzzle_ids=None):
        return self.model.embed(inputs, puzzle_ids)

    def init_carry(self, n: int):
        return self.model.init_carry(n, self.device)


_ENGINES: dict = {}


def engine_for(model: TRM, **options) -> Engine:
    """One Engine per (model, options), rebuilt when the model's weights change (a parameter
    replaced or updated in place) or its RMSNorm's summation order does (`fixed_order_norm`:
    the engine runs a copy), so callers can ask for it on every sample() call."""
    key = (id(model), tuple(sorted(options.items())))
    version = (tuple((p.data_ptr(), p._version) for p in model.parameters()),
               tuple(b.pairwise_norm for b in model.L_level.layers))
    hit = _ENGINES.get(key)
    if hit is not None:
        ref, ver, eng = hit
        if ref() is model and ver == version:
            return eng
    eng = Engine(model, **options)
    _ENGINES[key] = (weakref.ref(model), version, eng)
    return eng


# -- results -------------------------------------------------------------------------------------

@dataclass
class PoolResult:
    preds: torch.Tensor           # [P, K, L] int64: each rollout's prediction when it ended
    q: torch.Tensor               # [P, K] float32: its Q-halt logit then (nan: never started)
    steps: torch.Tensor           # [P, K] int32: steps it ran (D = to the end, 0 = never)
    chosen: torch.Tensor          # [P] int64: the rollout picked (stop rule, verified, best-Q)
    stopped: torch.Tensor         # [P] bool: ended on a verified or confident rollout, at any
    #                               check (the one at step D too, which saves nothing)
    valid: torch.Tensor | None    # [P, K] bool: rules verdict of each recorded prediction
    row_steps: int                # supervision steps computed, summed over rows
    puzzle_row_steps: torch.Tensor  # [P] int64: the same per puzzle
    flops: float                  # row_steps x flops_per_step (matmul FLOPs, reference formula)
    step_q: torch.Tensor | None = None      # [P, K, D] (record_steps)
    step_preds: torch.Tensor | None = None  # [P, K, D, L] int16 (record_steps)
    timed_out: bool = False
    stats: dict = field(default_factory=dict)

    @property
    def answer(self) -> torch.Tensor:
        """[P, L] the chosen rollout's prediction per puzzle."""
        return self.preds[torch.arange(self.preds.shape[0]), self.chosen]

    @property
    def answer_q(self) -> torch.Tensor:
        return self.q[torch.arange(self.q.shape[0]), self.chosen]

    def rollouts(self) -> Rollouts:
        return Rollouts(self.preds, self.q, self.step_q, self.step_preds, stats=self.stats)


# -- the pool ------------------------------------------------------------------------------------

def _to_device(a: np.ndarray, device: torch.device) -> torch.Tensor:
    """Host array -> device tensor without making the host wait for queued GPU work."""
    t = torch.from_numpy(np.ascontiguousarray(a))
    if device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


class _Pool:
    """The rows in flight: host bookkeeping (numpy) mirrored by device tensors."""

    def __init__(self, engine: Engine, keys: torch.Tensor, X: torch.Tensor, K: int,
                 first_rollout: int):
        self.e, self.keys, self.X, self.K, self.k0 = engine, keys, X, K, first_rollout
        self.p = np.zeros(0, np.int64)       # puzzle of each row
        self.k = np.zeros(0, np.int64)       # rollout index of each row
        self.t = np.zeros(0, np.int64)       # steps done by each row
        self.y = self.z = self.x = None
        self.d_lo = self.d_hi = self.d_k = self.d_t = self.d_id = None

    def __len__(self):
        return len(self.p)

    def keep(self, mask: np.ndarray):
        """Drop the rows where mask is False (compaction)."""
        if mask.all():
            return
        idx = _to_device(np.nonzero(mask)[0], self.e.device)
        self.p, self.k, self.t = self.p[mask], self.k[mask], self.t[mask]
        for name in ("y", "z", "x", "d_lo", "d_hi", "d_k", "d_t", "d_id"):
            setattr(self, name, getattr(self, name).index_select(0, idx))

    def add(self, p_new: np.ndarray, k_new: np.ndarray):
        """Start rollouts (p_new[i], k_new[i]) from the initial carry."""
        if len(p_new) == 0:
            return
        e = self.e
        idx = _to_device(p_new, e.device)
        y0, z0 = e.init_carry(len(p_new))
        new = {"y": y0, "z": z0, "x": self.X.index_select(0, idx),
               "d_lo": self.keys[:, 0].index_select(0, idx),
               "d_hi": self.keys[:, 1].index_select(0, idx),
               "d_k": _to_device(k_new + self.k0, e.device),
               "d_t": torch.zeros(len(p_new), dtype=torch.long, device=e.device),
               "d_id": _to_device(p_new * self.K + k_new, e.device)}
        for name, v in new.items():
            old = getattr(self, name)
            setattr(self, name, v if old is None or len(self.p) == 0 else torch.cat((old, v)))
        self.p = np.concatenate((self.p, p_new))
        self.k = np.concatenate((self.k, k_new))
        self.t = np.concatenate((self.t, np.zeros(len(p_new), np.int64)))


@torch.inference_mode()
def run(engine: Engine, inputs: torch.Tensor, *, K: int, D: int, sigma: float,
        perturb: str = "z", seed: int = 0, puzzle_ids: torch.Tensor | None = None,
        first_rollout: int = 0, wave: int | None = None, capacity: int | None = None,
        check_every: int | None = None, q_threshold: float | None = None,
        verify: Verify | None = None, record_steps: bool = False,
        time_limit: float | None = None,
        on_progress: Callable[[int, int], None] | None = None) -> PoolResult:
    """K rollouts of D steps for each puzzle of `inputs` [P, L] (the noise of sampler.sample at
    the same seed, rollouts numbered from first_rollout).

    Without q_threshold, verify and time_limit this is the fixed run (one host sync). With
    them: checks every `check_every` steps of a rollout (None: only when it reaches D), a puzzle
    stops at the first check where a rollout verifies (then the highest-Q verified one is its
    answer) or has sigmoid(Q) > q_threshold (the highest-Q one); `wave` rollouts of a puzzle in
    flight at most; `time_limit` seconds: stop everything at the next check and answer from the
    rollouts so far (their current step). A puzzle that never stops is answered from its K
    final rollouts: the highest-Q verified one if any (with verify), else the highest Q."""
    check_run(K, D, sigma, perturb)
    check_inputs(engine.model.config, inputs, puzzle_ids)
    check_first_rollout(first_rollout)
    e, dev = engine, engine.device
    P, L = inputs.shape
    W = K if wave is None else max(1, min(int(wave), K))
    C = max(1, int(capacity)) if capacity else max(1, P * W)
    rules = verify is not None or q_threshold is not None
    every = (int(check_every) if check_every else D) if rules else D
    if every < 1:
        raise UsageError("check_every must be >= 1")
    noisy = sigma > 0
    t0 = time.perf_counter()

    keys = puzzle_keys(seed, inputs).to(dev)
    X = e.embed(inputs.to(dev), None if puzzle_ids is None else puzzle_ids.to(dev))
    pool = _Pool(e, keys, X, K, first_rollout)

    next_k = np.zeros(P, np.int64)
    inflight = np.zeros(P, np.int64)
    done = np.zeros(P, bool)
    stopped = np.zeros(P, bool)
    chosen = np.full(P, -1, np.int64)
    steps = np.zeros((P, K), np.int32)
    valid = np.zeros((P, K), bool) if verify is not None else None
    judged = np.zeros((P, K), bool)
    puzzle_row_steps = np.zeros(P, np.int64)
    out_preds = torch.zeros(P * K, L, dtype=torch.long, device=dev)
    out_q = torch.full((P * K,), math.nan, dtype=torch.float32, device=dev)
    if record_steps:
        out_sq = torch.full((P * K, D), math.nan, dtype=torch.float32, device=dev)
        out_sp = torch.zeros(P * K, D, L, dtype=torch.int16, device=dev)
    stats = {"checks": 0, "syncs": 0, "max_rows": 0, "waves_started": np.zeros(P, np.int64)}
    ended = 0
    timed_out = False

    def refill():
        free = C - len(pool)
        if free <= 0:
            return
        want = np.nonzero(~done & (next_k < K) & (inflight < W))[0]
        if len(want) == 0:
            return
        order = want[np.lexsort((want, next_k[want] // W))]  # earliest wave first, then puzzle
        ps, ks = [], []
        for p in order:
            if rules:
                # adaptive: a wave starts whole, when the previous one has ended, so its rows
                # are checked together (what adaptive.simulate assumes); only a wave larger
                # than the whole pool is split
                if inflight[p]:
                    continue
                n = int(min(W, K - next_k[p]))
                if n > free:
                    if len(pool) or ps:
                        break
                    n = free
            else:
                n = int(min(W - inflight[p], K - next_k[p], free))
            if n <= 0:
                continue
            if next_k[p] % W == 0:
                stats["waves_started"][p] += 1
            ps.append(np.full(n, p, np.int64))
            ks.append(np.arange(next_k[p], next_k[p] + n, dtype=np.int64))
            next_k[p] += n
            inflight[p] += n
            free -= n
            if free == 0:
                break
        if ps:
            pool.add(np.concatenate(ps), np.concatenate(ks))

    def record(rows: np.ndarray, preds_dev=None, q_dev=None):
        """Write rows' current prediction and Q (computed here unless given) into the results."""
        if len(rows) == 0:
            return
        idx = _to_device(rows, dev)
        if preds_dev is None:
            preds_dev, q_dev = e.heads(pool.y.index_select(0, idx))
        else:
            preds_dev, q_dev = preds_dev.index_select(0, idx), q_dev.index_select(0, idx)
        ids = pool.d_id.index_select(0, idx)
        out_preds.index_copy_(0, ids, preds_dev)
        out_q.index_copy_(0, ids, q_dev.float())
        steps[pool.p[rows], pool.k[rows]] = pool.t[rows]

    refill()
    while len(pool):
        stats["max_rows"] = max(stats["max_rows"], len(pool))
        # steps until some row reaches its next check (every `every` steps of its own, or D)
        n = int(np.min(np.minimum(D - pool.t, every - pool.t % every)))
        if time_limit is not None:
            n = 1
        for _ in range(n):
            if noisy and perturb != "init":
                if perturb in ("z", "both"):
                    pool.z = e.noise(pool.z, pool.d_lo, pool.d_hi, pool.d_k, pool.d_t, TARGET_Z,
                                     sigma)
                if perturb in ("y", "both"):
                    pool.y = e.noise(pool.y, pool.d_lo, pool.d_hi, pool.d_k, pool.d_t, TARGET_Y,
                                     sigma)
            elif noisy and (pool.t == 0).any():  # "init": z of rows that have not stepped yet
                fresh = e.noise(pool.z, pool.d_lo, pool.d_hi, pool.d_k, pool.d_t, TARGET_Z, sigma)
                pool.z = fresh if (pool.t == 0).all() else \
                    torch.where((pool.d_t == 0)[:, None, None], fresh, pool.z)
            pool.y, pool.z = e.step(pool.y, pool.z, pool.x)
            if record_steps:
                pr, qq = e.heads(pool.y)
                out_sq[pool.d_id, pool.d_t] = qq.float()
                out_sp[pool.d_id, pool.d_t] = pr.to(torch.int16)
            pool.d_t = pool.d_t + 1
            pool.t = pool.t + 1
        np.add.at(puzzle_row_steps, pool.p, n)

        finishing = pool.t == D
        at_check = finishing | (pool.t % every == 0)
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            timed_out = True
        if (rules and at_check.any()) or timed_out:
            stats["checks"] += 1
            stats["syncs"] += 1
            preds_dev, q_dev = e.heads(pool.y)
            preds_h, q_h = preds_dev.cpu(), q_dev.float().cpu().numpy()
            ending = finishing.copy()
            for p in np.unique(pool.p[at_check]):
                rows = np.nonzero(at_check & (pool.p == p))[0]
                pick = None
                if verify is not None:
                    ok = np.asarray(verify(int(p), preds_h[rows]), dtype=bool).reshape(-1)
                    valid[p, pool.k[rows]] = ok
                    judged[p, pool.k[rows]] = True
                    if ok.any():
                        cand = rows[ok]
                        pick = cand[np.argmax(q_h[cand])]
                if pick is None and q_threshold is not None:
                    conf = rows[_sigmoid(q_h[rows]) > q_threshold]
                    if len(conf):
                        pick = conf[np.argmax(q_h[conf])]
                if pick is not None:
                    done[p] = stopped[p] = True
                    chosen[p] = pool.k[pick]
            if timed_out:
                done[:] = True
            ending |= done[pool.p]
            record(np.nonzero(ending)[0], preds_dev, q_dev)
        else:
            ending = finishing
            record(np.nonzero(ending)[0])
        if ending.any():
            np.subtract.at(inflight, pool.p[ending], 1)
            ended += int(ending.sum())
            pool.keep(~ending)
            refill()
            if on_progress is not None:
                skipped = int(np.sum(np.where(done, K - next_k, 0)))
                on_progress(ended + skipped, P * K)

    # the one sync of a fixed run: results to the host
    preds = out_preds.view(P, K, L).cpu()
    q = out_q.view(P, K).cpu()
    for p in np.nonzero(~stopped)[0]:
        ran = np.nonzero(steps[p] > 0)[0]
        if len(ran) == 0:
            continue
        qp = q[p, ran].numpy()
        if verify is not None:
            todo = ran[~judged[p, ran]]
            if len(todo):
                valid[p, todo] = np.asarray(verify(int(p), preds[p, todo]), bool).reshape(-1)
                judged[p, todo] = True
            ok = valid[p, ran]
            if ok.any():
                chosen[p] = ran[ok][np.argmax(qp[ok])]
                continue
        chosen[p] = ran[np.argmax(qp)]  # first maximum: ties go to the lowest index

    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    row_steps = int(puzzle_row_steps.sum())
    stats.update(time_s=time.perf_counter() - t0, rows_capacity=C, wave=W, check_every=every,
                 waves_started=stats["waves_started"].tolist(), compiled=e.compiled,
                 compile_error=e.compile_error)
    res = PoolResult(preds, q, torch.from_numpy(steps), torch.from_numpy(np.maximum(chosen, 0)),
                     torch.from_numpy(stopped), None if valid is None else torch.from_numpy(valid),
                     row_steps, torch.from_numpy(puzzle_row_steps), float(row_steps * e.fps),
                     timed_out=timed_out, stats=stats)
    if record_steps:
        res.step_q = out_sq.view(P, K, D).cpu()
        res.step_preds = out_sp.view(P, K, D, L).cpu()
    return res


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -60, 60)))
