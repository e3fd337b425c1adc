"""The 8 symmetries of a square grid, numbered as in TRM's dataset code.

0 identity, 1 rot90, 2 rot180, 3 rot270 (counter-clockwise, as `np.rot90`), 4 flip left-right,
5 flip up-down, 6 transpose, 7 anti-transpose (= flip left-right of rot90).
Codecs use `apply` for cell grids and `map_cell` for coordinates; what a symmetry does to
direction-carrying values (triangles, walls) is each codec's business.
"""

from __future__ import annotations

import numpy as np

COUNT = 8
NAMES = ("id", "rot90", "rot180", "rot270", "fliplr", "flipud", "transpose", "antitranspose")
INVERSE = (0, 3, 2, 1, 4, 5, 6, 7)


def apply(grid: np.ndarray, t: int) -> np.ndarray:
    """Transform the first two axes of `grid` by symmetry `t`."""
    if t == 0:
        return grid.copy()
    if t in (1, 2, 3):
        return np.rot90(grid, t).copy()
    if t == 4:
        return np.fliplr(grid).copy()
    if t == 5:
        return np.flipud(grid).copy()
    if t == 6:
        return np.swapaxes(grid, 0, 1).copy()
    if t == 7:
        return np.fliplr(np.rot90(grid, 1)).copy()
    raise ValueError(f"dihedral transform must be 0..7, got {t}")


def map_cell(r: int, c: int, rows: int, cols: int, t: int) -> tuple[int, int]:
    """Where cell (r, c) of a rows x cols grid lands under symmetry `t`."""
    probe = np.zeros((rows, cols), dtype=bool)
    probe[r, c] = True
    (nr,), (nc,) = np.nonzero(apply(probe, t))
    return int(nr), int(nc)


def shape(rows: int, cols: int, t: int) -> tuple[int, int]:
    return (cols, rows) if t in (1, 3, 6, 7) else (rows, cols)
