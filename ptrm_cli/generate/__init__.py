"""Generators of uniquely solvable puzzles for the PPBench types (docs/GENERATORS.md).

    base.py      the `Generator` interface, `Instance`, `Knobs`, per-puzzle seeding
    sat.py       SAT helpers: cardinality, lazy cuts (CEGAR), connectivity, uniqueness, clue removal
    runner.py    worker pool, resumable JSONL writer, progress, codec hand-off
    stats.py     clue statistics and difficulty of generated vs real (janko, golden) puzzles
    <type>.py    one module per puzzle type

A type module defines one `Generator` subclass; `get(name)` finds it by the module name, so a
new type is a new file plus a line in `MODULES`.
"""

from __future__ import annotations

import importlib

from ..errors import PtrmError, did_you_mean
from .base import Generator, Instance, Knobs, puzzle_rng

__all__ = ["Generator", "Instance", "Knobs", "puzzle_rng", "get", "available", "MODULES"]

#: puzzle type -> module under ptrm_cli.generate (class: the module's Generator subclass)
MODULES = ("sudoku", "lightup", "shakashaka", "nurikabe", "tapa", "heyawake", "maze")


def _load(name: str):
    try:
        module = importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as e:
        if e.name == f"{__name__}.{name}":
            return None
        raise
    for obj in vars(module).values():
        if isinstance(obj, type) and issubclass(obj, Generator) and obj is not Generator \
                and obj.name == name:
            return obj
    return None


def available() -> list[str]:
    """Puzzle types with a generator module present."""
    return [m for m in MODULES if _load(m) is not None]


def get(name: str) -> Generator:
    name = name if name in MODULES else _type_named(name)
    cls = _load(name) if name in MODULES else None
    if cls is None:
        from .. import codec as registry

        # an installed plugin type reads and solves, but generators are built in only
        plugin = " (an installed codec; generators are not plugins: docs/PLUGINS.md)" \
            if name in registry.registered() else did_you_mean([name], available(), repr)
        raise PtrmError(f"no generator for puzzle type {name!r}{plugin}",
                        hint=f"generators: {', '.join(available()) or 'none'}")
    return cls()


def _type_named(name: str) -> str:
    """The type `name` stands for as every other command reads it: a URL id ("akari") or any
    case ("Sudoku"), which `ptrm solve --codec` took and `ptrm generate` refused."""
    from .. import codec as registry

    found = registry.type_named(name)
    return found.name if found is not None else name
