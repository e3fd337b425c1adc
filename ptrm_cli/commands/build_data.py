"""`ptrm build-data`: the paper's dataset recipe."""

from __future__ import annotations

import typer

from ..errors import PtrmError


def build_data(source: str = typer.Argument(..., help="Folder of source files.")):
    """Build a dataset from PPBench JSONL and other sources."""
    raise PtrmError("`ptrm build-data` is not built yet")
