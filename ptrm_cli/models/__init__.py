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


def default_card() -> tuple[str, dict] | None:
    """(token family, meta) of the bundled model, from its config.json read as plain JSON: no
    torch, so that `ptrm codecs TYPE` can say cheaply where the model stands on a type (meta
    holds `trained_on` and the validation scores `val`). None without a bundled model, or when
    its config.json does not read (loading it for a solve says why)."""
    import json

    root = default_checkpoint()
    if root is None:
        return None
    try:
        doc = json.loads((root / "config.json").read_text())
        family, meta = doc["vocab"]["family"], doc.get("meta") or {}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return (family, meta) if isinstance(family, str) and isinstance(meta, dict) else None


def not_for(name: str, model_family: str, codec_families: list[str]) -> str:
    """Why the bundled model cannot solve a type: its token family is not one the type is
    encoded in (`ptrm codecs TYPE` and `ptrm solve` say it alike)."""
    own = ", ".join(codec_families)
    own = f"the {own} famil{'ies' if len(codec_families) > 1 else 'y'}"
    return (f"the bundled model does not solve {name} puzzles (it reads the {model_family} "
            f"token family, and {name} is encoded in {own})")
