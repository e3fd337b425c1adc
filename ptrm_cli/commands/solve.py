"""`ptrm solve`: one puzzle, K noisy rollouts, the verified best answer."""

from __future__ import annotations

import typer

from ..errors import PtrmError


def solve(input: str = typer.Argument(..., help="Puzzle file, puzz.link URL, or - for stdin.")):
    """Solve one puzzle with PTRM."""
    raise PtrmError("`ptrm solve` needs the PTRM sampler, which is not built yet")
