"""Options shared by several commands, defined once."""

from __future__ import annotations

import re

import typer

DEVICE = typer.Option("auto", "--device", help="auto | cpu | cuda | cuda:N | mps")
SEED = typer.Option(0, "--seed", min=0, help="Random seed: the same seed gives the same result.")
JSON = typer.Option(False, "--json", help="Print machine-readable JSON instead of tables.")


def resolve_device(name: str) -> str:
    """'auto' -> cuda if available, else mps, else cpu; anything else is checked."""
    import torch

    from .errors import PtrmError

    if name == "auto":
        if torch.cuda.is_available():
            return "cuda"
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            return "mps"
        return "cpu"
    if not re.fullmatch(r"cpu|mps|cuda(:\d+)?", name):
        raise PtrmError(f"--device {name!r}: expected auto, cpu, cuda, cuda:N or mps")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise PtrmError(f"--device {name}: no CUDA device is available here",
                            hint="use --device cpu")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise PtrmError(f"--device {name}: this machine has {torch.cuda.device_count()} "
                            f"CUDA device(s), numbered from 0")
    if name == "mps" and not (getattr(torch.backends, "mps", None)
                              and torch.backends.mps.is_available()):
        raise PtrmError("--device mps: MPS is not available here", hint="use --device cpu")
    return name


def type_list(text: str | None) -> list[str] | None:
    """`--types tapa,nurikabe` -> ['tapa', 'nurikabe']; left out (or '') -> None, every type.
    Commas with no name between them (`--types ,`) name nothing: an error, not an empty
    selection that would skip every puzzle."""
    from .errors import PtrmError

    if not text:
        return None
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise PtrmError(f"--types {text!r} names no puzzle type",
                        hint="e.g. --types tapa,nurikabe; leave it out for every type")
    return names
