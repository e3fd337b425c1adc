"""`ptrm eval`: PTRM vs deterministic TRM on a benchmark split."""

from __future__ import annotations

from ..errors import PtrmError


def evaluate():
    """Evaluate PTRM against deterministic TRM."""
    raise PtrmError("`ptrm eval` needs the PTRM sampler, which is not built yet")
