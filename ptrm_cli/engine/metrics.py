"""Choosing one answer among K rollouts, and scoring the choice.

Selectors (each returns the index of the chosen rollout per puzzle):
  best_q    the highest Q-halt logit (the paper's best-Q@K); ties go to the lowest index.
  mode      the most frequent answer (mode@K); ties go to the answer with the higher mean Q,
            then to the one first reached in rollout order.
  q_vote    the answer with the largest sum of sigmoid(Q) over the rollouts that gave it.
  verified  the highest-Q rollout among those the rules verifier accepts; best_q when none does.
Scores: pass@K (any rollout correct: the oracle ceiling), the chosen rollout's correctness,
cell accuracy, and Wilson confidence intervals for proportions.

mode, q_vote and `agreement` compare whole prediction rows, so pass rows in which positions that
are not part of the answer (label pad, e.g. sudoku's padding to 10x10) hold one constant: a
model writes untrained junk there, and two rollouts with the same answer would count as two.
"""

from __future__ import annotations

import math
import numbers

import torch

from ..errors import UsageError

SELECTORS = ("best_q", "mode", "q_vote", "verified")


def correct(preds: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Exact match on every non-pad label position. preds [..., L]; labels broadcastable to
    it, or one label per puzzle of puzzle-major preds (labels [P, L] of preds [P, K, L], for
    all K rollouts; broadcast as they were, they lined P up with K, silently wrong when
    P == K)."""
    if labels.dim() == preds.dim() - 1 and labels.shape[:-1] == preds.shape[:labels.dim() - 1]:
        labels = labels.unsqueeze(-2)
    mask = labels != 0
    return ((preds == labels) | ~mask).all(-1)


def cell_accuracy(preds: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    mask = labels != 0
    hits = ((preds == labels) & mask).sum(-1).double()  # float64: a report's shares exact
    return hits / mask.sum(-1).clamp(min=1).double()


def _answer_groups(preds: torch.Tensor):
    """For one puzzle's [K, L] predictions: group id per rollout (ids in order of first
    appearance) and the number of distinct answers."""
    uniq, inverse = torch.unique(preds, dim=0, return_inverse=True)
    # renumber groups by first appearance so ties resolve to the earliest rollout
    first = torch.full((len(uniq),), preds.shape[0], dtype=torch.long)
    first.scatter_reduce_(0, inverse, torch.arange(preds.shape[0]), reduce="amin")
    order = torch.argsort(first)
    rank = torch.empty_like(order)
    rank[order] = torch.arange(len(order))
    return rank[inverse], len(uniq)


def select(preds: torch.Tensor, q: torch.Tensor, how: str,
           valid: torch.Tensor | None = None) -> torch.Tensor:
    """Chosen rollout index per puzzle. preds [P, K, L], q [P, K], valid [P, K] bool."""
    if preds.dim() != 3 or q.shape != preds.shape[:2]:
        raise UsageError(f"select takes preds [P, K, L] and q [P, K], got "
                         f"{tuple(preds.shape)} and {tuple(q.shape)}")
    if valid is not None and (valid.shape != q.shape or valid.dtype != torch.bool):
        raise UsageError(f"select's valid must be bool [P, K] = {list(q.shape)}, got "
                         f"{valid.dtype} {list(valid.shape)}")
    if how == "best_q":
        return q.argmax(-1)  # torch.argmax returns the first maximal index
    if how == "verified":
        if valid is None:
            raise UsageError("the 'verified' selector needs the verifier's verdicts")
        masked = torch.where(valid, q, torch.full_like(q, -math.inf))
        best = masked.argmax(-1)
        # if every valid rollout has Q = -inf, argmax may land on an earlier invalid one
        missed = valid.any(-1) & ~valid.gather(-1, best[:, None]).squeeze(-1)
        best = torch.where(missed, valid.int().argmax(-1), best)
        return torch.where(valid.any(-1), best, q.argmax(-1))
    if how not in ("mode", "q_vote"):
        raise UsageError(f"unknown selector {how!r} (choose from {', '.join(SELECTORS)})")
    out = torch.empty(preds.shape[0], dtype=torch.long)
    for i in range(preds.shape[0]):
        groups, n = _answer_groups(preds[i])
        qi = q[i].float()
        if how == "mode":
            count = torch.zeros(n).scatter_add_(0, groups, torch.ones_like(qi))
            mean_q = torch.zeros(n).scatter_add_(0, groups, qi) / count
            # lexicographic (count, mean Q, -first appearance): encode as one sortable key
            best = max(range(n), key=lambda g: (count[g].item(), mean_q[g].item(), -g))
        else:
            weight = torch.zeros(n).scatter_add_(0, groups, torch.sigmoid(qi))
            best = max(range(n), key=lambda g: (weight[g].item(), -g))
        members = (groups == best).nonzero().flatten()
        out[i] = members[qi[members].argmax()]  # the group's highest-Q rollout
    return out


def agreement(preds: torch.Tensor, chosen: torch.Tensor) -> torch.Tensor:
    """How many of the K rollouts gave the same answer as the chosen one, per puzzle."""
    pick = preds[torch.arange(preds.shape[0]), chosen]  # [P, L]
    return (preds == pick[:, None, :]).all(-1).sum(-1)


def wilson(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval for a proportion (well-behaved at 0 and 1 and for small n)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(is_correct: torch.Tensor) -> torch.Tensor:
    """[P, K] bool -> [P] bool: any rollout correct."""
    return is_correct.any(-1)


def width_curve(preds: torch.Tensor, q: torch.Tensor, labels: torch.Tensor,
                ks: list[int], *, valid: torch.Tensor | None = None,
                ok: torch.Tensor | None = None, draws: int = 8,
                seed: int = 0) -> dict[int, dict[str, float]]:
    """pass@k, best-Q@k, mode@k (and verified@k) for k <= K, each averaged over `draws` random
    subsets of the K rollouts of one run (the paper's width-scaling curve). A subset keeps its
    rollouts in their original order, so the selectors' tie rules (lowest index, first reached)
    mean the same as on the full run, and k = K is exactly the full run's @K numbers. `ok`
    ([P, K]) judges each rollout (the rules verifier's `valid`, say); left out, label match."""
    P, K, _ = preds.shape
    if not all(isinstance(k, numbers.Integral) and not isinstance(k, bool) and k >= 1
               for k in ks):  # k=0 failed in argmax, "Expected reduction dim 1 to have ..."
        raise UsageError(f"width_curve's ks must be whole numbers >= 1 (got {list(ks)!r})")
    g = torch.Generator().manual_seed(seed)
    if ok is None:
        ok = correct(preds, labels[:, None, :])  # [P, K]
    out = {}
    for k in ks:
        if k > K:
            continue
        acc = {"pass": 0.0, "best_q": 0.0, "mode": 0.0}
        if valid is not None:
            acc["verified"] = 0.0
        n_draws = 1 if k == K else draws
        for _ in range(n_draws):
            if k == K:
                idx = torch.arange(K).expand(P, K)
            else:
                idx = torch.stack([torch.randperm(K, generator=g)[:k].sort().values
                                   for _ in range(P)])
            sub = torch.gather(preds, 1, idx[:, :, None].expand(-1, -1, preds.shape[2]))
            sub_q = torch.gather(q, 1, idx)
            sub_ok = torch.gather(ok, 1, idx)
            acc["pass"] += sub_ok.any(-1).double().mean().item()
            for how in ("best_q", "mode"):
                ch = select(sub, sub_q, how)
                acc[how] += sub_ok[torch.arange(P), ch].double().mean().item()
            if valid is not None:
                ch = select(sub, sub_q, "verified", torch.gather(valid, 1, idx))
                acc["verified"] += sub_ok[torch.arange(P), ch].double().mean().item()
        out[k] = {name: v / n_draws for name, v in acc.items()}
    return out
