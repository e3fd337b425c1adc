"""`ptrm convert`: turn an official TRM `step_N` checkpoint into a ptrm checkpoint directory."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from ..console import console
from ..errors import PtrmError
from ..options import JSON


def _parse_settings(items: list[str]) -> dict:
    """KEY=VALUE pairs; values read as YAML scalars, so 3 -> int, true -> bool, rope -> str."""
    import yaml

    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PtrmError(f"--set {item!r}: expected KEY=VALUE, e.g. --set L_cycles=6")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            out[key.strip()] = value
    return out


def _family_vocab(name: str):
    """The vocabulary of an installed codec family, by name."""
    from .. import codec as registry

    families = {f.name: f for reg in registry.registered().values() for f in reg.codec.families}
    if name not in families:
        raise PtrmError(f"--family {name!r}: no installed codec has that family "
                        f"(known: {', '.join(sorted(families))})")
    return families[name].vocab


def convert(
    step_file: Path = typer.Argument(..., help="Official TRM checkpoint file (step_N)."),
    out: Path = typer.Option(..., "--out", "-o", help="Checkpoint directory to write."),
    config: Path = typer.Option(None, "--config",
                                help="The run's all_config.yaml (default: the one next to "
                                     "STEP_FILE, if there is one)."),
    settings: list[str] = typer.Option([], "--set",
                                       help="Model setting KEY=VALUE the weights do not reveal, "
                                            "e.g. --set L_cycles=6 (repeatable)."),
    family: str = typer.Option(None, "--family",
                               help="Attach this token family's vocabulary (e.g. sudoku-native, "
                                    "maze, arc; see `ptrm codecs`) so the codecs accept the "
                                    "model. Without it the model gets a generic table."),
    as_json: bool = JSON,
):
    """Import an official TRM checkpoint and write it in ptrm's safetensors format."""
    from ..engine.checkpoint import import_official, save_checkpoint
    from ..engine.model import count_parameters

    vocab = _family_vocab(family) if family else None
    model, vocab, meta = import_official(step_file, config_yaml=config, vocab=vocab,
                                         **_parse_settings(settings))
    save_checkpoint(out, model, vocab, meta)
    cfg = model.config.to_dict()
    if as_json:
        typer.echo(json.dumps({"out": str(out), "model": cfg, "vocab": vocab.family,
                               "parameters": count_parameters(model), "meta": meta}, indent=1))
        return
    table = Table(title=f"{step_file} -> {out}")
    table.add_column("setting")
    table.add_column("value", justify="right")
    table.add_column("from")
    given = meta["given"]
    for key, value in cfg.items():
        origin = ("weights" if key in meta["inferred_from_weights"] and key not in given
                  else given.get(key, "default"))
        table.add_row(key, str(value), origin)
    console.print(table)
    console.print(f"{count_parameters(model):,} parameters, vocabulary {vocab.family!r} "
                  f"({len(vocab)} tokens)")
