"""`ptrm codecs`: every installed puzzle codec, found through the `ptrm.codecs` entry points."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from .. import codec as registry
from ..console import console
from ..options import JSON


def list_codecs(as_json: bool = JSON):
    """List installed puzzle types: family, grid, sequence length, vocabulary, provider.

    Plugins add types through the `ptrm.codecs` entry point group (docs/PLUGINS.md).

    Examples:

        ptrm codecs
        ptrm codecs --json
    """
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
