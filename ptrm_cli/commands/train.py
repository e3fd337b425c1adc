"""`ptrm train`: the TRM training recipe."""

from __future__ import annotations

import typer

from ..errors import PtrmError


def train(config: str = typer.Argument(..., help="YAML config file.")):
    """Train a TRM."""
    raise PtrmError("`ptrm train` needs the TRM engine, which is not built yet")
