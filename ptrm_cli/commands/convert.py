"""`ptrm convert`: turn an official TRM `step_N` checkpoint into a ptrm checkpoint directory."""

from __future__ import annotations

import json
import re
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
            raise PtrmError(f"--set {item!r}: expected KEY=VALUE, e.g. --set L_cycles=6",
                            hint="one setting per --set, its value after '=': --set "
                                 "L_cycles=6 --set seq_len=81")
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
    from .. import codec as registry

    families = _families()
    if name not in families:
        known = ", ".join(sorted(families))
        typed = registry.type_named(name)  # a type's name (`--family sudoku`), not a family's
        if typed is not None:
            own = [f.name for f in typed.families]
            raise PtrmError(f"--family {name!r} is a puzzle type, not a token family; "
                            f"{typed.name}'s families: {', '.join(own)}",
                            hint=f"pass one of them, e.g. --family {own[-1]} (the family of "
                                 "the run's dataset; `ptrm codecs` lists each type's)")
        raise PtrmError(f"--family {name!r}: no installed codec has that family "
                        f"(known: {known})",
                        hint="`ptrm codecs` lists the families (its family column); a plugin "
                             "adds its own when installed")
    return families[name]


#: what STEP_FILE is, for the hints of the errors that come from reading it
STEP_HINT = ("STEP_FILE is the step_N file an official TRM run saves in its checkpoint folder "
             "(torch.save of the model's state_dict)")


def _refuse_puzzle(step_file: Path) -> None:
    """A puzzle given as STEP_FILE (a puzz.link URL, a puzzle file): `ptrm convert` imports
    model checkpoints, not puzzles, and the reader's own words ("no such file" for a URL,
    mangled to `https:/...` by the path; "not a file written by torch.save") did not say so."""
    from .. import codec as registry

    shown = re.sub(r"^(https?):/(?!/)", r"\1://", str(step_file))  # Path drops one '/'
    hint = ("`ptrm convert` imports an official TRM checkpoint (a model), it does not convert "
            "puzzles; `ptrm solve` reads a puzzle in any of its forms (URL, pzprv3, plain "
            "grid), and `ptrm codecs TYPE` shows them")
    if not step_file.exists():
        if re.match(r"^https?://", shown) or re.match(r"^[^/]*\?[A-Za-z0-9_]+/", shown):
            raise PtrmError(f"{shown}: a puzzle URL, not a checkpoint file", hint=hint)
        return
    if not step_file.is_file():
        return
    try:
        with open(step_file, "rb") as f:
            head = f.read(1 << 16)
    except OSError:
        return  # the reader says what is wrong with it
    if not head or head.startswith((b"PK", b"\x80")) or b"\x00" in head:
        return  # a torch.save file (zip or pickle) or binary: the reader judges it
    try:
        text = head.decode("utf-8-sig")
        found = registry.detect(text, source=str(step_file))
    except (PtrmError, UnicodeDecodeError):
        return
    raise PtrmError(f"{step_file} is a {found.name} puzzle, not an official TRM checkpoint",
                    hint=hint)


def _import_hint(e: PtrmError, config: Path | None) -> str:
    """A hint for an error of `import_official` that came without one."""
    message = str(e)
    if "(from --set)" in message:
        return ("give each --set the value the official run used: its all_config.yaml "
                "(`arch:` section) has them")
    # "CONFIG: line 2 ..." or "CONFIG is not a TRM run config" (that one had the STEP_FILE hint)
    if config is not None and re.match(rf"{re.escape(str(config))}[: ]", message):
        return ("--config takes the run's all_config.yaml, which TRM writes beside its "
                "step_N files")
    return STEP_HINT


def convert(
    step_file: Path = typer.Argument(..., metavar="STEP_FILE", help="Official TRM checkpoint file (step_N)."),
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
    _refuse_puzzle(step_file)
    # an --out that cannot be a folder is said before the work, not after it
    if out.name in ("", ".", ".."):  # the folder one is in or above it: the swap would replace
        # it from under them (it was a ValueError traceback, as in build-data)
        raise PtrmError(f"--out {out}: name the checkpoint folder, not '.', '..' or '/'",
                        hint="e.g. --out ../NAME to replace the checkpoint you are in")
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
    try:
        model, vocab, meta = import_official(step_file, config_yaml=config, layout=layout,
                                             **given)
    except PtrmError as e:  # every mistake here gets its hint, as the README promises
        if e.hint is None:
            e.hint = _import_hint(e, config)
        raise
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
                        f"({_said(meta['given'].get('seq_len', 'weights'))} says "
                        f"{model.config.seq_len})",
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
                  else _said(given.get(key, "default")))
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


def _said(origin: str) -> str:
    """Where a setting came from, as the user gave it: the meta's "override" is a --set (the
    table and a message said "override", a word the user never typed)."""
    return "--set" if origin == "override" else origin


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
