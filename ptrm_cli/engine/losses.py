"""The loss head of deep supervision with ACT (TRM_REFERENCE.md §3.2).

Every supervision step is scored on its own:

    lm_loss     = sum over rows of (mean cross-entropy over the row's labelled cells)
    q_halt_loss = sum over rows of BCE(q_halt, "this step's argmax answer is entirely right")
    total       = lm_loss + 0.5 * q_halt_loss

Sums, not means: the trainer divides by the *global* batch size, so the gradient is a
per-example mean however the batch is split across GPUs. Labels equal to the pad id (0) are
not scored; a row is "right" when every labelled cell is.

The cross-entropy is the reference's stablemax (`stablemax`), computed in float64 as there;
plain softmax (`softmax`, float32) is the common alternative and is offered for comparison.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

IGNORE = 0  # the pad token id: labels equal to it are not scored
LOSS_TYPES = ("stablemax", "softmax")


# -- per-cell cross-entropies --------------------------------------------------------------------

def _stable_s(x: Tensor) -> Tensor:
    """s(x) = x + 1 for x >= 0 and 1 / (1 - x) for x < 0: positive, monotone, and growing only
    linearly, so no logit can run away the way exp(x) lets it (the reason TRM uses it).
    The clamp keeps the branch torch.where discards finite (no 1/0 at x = 1), which is why the
    reference's 1e-30 guard is not needed here; on the branch that is used they agree."""
    return torch.where(x < 0, 1 / (1 - x.clamp(max=0)), x + 1)


def stablemax_cross_entropy(logits: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
    """-log(s(x_label) / sum_j s(x_j)) per cell, float64, 0 where mask is False. [B, L]"""
    s = _stable_s(logits.to(torch.float64))
    target = torch.where(mask, labels, 0).long().unsqueeze(-1)
    logp = s.gather(-1, target).squeeze(-1).log() - s.sum(-1).log()
    return torch.where(mask, -logp, 0.0)


def softmax_cross_entropy(logits: Tensor, labels: Tensor, mask: Tensor) -> Tensor:
    """Ordinary cross-entropy per cell, float32, 0 where mask is False. [B, L]"""
    B, L, V = logits.shape
    target = torch.where(mask, labels, 0).long()
    ce = F.cross_entropy(logits.float().reshape(B * L, V), target.reshape(B * L),
                         reduction="none").view(B, L)
    return torch.where(mask, ce, 0.0)


CROSS_ENTROPY = {"stablemax": stablemax_cross_entropy, "softmax": softmax_cross_entropy}


# -- the ACT loss --------------------------------------------------------------------------------

class ACTLoss(NamedTuple):
    total: Tensor        # scalar: lm_loss + q_weight * q_halt_loss (sums over rows)
    lm_loss: Tensor      # scalar
    lm_rows: Tensor      # [B] per-row mean cross-entropy over labelled cells
    q_halt_loss: Tensor  # scalar
    cells_right: Tensor  # [B] labelled cells predicted right
    cells: Tensor        # [B] labelled cells
    is_correct: Tensor   # [B] bool: every labelled cell right (the Q-halt target)


def act_loss(logits: Tensor, q_halt: Tensor, labels: Tensor, *, loss_type: str = "stablemax",
             q_weight: float = 0.5) -> ACTLoss:
    """The reference's loss for one supervision step. logits [B, L, V], q_halt [B] (float32
    logits of "halt: the answer is right"), labels [B, L] token ids (pad = not scored)."""
    mask = labels != IGNORE
    cells = mask.sum(-1)
    ce = CROSS_ENTROPY[loss_type](logits, labels, mask)
    lm_rows = ce.sum(-1) / cells.clamp(min=1)
    with torch.no_grad():
        cells_right = ((logits.argmax(-1) == labels) & mask).sum(-1)
        is_correct = cells_right == cells
    # The target is this step's own answer: Q learns to tell whether the answer it sits next to
    # is finished, which is what halting (and PTRM's best-Q selection) asks of it.
    q_halt_loss = F.binary_cross_entropy_with_logits(q_halt, is_correct.to(q_halt.dtype),
                                                     reduction="sum")
    lm_loss = lm_rows.sum()
    return ACTLoss(lm_loss + q_weight * q_halt_loss, lm_loss, lm_rows, q_halt_loss, cells_right,
                   cells, is_correct)
