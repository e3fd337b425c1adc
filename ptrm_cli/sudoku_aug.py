"""TRM's sudoku augmentation (`shuffle_sudoku`, TRM_REFERENCE.md §5.2) and a canonical form
under the same symmetry group, so a build can keep every relabelled or shuffled copy of a test
puzzle out of train.

The group (9x9 only): relabel the digits (9!), transpose or not (2), permute the 3 bands and
the 3 rows inside each band (3! * 3!^3), the same for stacks and columns. Every element maps a
valid sudoku and its solution to a valid sudoku and its solution, and the reference draws each
factor uniformly: new cell (i, j) takes old cell (rows[i], cols[j]) of the (maybe transposed)
grid, and digit d becomes digits[d] (blank 0 stays 0). The dihedral symmetries are members
(a quarter turn = transpose + reversed stacks and columns).

`draw` + `apply` do that for n copies at once (numpy, seeded); `shuffle_sudoku` is the
reference's one-pair function with an explicit generator. `canonical` is the lexicographically
smallest row-major string over the whole group (digits renamed 1, 2, ... in order of first
appearance, blank first): equal for two puzzles exactly when one is a group image of the other.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

N = 9
#: number of distinct arrangements (relabelling x transpose x row and column shuffles)
GROUP_ORDER = math.factorial(9) * 2 * 6 ** 8
#: `transform.npy` value of a row made with a random group element (not a dihedral number):
#: the row's tokens are the whole story, it cannot be rebuilt from puzzles.jsonl
TRANSFORM_ID = 255
#: candidates one step of `canonical` may weigh before it gives up: an almost empty grid, whose
#: arrangements all tie, would take minutes. Real puzzles stay far below (measured: at most
#: 7,776 over 1,500 17-clue puzzles, 5,184 over 1,500 forum-hardest ones)
MAX_CANDIDATES = 200_000


@dataclass
class Transforms:
    """n elements of the group, as the reference builds them."""

    digits: np.ndarray     # [n, 10] int: digits[k, d] = new digit of d; digits[k, 0] = 0
    transpose: np.ndarray  # [n] bool: transpose first
    rows: np.ndarray       # [n, 9] int: new row i takes old row rows[k, i]
    cols: np.ndarray       # [n, 9] int: new column j takes old column cols[k, j]

    def __len__(self) -> int:
        return len(self.transpose)


def identity(n: int = 1) -> Transforms:
    return Transforms(np.tile(np.arange(10), (n, 1)), np.zeros(n, bool),
                      np.tile(np.arange(N), (n, 1)), np.tile(np.arange(N), (n, 1)))


def _band_perms(rng: np.random.Generator, n: int) -> np.ndarray:
    """[n, 9]: shuffle the 3 bands, and the 3 lines inside each band independently."""
    bands = np.argsort(rng.random((n, 3)), axis=1)
    inside = np.argsort(rng.random((n, 3, 3)), axis=2)
    return (bands[:, :, None] * 3 + inside).reshape(n, N)


def draw(rng: np.random.Generator, n: int) -> Transforms:
    """n uniform random group elements (each factor uniform, as `shuffle_sudoku` draws them)."""
    perm = rng.permuted(np.tile(np.arange(1, 10), (n, 1)), axis=1)
    digits = np.concatenate([np.zeros((n, 1), perm.dtype), perm], axis=1)
    transpose = rng.random(n) < 0.5
    return Transforms(digits, transpose, _band_perms(rng, n), _band_perms(rng, n))


def concat(*parts: Transforms) -> Transforms:
    return Transforms(*(np.concatenate([getattr(p, f) for p in parts])
                        for f in ("digits", "transpose", "rows", "cols")))


def apply(grid, tf: Transforms) -> np.ndarray:
    """One [9, 9] grid of 0..9 -> [n, 9, 9], one image per element of `tf`."""
    g = np.asarray(grid).reshape(N * N)
    r, c = tf.rows[:, :, None], tf.cols[:, None, :]
    idx = np.where(tf.transpose[:, None, None], c * N + r, r * N + c)  # [n, 9, 9]
    values = g[idx].reshape(len(tf), N * N).astype(np.int64)
    return np.take_along_axis(tf.digits, values, axis=1).reshape(len(tf), N, N)


def shuffle_sudoku(board, solution, rng: np.random.Generator):
    """The reference augmentation for one (board, solution) pair of [9, 9] grids (0 = blank):
    one random group element applied to both."""
    tf = draw(rng, 1)
    return apply(board, tf)[0], apply(solution, tf)[0]


def is_valid_solution(grid) -> bool:
    """Every row, column and box of a [9, 9] grid holds 1..9 once."""
    g = np.asarray(grid).reshape(N, N)
    full = np.arange(1, 10)
    boxes = g.reshape(3, 3, 3, 3).swapaxes(1, 2).reshape(N, N)
    return all((np.sort(a, axis=1) == full).all() for a in (g, g.T, boxes))


# -- canonical form -------------------------------------------------------------------------------

def _line_perms() -> np.ndarray:
    """The 1296 band-respecting permutations of 9 lines (stacks, then lines inside each)."""
    p3 = list(itertools.permutations(range(3)))
    return np.array([[s[i] * 3 + inner[i][j] for i in range(3) for j in range(3)]
                     for s in p3 for inner in itertools.product(p3, repeat=3)], dtype=np.int64)


_COLPERMS = _line_perms()                                   # [1296, 9]
_POW = 10 ** np.arange(8, -1, -1, dtype=np.int64)           # a row of labels 0..9 -> one integer
_BITS = 1 << np.arange(8, -1, -1)                           # column 0 = most significant bit
#: _MASKPERM[m, g]: the clue mask m of one row (bit per column) after column permutation g
_MASKPERM = (((np.arange(512)[:, None] & _BITS) > 0)[:, _COLPERMS] * _BITS).sum(-1)


def canonical(clues) -> str:
    """The smallest row-major string ('.' blank, digits renamed 1, 2, ... by first appearance)
    over the whole group: the puzzle's identity up to relabelling, transpose and band/stack and
    row/column shuffles. Raises ValueError for a grid too empty to canonicalise.

    The search builds the result one row at a time, keeping every (transpose, rows so far,
    column permutation, renaming) that ties for the smallest prefix, so it is exact. Row 0
    needs no renaming state: a row's digits are distinct, so its renamed form is 1, 2, ... at
    its clue positions and the smallest row is the clue mask with the smallest binary value
    (column 0 most significant), read from a table of all masks under all column orders."""
    g = np.asarray(clues, dtype=np.int64).reshape(N, N)
    if g.min() < 0 or g.max() > 9:
        raise ValueError("sudoku digits must be 0..9")
    A = np.stack([g, g.T])                                  # [2, 9, 9]: both transposes
    first = _MASKPERM[((A > 0) * _BITS).sum(-1)]            # [2, 9 rows, 1296 column orders]
    t, r, gamma = np.nonzero(first == first.min())
    rows = A[t, r][np.arange(len(t))[:, None], _COLPERMS[gamma]]
    out = np.where(rows > 0, np.cumsum(rows > 0, axis=1), 0)
    names = np.zeros((len(t), 10), np.int64)                # original digit -> new name (0: none)
    names[np.arange(len(t))[:, None], rows] = out
    names[:, 0] = 0
    next_name = (rows > 0).sum(1) + 1
    used = np.zeros((len(t), N), bool)
    used[np.arange(len(t)), r] = True
    band = r // 3
    result = [out[0]]
    flat = A.reshape(2, N * N)
    for k in range(1, N):
        if k % 3 == 0:  # a new band: any row of a band not used yet
            allowed = np.repeat(~used.reshape(-1, 3, 3).any(axis=2), 3, axis=1)
        else:           # the rest of the current band
            allowed = np.zeros_like(used)
            np.put_along_axis(allowed, band[:, None] * 3 + np.arange(3), True, axis=1)
            allowed &= ~used
        ci, rr = np.nonzero(allowed)
        if len(ci) > MAX_CANDIDATES:
            raise ValueError(f"too few givens ({int((g > 0).sum())}) or too much symmetry "
                             "to canonicalise")
        vals = flat[t[ci][:, None], rr[:, None] * N + _COLPERMS[gamma[ci]]]
        nm = names[ci]
        ar = np.arange(len(ci))[:, None]
        known = nm[ar, vals]
        new = (vals > 0) & (known == 0)                     # distinct in a row: rank = new name
        o = np.where(new, next_name[ci][:, None] + np.cumsum(new, axis=1) - 1, known)
        key = o @ _POW
        keep = np.nonzero(key == key.min())[0]
        ci, rr, o, nm, new = ci[keep], rr[keep], o[keep], nm[keep], new[keep]
        nm[np.arange(len(ci))[:, None], vals[keep]] = o
        nm[:, 0] = 0
        names, next_name = nm, next_name[ci] + new.sum(1)
        t, gamma = t[ci], gamma[ci]
        used = used[ci]
        used[np.arange(len(ci)), rr] = True
        band = rr // 3
        result.append(o[0])
    return "".join("." if v == 0 else str(v) for v in np.concatenate(result).tolist())
