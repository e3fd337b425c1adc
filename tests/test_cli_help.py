"""`--help` of every command: it runs, and prose paragraphs are reflowed (Typer keeps a
docstring's source line breaks, which cut sentences mid-line)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from ptrm_cli.app import _reflow, app

COMMANDS = ("solve", "eval", "build-data", "train", "codecs", "generate", "convert", "bench")


def test_reflow_joins_prose_and_keeps_indented_blocks():
    doc = """First line.

    A paragraph that goes on
    over two lines.

        ptrm solve x.txt
        ptrm eval
    """
    assert _reflow(doc).split("\n\n") == [
        "First line.", "A paragraph that goes on over two lines.",
        "    ptrm solve x.txt\n    ptrm eval"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command):
    result = CliRunner().invoke(app, [command, "--help"], env={"TERMINAL_WIDTH": "200"})
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output and f" {command} " in result.output
    if command == "generate":  # a sentence that spans two source lines comes out whole
        assert "--workers, and an interrupted run" in result.output
    # typer 0.29 labelled flags "<bool>" and repeatable options "<list[str]>" (app._shown_type)
    assert "<bool>" not in result.output and "<list[" not in result.output
    # arguments in capitals, as the README and the examples write them (typer 0.29 showed the
    # parameter's own name: "ptrm solve [OPTIONS] {input}")
    usage = next(ln for ln in result.output.splitlines() if "Usage:" in ln)
    assert not any(ch.islower() for ch in usage.split("[OPTIONS]", 1)[1]), usage


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_that_takes_a_value_says_what(command):
    """A repeatable option shows no type (`_shown_type`), so it needs a metavar: eval's
    --sigma-from showed an empty column where the others show <str> or REPORT."""
    import typer
    from typer.core import TyperOption  # typer 0.29's own click, not the click package's

    sub = typer.main.get_command(app).commands[command]
    ctx = sub.make_context(command, [], resilient_parsing=True)
    bare = [p.opts[0] for p in sub.params if isinstance(p, TyperOption) and not p.is_flag
            and not (p.metavar or p.display_type_rich(ctx))]
    assert not bare, bare


@pytest.mark.parametrize("command", COMMANDS)
def test_every_commands_examples_parse(command):
    """Each command's --help shows examples, and every one of them is accepted by the command's
    own parser (options that exist, values of the right type): examples that cannot rot."""
    import shlex

    import typer

    result = CliRunner().invoke(app, [command, "--help"], env={"TERMINAL_WIDTH": "200"})
    assert "Examples:" in result.output
    sub = typer.main.get_command(app).commands[command]
    # from the help text itself: the rendering wraps long lines at the terminal's width
    lines = [ln.strip() for ln in sub.help.splitlines()]
    examples = [shlex.split(ln) for ln in lines if (ln + " ").startswith(f"ptrm {command} ")]
    assert len(examples) >= 2, sub.help
    # indented as a block (typer dedents the text after the first paragraph when only the
    # examples are indented there: each command has a prose paragraph before them)
    assert any(ln.startswith(f"     ptrm {command}") for ln in result.output.splitlines())
    for words in examples:
        sub.make_context(command, words[2:])  # raises on an unknown option or a bad value


def test_a_typer_without_display_type_rich_still_imports():
    """Typers before 0.2x have no `display_type_rich` (pyproject allows typer>=0.12): app.py
    must not assume it. (A GPU machine with typer 0.27 failed on `import ptrm_cli.app`.) The
    method is removed before the import, so there is nothing to patch; typer 0.29's own help
    calls it, so only the import is checked here."""
    code = """
import typer.core as core
for cls in (core.TyperOption, core.TyperArgument):
    for base in cls.__mro__:
        if "display_type_rich" in vars(base):
            delattr(base, "display_type_rich")
import ptrm_cli.app as app
assert app._TYPER_SHOWN == {}
assert not hasattr(core.TyperOption, "display_type_rich")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
