"""`--help` of every command: it runs, and prose paragraphs are reflowed (Typer keeps a
docstring's source line breaks, which cut sentences mid-line)."""

from __future__ import annotations

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
