"""`ptrm convert`: turn an official TRM `step_N` checkpoint into a ptrm checkpoint directory."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from ..atomic import exclusive, refuse_file
from ..console import console, err_console, esc
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


def _families() -> dict:
    """The installed codec families, by name."""
    from .. import codec as registry

    return {f.name: f for f in registry.families()}


def _family(name: str):
    """An installed codec family, by name."""
    families = _families()
    if name not in families:
        raise PtrmError(f"--family {name!r}: no installed codec has that family "
                        f"(known: {', '.join(sorted(families))})")
    return families[name]


def convert(
    step_file: Path = typer.Argument(..., help="Official TRM checkpoint file (step_N)."),
    out: Path = typer.Option(..., "--out", "-o", help="Checkpoint directory to write."),
    config: Path = typer.Option(None, "--config",
                                help="The run's all_config.yaml (default: the one next to "
                                     "STEP_FILE, if there is one)."),
    settings: list[str] = typer.Option([], "--set", metavar="KEY=VALUE",
                                       help="Model setting KEY=VALUE the weights do not reveal, "
                                            "e.g. --set L_cycles=6 (repeatable)."),
    family: str = typer.Option(None, "--family",
                               help="Attach this token family's vocabulary (e.g. sudoku-native, "
                                    "maze, arc; see `ptrm codecs`) so the codecs accept the "
                                    "model; its sequence length is the default seq_len. "
                                    "Without it the model gets a generic table."),
    identifiers: Path = typer.Option(None, "--identifiers",
                                     show_default="identifiers.json next to STEP_FILE or in "
                                                  "the run's dataset folder, if any",
                                     help="The run dataset's identifiers.json (names of the "
                                          "puzzle-embedding rows; TRM's ARC builder writes "
                                          "it), stored with the checkpoint so `ptrm solve "
                                          "--task` and `ptrm eval` find each task's rows."),
    as_json: bool = JSON,
):
    """Import an official TRM checkpoint and write it in ptrm's safetensors format.

    Settings the weights do not reveal come from the run's all_config.yaml (the one beside
    STEP_FILE by default) or --set.

    Examples:

        ptrm convert path/to/step_N --family sudoku-native -o ckpt/sudoku
        ptrm convert path/to/step_N --config all_config.yaml -o ckpt/mine
    """
    from ..engine.checkpoint import import_official, save_checkpoint
    from ..engine.model import count_parameters

    given = _parse_settings(settings)
    # an --out that cannot be a folder is said before the work, not after it
    refuse_file(out, hint="a checkpoint is a folder: give its path (it is created, or "
                          "replaced whole)")
    if (out / "train_state.json").is_file():  # replacing it whole would lose what --resume needs
        raise PtrmError(f"{out} is a training checkpoint (its train_state.json, optimizer and "
                        "carry are what --resume continues from); converting into it would "
                        "replace them", hint="give --out a new folder")
    replacing = (out / "config.json").is_file()
    layout = None
    if family:  # its table, and its length where nothing else says it: what its codec feeds
        fam = _family(family)
        layout = lambda V: (fam.seq_len, f"family {fam.name}")  # noqa: E731
    model, vocab, meta = import_official(step_file, config_yaml=config, layout=layout, **given)
    if family:  # the weights fix the vocabulary size: say which families have it
        V = model.config.vocab_size
        if len(fam.vocab) != V:
            fits = sorted(f.name for f in _families().values() if len(f.vocab) == V)
            raise PtrmError(f"--family {fam.name}: its vocabulary has {len(fam.vocab)} tokens, "
                            f"but the model in {step_file} has {V} (vocab_size of its weights)",
                            hint=f"the installed families with {V} tokens: {', '.join(fits)}"
                            if fits else f"no installed family has {V} tokens; without --family "
                            f"the model gets a generic trm-v{V} table")
        vocab = fam.vocab
    if family and model.config.seq_len != fam.seq_len:
        raise PtrmError(f"{step_file}: the model reads {model.config.seq_len} tokens but the "
                        f"{fam.name!r} family lays out {fam.seq_len} "
                        f"({meta['given'].get('seq_len', 'weights')} says {model.config.seq_len})",
                        hint="pick the family of the run's dataset (see `ptrm codecs`)")
    ids = _identifiers(step_file, model, vocab, meta, identifiers)
    if ids is not None:
        meta["identifiers_from"] = ids.source
    # one writer per folder; an unwritable place is one line, not a traceback
    with exclusive(out, "convert --out"):
        save_checkpoint(out, model, vocab, meta, identifiers=ids.names if ids else None)
    if replacing:
        err_console.print(f"[dim]replaced the checkpoint that was in {esc(out)}[/]",
                          highlight=False, soft_wrap=True)
    cfg = model.config.to_dict()
    rows = model.config.num_puzzle_identifiers
    if as_json:
        # "model" has the shape of eval's and bench's reports: {"config", "parameters"}
        typer.echo(json.dumps({"out": str(out), "model": {"config": cfg, "parameters":
                                                          count_parameters(model)},
                               "family": vocab.family, "meta": meta,
                               "identifiers": None if ids is None else
                               {"from": ids.source, "names": len(ids),
                                "tasks": len(ids.tasks())}}, indent=1))
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
    if ids is not None:
        console.print(f"identifiers: {len(ids):,} names for {len(ids.tasks()):,} tasks, "
                      f"from {ids.source}", highlight=False)
    elif rows > 1:
        console.print(f"[yellow]no identifiers attached[/]: the model has {rows:,} per-puzzle "
                      f"embeddings, and without their names no task can be mapped to them "
                      f"(pass --identifiers PATH/identifiers.json)", highlight=False)


def _identifiers(step_file: Path, model, vocab, meta: dict, explicit: Path | None):
    """The identifier table to store: the given file, else one found next to the step file or
    in the run's dataset folder (arc_ids.own_table), checked against the model's rows."""
    from .. import arc_ids
    from ..solver import LoadedModel

    if explicit is not None:
        return arc_ids.read_table(explicit, model.config.num_puzzle_identifiers)
    if not arc_ids.has_table(model.config):
        return None
    try:
        return arc_ids.own_table(LoadedModel(model, vocab, meta, str(step_file), "cpu"))
    except PtrmError as e:  # a file found, not given: say so, and how to give the right one
        raise PtrmError(f"{e} (found by itself, as the run's identifiers.json)",
                        hint="pass --identifiers FILE: the identifiers.json of the dataset the "
                             "model was trained on") from None
