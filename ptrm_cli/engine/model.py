"""The Tiny Recursive Model (TRM) network, written from shared/docs/TRM_REFERENCE.md §1.

One small network `L_level` (h post-norm blocks) is applied over and over:

    one latent recursion:   z <- net(z, y + x)   n times      (reason: refine the latent)
                            y <- net(y, z)                     (act: refine the answer)
    one deep recursion  =   T latent recursions; the first T-1 without gradient
                        =   one supervision step (`TRM.step`)

x is the embedded puzzle, y the answer state and z the latent state, each [B, S, D] with
S = seq_len + P (P puzzle-embedding slots prepended). Two variants: TRM-Att (self-attention)
and TRM-MLP (`mlp_t`: a token-mixing SwiGLU over the S axis instead of attention).

Module and tensor names follow the reference's state_dict keys exactly (`L_level`,
`embed_tokens.embedding_weight`, `puzzle_emb.weights`, ...), so an official checkpoint loads
after stripping its key prefix and ours can be handed back to the reference code.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import MISSING, asdict, dataclass, fields
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..errors import PtrmError

POS_ENCODINGS = ("rope", "learned", "none")
FORWARD_DTYPES = {"bfloat16": torch.bfloat16, "float32": torch.float32}


# -- configuration -------------------------------------------------------------------------------

@dataclass(frozen=True)
class TRMConfig:
    """Architecture of one TRM. Defaults are the reference's (TRM_REFERENCE.md §0)."""

    vocab_size: int                  # V
    seq_len: int                     # L: tokens per puzzle (without the puzzle prefix)
    hidden_size: int = 512           # D
    num_heads: int = 8
    expansion: float = 4.0
    L_layers: int = 2                # h: blocks in the one network
    H_cycles: int = 3                # T: latent recursions per supervision step
    L_cycles: int = 6                # n: latent updates per latent recursion
    pos_encodings: str = "rope"      # rope | learned | none
    mlp_t: bool = False              # TRM-MLP: token-mixing SwiGLU instead of attention
    puzzle_emb_ndim: int = 512       # width of the per-puzzle vector (0: no puzzle embedding)
    puzzle_emb_len: int = 16         # P prefix slots (0: ceil(puzzle_emb_ndim / D))
    num_puzzle_identifiers: int = 1
    halt_max_steps: int = 16         # N_sup: supervision steps
    halt_exploration_prob: float = 0.1
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    forward_dtype: str = "bfloat16"  # activations and carry; weights stay float32

    def __post_init__(self):
        def bad(msg):
            raise PtrmError(f"model config: {msg}")

        for name in ("vocab_size", "seq_len", "hidden_size", "num_heads", "L_layers",
                     "H_cycles", "L_cycles", "halt_max_steps", "num_puzzle_identifiers"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                bad(f"{name} must be a positive integer, got {v!r}")
        for name in ("puzzle_emb_ndim", "puzzle_emb_len"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                bad(f"{name} must be a non-negative integer, got {v!r}")
        if self.pos_encodings not in POS_ENCODINGS:
            bad(f"pos_encodings must be one of {', '.join(POS_ENCODINGS)}, "
                f"got {self.pos_encodings!r}")
        if self.forward_dtype not in FORWARD_DTYPES:
            bad(f"forward_dtype must be one of {', '.join(FORWARD_DTYPES)}, "
                f"got {self.forward_dtype!r}")
        if not isinstance(self.mlp_t, bool):
            bad(f"mlp_t must be true or false, got {self.mlp_t!r}")
        if self.hidden_size % self.num_heads:
            bad(f"hidden_size {self.hidden_size} is not divisible by num_heads {self.num_heads}")
        if self.pos_encodings == "rope" and not self.mlp_t and self.head_dim % 2:
            bad(f"rope needs an even head dimension, got {self.head_dim}")
        if self.puzzle_emb_ndim == 0 and self.puzzle_emb_len > 0:
            # The reference sizes everything for S = L + P here, then fails on the first add.
            bad(f"puzzle_emb_ndim=0 with puzzle_emb_len={self.puzzle_emb_len} cannot run; "
                "to drop the puzzle prefix set both to 0")
        if self.puzzle_emb_ndim > self.prefix_len * self.hidden_size:
            bad(f"puzzle_emb_ndim {self.puzzle_emb_ndim} does not fit in puzzle_emb_len "
                f"{self.prefix_len} x hidden_size {self.hidden_size}")
        for name in ("expansion", "rms_norm_eps", "rope_theta", "halt_exploration_prob"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                bad(f"{name} must be a non-negative number, got {v!r}")
        if self.expansion == 0:
            bad("expansion must be positive")
        if self.halt_exploration_prob > 1:
            bad(f"halt_exploration_prob is a probability (0 to 1), got "
                f"{self.halt_exploration_prob!r}")

    # Derived sizes ------------------------------------------------------------------------------
    @property
    def prefix_len(self) -> int:
        """P: puzzle-embedding slots in front of the grid tokens."""
        if self.puzzle_emb_len:
            return self.puzzle_emb_len
        return -(-self.puzzle_emb_ndim // self.hidden_size)

    @property
    def total_len(self) -> int:
        """S = seq_len + P: the length the network sees."""
        return self.seq_len + self.prefix_len

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def inter_size(self) -> int:
        """Channel SwiGLU width I."""
        return swiglu_inter(self.hidden_size, self.expansion)

    @property
    def inter_size_t(self) -> int:
        """Token-mixing SwiGLU width I_t (mlp_t only)."""
        return swiglu_inter(self.total_len, self.expansion)

    @property
    def dtype(self) -> torch.dtype:
        return FORWARD_DTYPES[self.forward_dtype]

    # Persistence --------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "TRMConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise PtrmError(f"model config: unknown key(s) {', '.join(unknown)}",
                            hint=f"known keys: {', '.join(sorted(known))}")
        missing = sorted(f.name for f in fields(cls) if f.default is MISSING and f.name not in d)
        if missing:
            raise PtrmError(f"model config: missing key(s) {', '.join(missing)}")
        return cls(**d)


def swiglu_inter(width: int, expansion: float) -> int:
    """round(expansion * width * 2/3), rounded up to a multiple of 256 (the reference's rule)."""
    return -(-round(expansion * width * 2 / 3) // 256) * 256


# -- building blocks -----------------------------------------------------------------------------

def trunc_normal_(t: Tensor, std: float) -> Tensor:
    """Truncated normal at +-2 units, JAX style: the sampling std is inflated so that the std of
    the *truncated* distribution is `std` (what LeCun init asks for)."""
    if t.is_meta:  # shapes only (loading weights next): nothing to draw, and erfinv_ on meta
        return t    # tensors would pull in torch._dynamo, seconds of start-up
    with torch.no_grad():
        if std == 0:
            return t.zero_()
        lo, hi = -2.0, 2.0
        pdf = lambda u: math.exp(-0.5 * u * u) / math.sqrt(2 * math.pi)  # noqa: E731
        a, b = math.erf(lo / math.sqrt(2)), math.erf(hi / math.sqrt(2))
        z = (b - a) / 2
        var = 1 - (hi * pdf(hi) - lo * pdf(lo)) / z - ((pdf(hi) - pdf(lo)) / z) ** 2
        comp_std = std / math.sqrt(var)
        t.uniform_(a, b).erfinv_().mul_(math.sqrt(2) * comp_std)
        return t.clip_(lo * comp_std, hi * comp_std)


class CastedLinear(nn.Module):
    """Linear layer with float32 master weights cast to the input's dtype at call time, so the
    matmuls run in bf16 when activations are bf16 while the optimizer sees float32."""

    def __init__(self, in_features: int, out_features: int, bias: bool = False):
        super().__init__()
        self.weight = nn.Parameter(trunc_normal_(torch.empty(out_features, in_features),
                                                 std=1 / math.sqrt(in_features)))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None

    def forward(self, x: Tensor) -> Tensor:
        bias = self.bias.to(x.dtype) if self.bias is not None else None
        return F.linear(x, self.weight.to(x.dtype), bias)


class CastedEmbedding(nn.Module):
    def __init__(self, num: int, dim: int, init_std: float, cast_to: torch.dtype):
        super().__init__()
        self.cast_to = cast_to
        self.embedding_weight = nn.Parameter(trunc_normal_(torch.empty(num, dim), std=init_std))

    def forward(self, ids: Tensor) -> Tensor:
        return F.embedding(ids, self.embedding_weight.to(self.cast_to))


class PuzzleEmbedding(nn.Module):
    """One learned vector per puzzle identifier, zero-initialised.

    As in the reference the table is a persistent *buffer*, not a Parameter: it can be huge
    (ARC: ~1M rows x 512) and is trained by its own sparse sign-SGD on the rows a batch
    touches, not by Adam, EMA or weight decay on the whole table. In training mode with grad
    enabled the looked-up rows are a fresh leaf tensor, kept as `self.rows` (with `self.ids`);
    after backward `self.rows.grad` is what the trainer applies to `weights[self.ids]`.
    """

    def __init__(self, num: int, dim: int, cast_to: torch.dtype):
        super().__init__()
        self.cast_to = cast_to
        self.register_buffer("weights", torch.zeros(num, dim))
        self.rows: Tensor | None = None
        self.ids: Tensor | None = None

    def forward(self, ids: Tensor) -> Tensor:
        rows = F.embedding(ids, self.weights)
        if self.training and torch.is_grad_enabled():
            rows = rows.detach().requires_grad_(True)
            self.rows, self.ids = rows, ids
        return rows.to(self.cast_to)


def rms_norm(x: Tensor, eps: float, pairwise: bool = False) -> Tensor:
    """RMSNorm over the last dim, no learnable gain, computed in float32. pairwise: sum the
    squares in a fixed order (`pairwise_mean_square`) instead of a reduction kernel's own."""
    h = x.float()
    ms = pairwise_mean_square(h) if pairwise else h.square().mean(-1, keepdim=True)
    return (h * torch.rsqrt(ms + eps)).to(x.dtype)


def pairwise_mean_square(h: Tensor) -> Tensor:
    """The mean of h's squares over the last dim [..., 1], summed in a fixed order: pairwise
    halvings of the width (an odd last element carried to the next level).

    A reduction kernel picks its own summation order, and eager torch's is not Inductor's: on
    an H100 that alone made 0.0002% of a compiled RMSNorm's outputs differ from eager's, and a
    rollout of ~1,000 network applications grew that into 32% of rollouts ending elsewhere
    (docs/PERFORMANCE.md, "Session 22"). As elementwise adds, which no backend may reorder,
    every kernel sums alike. Inductor's own kernel for it took twice the reduction's time there,
    and a fixed run 10% more; the compiled engine on a GPU runs engine/norm_kernel.py's
    instead, for the norms over the hidden width: 0.5% more ("Session 23")."""
    s = h.square()
    while s.shape[-1] > 1:
        n = s.shape[-1]
        half = s[..., : n // 2] + s[..., n // 2 : 2 * (n // 2)]
        s = torch.cat((half, s[..., 2 * (n // 2):]), dim=-1) if n % 2 else half
    return s / h.shape[-1]


class RotaryEmbedding(nn.Module):
    """RoPE tables [S, head_dim] laid out as [freqs, freqs] (half-split, not interleaved).
    Non-persistent: recomputed from the config, never stored in a checkpoint."""

    def __init__(self, dim: int, max_len: int, theta: float):
        super().__init__()
        self.dim, self.max_len, self.theta = dim, max_len, theta
        cos, sin = self._tables(None)
        self.register_buffer("cos_cached", cos, persistent=False)
        self.register_buffer("sin_cached", sin, persistent=False)

    def _tables(self, device) -> tuple[Tensor, Tensor]:
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, self.dim, 2, dtype=torch.float32,
                                                      device=device) / self.dim))
        pos = torch.arange(self.max_len, dtype=torch.float32, device=device)
        emb = torch.cat([torch.outer(pos, inv_freq)] * 2, dim=-1)
        return emb.cos(), emb.sin()

    def reset_tables(self, device) -> None:
        """Recompute the tables on `device` (after building the model on the meta device)."""
        self.cos_cached, self.sin_cached = self._tables(device)


def apply_rope(x: Tensor, cos: Tensor, sin: Tensor) -> Tensor:
    """x [B, S, H, hd]; rotation in float32, result cast back to x's dtype."""
    h = x.float()
    half = h.shape[-1] // 2
    rotated = torch.cat((-h[..., half:], h[..., :half]), dim=-1)
    return (h * cos.unsqueeze(-2) + rotated * sin.unsqueeze(-2)).to(x.dtype)


class Attention(nn.Module):
    """Non-causal, unmasked multi-head self-attention: every position (prefix and padding
    included) sees every other. qkv rows are laid out [Q heads | K heads | V heads]."""

    def __init__(self, hidden: int, num_heads: int):
        super().__init__()
        self.num_heads, self.head_dim = num_heads, hidden // num_heads
        self.qkv_proj = CastedLinear(hidden, 3 * hidden)
        self.o_proj = CastedLinear(hidden, hidden)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor] | None) -> Tensor:
        B, S, D = x.shape
        qkv = self.qkv_proj(x).view(B, S, 3 * self.num_heads, self.head_dim)
        q, k, v = qkv.split(self.num_heads, dim=2)
        if rope is not None:
            q, k = apply_rope(q, *rope), apply_rope(k, *rope)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, S, hd]
        out = F.scaled_dot_product_attention(q, k, v, is_causal=False)
        return self.o_proj(out.transpose(1, 2).reshape(B, S, D))


class SwiGLU(nn.Module):
    """down(silu(gate) * up) with one fused projection whose first half is the gate."""

    def __init__(self, width: int, expansion: float):
        super().__init__()
        inter = swiglu_inter(width, expansion)
        self.gate_up_proj = CastedLinear(width, 2 * inter)
        self.down_proj = CastedLinear(inter, width)

    def forward(self, x: Tensor) -> Tensor:
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class TokenMix(SwiGLU):
    """TRM-MLP's mixer: a SwiGLU across the S positions, with S zero-padded to a multiple of 8
    on CUDA.

    cuBLAS runs bf16 matmuls on tensor cores only when every leading dimension is a multiple of
    8 elements (16 bytes). Sudoku's S = 81 + 16 = 97 made both token-mix matmuls fall back to
    slow kernels: padded, the fast engine ran TRM-MLP 1.99x faster on an H100 (docs/
    PERFORMANCE.md, "Session 17"). The zero input columns and zero weight columns add exact zeros
    to every sum, and the padded output rows are cut off: the same math (the matmul kernels, so
    the rounding, may differ) and the same parameters. `align`: None = on CUDA only, so CPU
    results stay those of the plain matmuls."""

    align: bool | None = None

    def forward(self, x: Tensor) -> Tensor:
        S = x.shape[-1]
        pad = -S % 8 if (x.is_cuda if self.align is None else self.align) else 0
        if not pad:
            return super().forward(x)
        w_in = F.pad(self.gate_up_proj.weight.to(x.dtype), (0, pad))          # [2I, S']
        w_out = F.pad(self.down_proj.weight.to(x.dtype), (0, 0, 0, pad))      # [S', I]
        gate, up = F.linear(F.pad(x, (0, pad)), w_in).chunk(2, dim=-1)
        return F.linear(F.silu(gate) * up, w_out)[..., :S]


class Block(nn.Module):
    """Post-norm block: x <- norm(x + mix(x)); x <- norm(x + SwiGLU(x)). The mixer is attention
    (TRM-Att) or a SwiGLU across the S positions (TRM-MLP, normalised over the sequence axis)."""

    def __init__(self, cfg: TRMConfig):
        super().__init__()
        self.eps = cfg.rms_norm_eps
        if cfg.mlp_t:
            self.mlp_t = TokenMix(cfg.total_len, cfg.expansion)
        else:
            self.self_attn = Attention(cfg.hidden_size, cfg.num_heads)
        self.mlp = SwiGLU(cfg.hidden_size, cfg.expansion)

    #: RMSNorm's sum of squares in a fixed order (TRM.fixed_order_norm), not a reduction's
    pairwise_norm: bool = False
    #: add_norm(x, y, eps): the same as rms_norm(x + y, eps, pairwise=True) in one kernel; set
    #: only on a compiled engine's copy on a GPU (engine/norm_kernel.py)
    add_norm = None

    def _add_norm(self, x: Tensor, y: Tensor) -> Tensor:
        if self.pairwise_norm and self.add_norm is not None:
            return self.add_norm(x, y, self.eps)
        return rms_norm(x + y, self.eps, self.pairwise_norm)

    def forward(self, x: Tensor, rope: tuple[Tensor, Tensor] | None) -> Tensor:
        if hasattr(self, "mlp_t"):
            xt = x.transpose(1, 2)  # [B, D, S]: mix tokens, normalise over S
            x = rms_norm(xt + self.mlp_t(xt), self.eps, self.pairwise_norm).transpose(1, 2)
        else:
            x = self._add_norm(x, self.self_attn(x, rope))
        return self._add_norm(x, self.mlp(x))


class ReasoningModule(nn.Module):
    """The one network `net(state, injection)`: the h blocks applied to state + injection."""

    def __init__(self, cfg: TRMConfig):
        super().__init__()
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.L_layers))

    def forward(self, state: Tensor, injection: Tensor, rope) -> Tensor:
        h = state + injection
        for layer in self.layers:
            h = layer(h, rope)
        return h


# -- the model -----------------------------------------------------------------------------------

class Carry(NamedTuple):
    """The recursion state carried between supervision steps, each [B, S, D] in forward dtype.
    y = the answer state (the reference's z_H); z = the latent reasoning state (its z_L)."""

    y: Tensor
    z: Tensor


class StepOutput(NamedTuple):
    carry: Carry        # detached
    logits: Tensor      # [B, L, V] forward dtype, prefix sliced off
    q_halt: Tensor      # [B] float32: logit of "the current answer is correct, stop"
    q_continue: Tensor  # [B] float32: unused by the reference's halting (no_ACT_continue)

    @property
    def preds(self) -> Tensor:
        return self.logits.argmax(-1)


class TRM(nn.Module):
    def __init__(self, config: TRMConfig):
        super().__init__()
        self.config = cfg = config
        D, dtype = cfg.hidden_size, cfg.dtype
        self.embed_scale = math.sqrt(D)
        self.embed_tokens = CastedEmbedding(cfg.vocab_size, D, 1 / self.embed_scale, dtype)
        self.lm_head = CastedLinear(D, cfg.vocab_size)
        self.q_head = CastedLinear(D, 2, bias=True)
        with torch.no_grad():  # start with "never halt": q = sigmoid(-5) ~ 0.007
            self.q_head.weight.zero_()
            self.q_head.bias.fill_(-5.0)
        if cfg.puzzle_emb_ndim > 0:
            self.puzzle_emb = PuzzleEmbedding(cfg.num_puzzle_identifiers, cfg.puzzle_emb_ndim,
                                              dtype)
        if cfg.pos_encodings == "rope" and not cfg.mlp_t:  # TRM-MLP has no attention to rotate
            self.rotary_emb = RotaryEmbedding(cfg.head_dim, cfg.total_len, cfg.rope_theta)
        elif cfg.pos_encodings == "learned":
            self.embed_pos = CastedEmbedding(cfg.total_len, D, 1 / self.embed_scale, dtype)
        self.L_level = ReasoningModule(cfg)  # the reference's name for the one network `net`
        # Initial y and z: fixed random vectors, broadcast to every position. Persistent buffers,
        # never trained, so they must come from the checkpoint (never re-sampled).
        self.register_buffer("H_init", trunc_normal_(torch.empty(D), std=1.0).to(dtype))
        self.register_buffer("L_init", trunc_normal_(torch.empty(D), std=1.0).to(dtype))

    # -- input ------------------------------------------------------------------------------------
    def embed(self, inputs: Tensor, puzzle_ids: Tensor | None = None) -> Tensor:
        """x [B, S, D] in forward dtype: the puzzle prefix (if any) then the token embeddings,
        scaled by sqrt(D). `puzzle_ids` None means the blank id 0 for every row."""
        cfg = self.config
        e = self.embed_tokens(inputs.long())
        if cfg.puzzle_emb_ndim > 0:
            if puzzle_ids is None:
                puzzle_ids = torch.zeros(inputs.shape[0], dtype=torch.long, device=inputs.device)
            pe = self.puzzle_emb(puzzle_ids.long())
            pe = F.pad(pe, (0, cfg.prefix_len * cfg.hidden_size - pe.shape[-1]))
            e = torch.cat((pe.view(-1, cfg.prefix_len, cfg.hidden_size), e), dim=-2)
        if cfg.pos_encodings == "learned":
            e = 0.707106781 * (e + self.embed_pos.embedding_weight.to(e.dtype))  # keep variance
        return self.embed_scale * e

    # -- carry ------------------------------------------------------------------------------------
    def init_carry(self, batch_size: int, device=None) -> Carry:
        shape = (batch_size, self.config.total_len, self.config.hidden_size)
        device = self.H_init.device if device is None else device
        y = self.H_init.to(device).expand(shape).contiguous()
        z = self.L_init.to(device).expand(shape).contiguous()
        return Carry(y, z)

    def fixed_order_norm(self, on: bool = True) -> "TRM":
        """Sum every RMSNorm's squares in a fixed pairwise order (`pairwise_mean_square`), or,
        with on=False, by a reduction kernel again (what a new model, and training, does;
        `solver.load_model` turns it on for inference). On, a compiled engine on a GPU gives
        this model's eager results bit for bit (`--no-exact` of bench and eval turns it off);
        the values are the same function up to float32 rounding, so weights need no change.
        Returns self."""
        for block in self.L_level.layers:
            block.pairwise_norm = bool(on)
        return self

    def reset_carry(self, carry: Carry, reset: Tensor) -> Carry:
        """Rows with reset=True start over from H_init/L_init; the others keep their state."""
        r = reset.view(-1, 1, 1)
        return Carry(torch.where(r, self.H_init, carry.y), torch.where(r, self.L_init, carry.z))

    # -- recursion --------------------------------------------------------------------------------
    def _rope(self):
        if hasattr(self, "rotary_emb"):
            return self.rotary_emb.cos_cached, self.rotary_emb.sin_cached
        return None

    def latent_recursion(self, y: Tensor, z: Tensor, x: Tensor, rope) -> tuple[Tensor, Tensor]:
        """n latent updates z <- net(z, y + x), then one answer update y <- net(y, z)."""
        for _ in range(self.config.L_cycles):
            z = self.L_level(z, y + x, rope)
        y = self.L_level(y, z, rope)
        return y, z

    def step(self, carry: Carry, x: Tensor, *, grad: bool = False) -> StepOutput:
        """One supervision step = one deep recursion (T latent recursions).

        The first T-1 run under no_grad; the last one records a graph iff grad=True (it runs in
        the ambient grad mode, normally enabled). The returned carry is detached, so training
        back-propagates through exactly the last n+1 network applications of this step.
        Static shapes and no data-dependent Python control flow: safe to torch.compile."""
        rope = self._rope()
        y, z = carry
        with torch.no_grad():
            for _ in range(self.config.H_cycles - 1):
                y, z = self.latent_recursion(y, z, x, rope)
        with contextlib.nullcontext() if grad else torch.no_grad():
            y, z = self.latent_recursion(y, z, x, rope)
            logits = self.lm_head(y)[:, self.config.prefix_len:]
            q = self.q_head(y[:, 0]).float()  # position 0: the first prefix slot
        return StepOutput(Carry(y.detach(), z.detach()), logits, q[:, 0], q[:, 1])

    def forward(self, inputs: Tensor, puzzle_ids: Tensor | None = None, *,
                steps: int | None = None) -> StepOutput:
        """Deterministic TRM: fresh carry, `steps` (default halt_max_steps) supervision steps,
        the last step's output. This is the reference's evaluation (no early halting)."""
        x = self.embed(inputs, puzzle_ids)
        carry = self.init_carry(inputs.shape[0], inputs.device)
        for _ in range(self.config.halt_max_steps if steps is None else steps):
            out = self.step(carry, x)
            carry = out.carry
        return out

    # -- loading ----------------------------------------------------------------------------------
    @classmethod
    def from_state_dict(cls, config: TRMConfig, state_dict: dict[str, Tensor],
                        device="cpu") -> "TRM":
        """Build a model straight from weights (no random init, no second copy of the puzzle
        table): construct on the meta device, then assign the given tensors, cast to the dtype
        each slot expects (e.g. bf16 H_init into a float32-forward model). A tensor already of
        the right dtype and device is used as is, not copied. Raises ValueError naming the
        missing, unexpected or mis-shaped tensors."""
        with torch.device("meta"):
            model = cls(config)
        expected = model.state_dict()
        missing = sorted(set(expected) - set(state_dict))
        unexpected = sorted(set(state_dict) - set(expected))
        shapes = [f"{k}: file {tuple(state_dict[k].shape)}, model {tuple(v.shape)}"
                  for k, v in expected.items() if k in state_dict and state_dict[k].shape != v.shape]
        def listed(label, items, sep=", "):
            more = f"{sep}... ({len(items) - 4} more)" if len(items) > 4 else ""
            return [f"{label}: {sep.join(items[:4])}{more}"] if items else []

        problems = listed("missing", missing) + listed("unexpected", unexpected) + \
            listed("shape mismatch", shapes, "; ")
        if problems:
            raise ValueError("weights do not fit the model config (" + " | ".join(problems) + ")")
        cast = {k: state_dict[k].to(device=device, dtype=v.dtype).contiguous()
                for k, v in expected.items()}
        model.load_state_dict(cast, strict=True, assign=True)
        if hasattr(model, "rotary_emb"):
            model.rotary_emb.reset_tables(device)
        return model


# -- accounting ----------------------------------------------------------------------------------

def count_parameters(model: nn.Module | TRMConfig) -> int:
    """Trainable parameters, as the reference logs them: the puzzle table and H_init/L_init are
    buffers and not counted. A config is built on the meta device (no memory, no init)."""
    if isinstance(model, TRMConfig):
        with torch.device("meta"):
            model = TRM(model)
    return sum(p.numel() for p in model.parameters())


def flops_per_step(config: TRMConfig) -> int:
    """Matmul FLOPs (2 per multiply-add) of one supervision step for one sequence
    (TRM_REFERENCE.md §8): T(n+1) network applications + lm_head on all S positions + q_head."""
    c = config
    S, D, h, I = c.total_len, c.hidden_size, c.L_layers, c.inter_size
    if c.mlp_t:
        per_app = h * 6 * S * D * (I + c.inter_size_t)
    else:
        per_app = h * S * (8 * D * D + 6 * D * I + 4 * S * D)
    return c.H_cycles * (c.L_cycles + 1) * per_app + 2 * D * c.vocab_size * S + 4 * D
