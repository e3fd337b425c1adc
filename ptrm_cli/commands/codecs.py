"""`ptrm codecs`: every installed puzzle codec, found through the `ptrm.codecs` entry points."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from .. import codec as registry
from ..console import console, esc
from ..errors import CodecNotFound
from ..options import JSON


def list_codecs(
    name: str = typer.Argument(None, metavar="TYPE", show_default=False,
                               help="One type: its documentation (the input formats it reads, "
                                    "its tokens and rules), as its codec gives it."),
    as_json: bool = JSON,
):
    """List installed puzzle types: family, grid, sequence length, vocabulary, provider.

    Plugins add types through the `ptrm.codecs` entry point group (docs/PLUGINS.md).

    Examples:

        ptrm codecs
        ptrm codecs lightup
        ptrm codecs --json
    """
    if name is not None:
        _show_one(name, as_json)
        return
    rows = []
    for name, reg in registry.registered().items():
        for fam in reg.codec.families:
            rows.append({"name": name, "family": fam.name, "grid": f"{fam.rows}x{fam.cols}",
                         "seq_len": fam.seq_len, "vocab_size": len(fam.vocab),
                         "provider": reg.provider, "description": reg.codec.description})
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    if not rows:
        console.print("No codecs installed. Built-in ones come with `pip install -e .`")
        raise typer.Exit(1)
    table = Table(title="Installed puzzle codecs")
    for col in ("name", "family", "grid", "seq_len", "vocab", "provider", "description"):
        table.add_column(col, justify="right" if col in ("seq_len", "vocab") else "left")
    for i, r in enumerate(rows):  # name and description once per codec (they are its own,
        again = i and rows[i - 1]["name"] == r["name"]  # not one family's)
        table.add_row("" if again else r["name"], r["family"], r["grid"], str(r["seq_len"]),
                      str(r["vocab_size"]), r["provider"], "" if again else r["description"])
    console.print(table)


def _show_one(name: str, as_json: bool) -> None:
    """One codec's own documentation: its class docstring (else its module's), where a codec
    says how its puzzles are written (docs/PLUGINS.md asks plugins to)."""
    import inspect
    import sys

    _refuse_broken_plugin(name)
    codec = registry.get(name)  # an unknown name: one error listing the installed ones
    reg = registry.registered()[codec.name]
    cls = type(codec)
    own = cls.__dict__.get("__doc__")  # its own: inspect.getdoc would give a base class's
    doc = (inspect.cleandoc(own) if own else inspect.getdoc(sys.modules.get(cls.__module__))) \
        or "(this codec has no documentation)"
    families = [f"{f.name} ({f.rows}x{f.cols}, {len(f.vocab)} tokens)" for f in codec.families]
    if as_json:
        typer.echo(json.dumps({"name": codec.name, "description": codec.description,
                               "provider": reg.provider, "families": [f.name for f in
                                                                      codec.families],
                               "doc": doc}, indent=1))
        return
    console.print(f"[bold]{esc(codec.name)}[/]: {esc(codec.description)}", highlight=False)
    console.print(f"provider {esc(reg.provider)}; families {esc(', '.join(families))}",
                  highlight=False)
    console.print()
    console.print(esc(doc), highlight=False)


def _refuse_broken_plugin(name: str) -> None:
    """`ptrm codecs TYPE` for a type whose plugin is installed but did not load: say that, with
    the plugin and why, rather than "unknown puzzle type" and a guess at another type (whose
    documentation is not what the plugin's author asked for)."""
    failed = registry.failed_plugin(name) if registry.type_named(name) is None else None
    if failed is not None:
        ep_name, value, why = failed
        raise CodecNotFound(f"codec plugin {ep_name!r} ({value}) is installed but failed to "
                            f"load: {why}", hint="fix the plugin (docs/PLUGINS.md); `ptrm "
                            "codecs` lists the codecs that load")
