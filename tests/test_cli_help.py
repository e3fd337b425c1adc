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
