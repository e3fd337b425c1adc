"""`ptrm codecs`: every installed puzzle codec, found through the `ptrm.codecs` entry points."""

from __future__ import annotations

import json

import typer
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from .. import codec as registry
from .. import codec_page as page
from ..console import console, err_console, esc
from ..errors import CodecNotFound, PtrmError
from ..options import JSON


def list_codecs(
    name: str = typer.Argument(None, metavar="TYPE", show_default=False,
                               help="One type: its rules, the inputs it reads with an example, "
                                    "what the answer's symbols mean and how the bundled model "
                                    "does on it, as its codec gives them."),
    dev: bool = typer.Option(False, "--dev",
                             help="With TYPE: also the codec's developer notes (every input "
                                  "symbol, Puzzle.clues, tokens, verifier codes)."),
    as_json: bool = JSON,
):
    """List installed puzzle types: family, grid, sequence length, vocabulary, provider.

    Plugins add types through the `ptrm.codecs` entry point group (docs/PLUGINS.md).

    Examples:

        ptrm codecs
        ptrm codecs lightup
        ptrm codecs lightup --dev
        ptrm codecs --json
    """
    if name is not None:
        _show_one(name, as_json, dev)
        return
    if dev:
        raise PtrmError("--dev applies to one type: ptrm codecs TYPE --dev",
                        hint="name the type, e.g. ptrm codecs sudoku --dev; ptrm codecs "
                             "lists the types")
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


def _show_one(name: str, as_json: bool, dev: bool) -> None:
    """One type's page, for a user first: what the puzzle is, the inputs with an example, what
    the answer's values mean, the bundled model's standing; then, with --dev (or when the codec
    gives none of that), its docstring, where the codec documents itself for developers."""
    _refuse_broken_plugin(name)
    codec = registry.get(name)  # an unknown name: one error listing the installed ones
    reg = registry.registered()[codec.name]
    try:
        example = page.example_of(codec)
    except registry.CodecBug as e:  # the rest of the page still helps
        err_console.print(f"[yellow]warning:[/] {esc(e)}", highlight=False, soft_wrap=True)
        example = None
    doc = page.docstring(codec) or "(this codec has no documentation)"
    if as_json:
        typer.echo(json.dumps({"name": codec.name, "description": codec.description,
                               "provider": reg.provider, "families": [f.name for f in
                                                                      codec.families],
                               **page.as_json(codec, example), "doc": doc}, indent=1))
        return
    console.print(f"[bold]{esc(codec.name)}[/]: {esc(codec.description)}", highlight=False)
    if rules := registry.rules_of(codec):
        _section("Rules", rules)
    _section("Input", None, "`ptrm solve` reads any of these: a file, a pipe (-) or the text "
                            "itself")
    _show_inputs(codec, example)
    legend = registry.legend_of(codec)
    width = max(len(str(v)) for v in legend)
    _section("Answer", "\n".join(f"{v:>{width}}  {m}" for v, m in legend.items()),
             "what each value of the answer grid means; `--json` gives the grid as "
             "solution.grid and this as solution.legend", prose=False)
    if (standing := page.model_standing(codec)) is not None:
        _section("Bundled model", standing)
    if dev or not (rules or example):  # a codec that says nothing else: its docstring
        families = ", ".join(f"{f.name} ({f.rows}x{f.cols}, {len(f.vocab)} tokens)"
                             for f in codec.families)
        facts = (f"provider {reg.provider}, entry point {reg.entry_point}\nfamilies {families}"
                 f"\nurl_ids {', '.join(codec.url_ids) or 'none'}\nmethods it writes beyond "
                 f"the required ones: {', '.join(page.own_members(codec)) or 'none'}")
        _section("Developer notes", f"{facts}\n\n{doc}", prose=False)
    else:
        console.print(f"\n[dim]provider {esc(reg.provider)} · every input symbol, "
                      f"Puzzle.clues, tokens and verifier codes: ptrm codecs "
                      f"{esc(codec.name)} --dev[/]", highlight=False)


def _section(title: str, body: str | None, note: str | None = None, *,
             prose: bool = True) -> None:
    """A bold title (with a note beside it), then its text indented under it: prose wrapped
    to the terminal, anything else (a table, a docstring) line for line."""
    console.print()
    console.print(f"[bold]{esc(title)}[/]" + (f": {esc(note)}" if note else ""),
                  highlight=False)
    if body is None:
        return
    if prose:
        console.print(Padding(Text(body), (0, 0, 0, 2), expand=False), highlight=False)
    else:
        console.print(Text("\n".join(f"  {line}".rstrip() for line in body.splitlines())),
                      highlight=False, soft_wrap=True)


def _show_inputs(codec, example) -> None:
    """The input forms, each with the codec's example written in it exactly as the codec
    writes it (no padding added: spaces are cells in a maze); the example's own form is drawn
    beside it, as `ptrm solve` draws the puzzle."""
    if example is None:
        ids = ", ".join(f"?{i}/..." for i in codec.url_ids)
        console.print(Padding(Text((f"puzz.link URLs ({ids}), and " if ids else "") +
                                   f"the forms the codec's notes give (ptrm codecs "
                                   f"{codec.name} --dev)"), (0, 0, 0, 2), expand=False))
        return
    for form, text in example.forms.items():
        console.print(Text("  " + page.form_name(form), style="italic"))
        shown = Text("\n".join("    " + line for line in text.splitlines()))
        drawn = _drawn(codec, example.puzzle) if form == example.own else None
        if drawn is not None:
            beside = Table.grid(padding=(0, 6))
            beside.add_row(shown, drawn)
            shown = beside
        console.print(shown, highlight=False, soft_wrap=drawn is None)


def _drawn(codec, puzzle):
    """The codec's drawing of the puzzle, or None: on this page it is an aid, so a render
    that breaks leaves the text alone, with a warning (a plugin's author saw the page without
    its drawing and no word of why)."""
    try:
        with registry.contract(codec, "render"):
            drawn = codec.render(puzzle)
        why = registry.render_problem("render", drawn)
        why = None if why is None else str(registry.bug(codec, why))
    except registry.CodecBug as e:
        why = str(e)
    if why is None:
        return drawn
    err_console.print(f"[yellow]warning:[/] {esc(why)} (the example is shown as text only)",
                      highlight=False, soft_wrap=True)
    return None


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
