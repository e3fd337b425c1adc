"""The order training examples enter the batch (TRM_REFERENCE.md §5.1). Every rank computes the
same global batches and takes its own contiguous slice of each (train_loop.py)."""

from __future__ import annotations

import numpy as np

from ..errors import PtrmError
from .data import Split


class BatchStream:
    """An endless concatenation of epochs, cut into global batches of example indices.

    `group` sampling is the reference's (§5.1): per epoch a random order of the base puzzles
    (`puzzle` column); for each, one random augmented version, whose examples all go in, in a
    random order. The epoch's order is a pure function of (seed, epoch), so the position
    (epoch, offset) is the whole state: resuming recomputes the order and skips ahead.
    Unlike the reference, batches run on across epoch boundaries instead of dropping the
    last partial batch of every evaluation interval (a few examples per interval)."""

    def __init__(self, split: Split, batch_size: int, seed: int, sampling: str = "group"):
        self.batch_size, self.seed, self.sampling = batch_size, seed, sampling
        self.n = len(split)
        if self.n == 0:
            raise PtrmError("the training split is empty")
        self.epoch, self.offset = 0, 0
        self._cached: tuple[int, np.ndarray] | None = None
        if sampling == "group":
            puzzle = np.asarray(split.puzzle, dtype=np.int64)
            pid = np.asarray(split.puzzle_id, dtype=np.int64)
            version_key = np.stack([puzzle, np.where(pid > 0, pid, -1 - np.arange(self.n))], 1)
            versions, inverse = np.unique(version_key, axis=0, return_inverse=True)
            inverse = inverse.reshape(-1)
            self.rows = np.argsort(inverse, kind="stable")               # rows by version
            self.v_start = np.searchsorted(inverse[self.rows], np.arange(len(versions)))
            self.v_len = np.bincount(inverse, minlength=len(versions))
            groups, self.g_start = np.unique(versions[:, 0], return_index=True)
            self.g_len = np.diff(np.append(self.g_start, len(versions)))
            self.num_groups = len(groups)
            self.examples_per_epoch = self.num_groups * self.n / len(versions)
            self._one_row_versions = bool((self.v_len == 1).all())
        else:
            self.num_groups = self.n
            self.examples_per_epoch = float(self.n)

    def epoch_order(self, epoch: int) -> np.ndarray:
        rng = np.random.default_rng([self.seed, epoch])
        if self.sampling == "example":
            return rng.permutation(self.n)
        groups = rng.permutation(self.num_groups)
        offset = (rng.random(len(groups)) * self.g_len[groups]).astype(np.int64)
        pick = self.g_start[groups] + offset                       # one version per group
        if self._one_row_versions:
            return self.rows[self.v_start[pick]]
        lengths = self.v_len[pick]
        which = np.repeat(np.arange(len(pick)), lengths)
        within = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        idx = self.rows[np.repeat(self.v_start[pick], lengths) + within]
        return idx[np.argsort(which + rng.random(len(idx)), kind="stable")]  # shuffle in version

    def _order(self, epoch: int) -> np.ndarray:
        if self._cached is None or self._cached[0] != epoch:
            self._cached = (epoch, self.epoch_order(epoch))
        return self._cached[1]

    def next(self) -> np.ndarray:
        parts, need = [], self.batch_size
        while need:
            order = self._order(self.epoch)
            take = order[self.offset:self.offset + need]
            parts.append(take)
            need -= len(take)
            self.offset += len(take)
            if self.offset >= len(order):
                self.epoch, self.offset = self.epoch + 1, 0
        return np.concatenate(parts)

    def state(self) -> dict:
        return {"epoch": self.epoch, "offset": self.offset}

    def load_state(self, state: dict) -> None:
        self.epoch, self.offset = int(state["epoch"]), int(state["offset"])
