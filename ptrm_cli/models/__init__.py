"""Models that ship inside the package.

`ptrm_cli/models/default/` (model.safetensors + config.json) is the bundled PPBench model that
`ptrm solve` and `ptrm eval` use when no --checkpoint is given (docs/TRAINING.md says how it
was trained). An installation without it has no default, and the commands ask for --checkpoint.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_DIR = Path(__file__).resolve().parent / "default"
FILES = ("model.safetensors", "config.json")


def default_checkpoint() -> Path | None:
    """The bundled checkpoint folder, or None while the package ships without one."""
    if all((DEFAULT_DIR / name).is_file() for name in FILES):
        return DEFAULT_DIR
    return None
