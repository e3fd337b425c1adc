"""The `ptrm` command line: a Typer root app with one module per command under commands/."""

from __future__ import annotations

import errno
import inspect
import logging
import os
import signal
import sys
import warnings

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

from . import __version__
from .commands import bench, build_data, codecs, convert, eval as eval_cmd, generate, solve, train
from .console import EXIT_BROKEN_PIPE, err_console, esc, silence_stdout
from .errors import PtrmError, help_hint
from .workers import one_line_warning

HELP = """\
Probabilistic Tiny Recursive Models for grid puzzles: train a TRM, then
solve with K noisy rollouts and pick the answer with its own Q head.

  ptrm solve puzzle.txt --K 100     solve one puzzle (URL, pzprv3, grid)
  ptrm eval --split golden          PTRM vs deterministic TRM
  ptrm generate sudoku --n 100 -o sudoku.jsonl
                                    make uniquely solvable puzzles
  ptrm build-data DIR --out data    build a dataset (the paper's recipe)
  ptrm train config.yaml            train a TRM
  ptrm convert step_N --out ckpt    an official TRM checkpoint, as ptrm's
  ptrm bench --K 100 --D 48         speed: ms per puzzle, TFLOP/s, memory
  ptrm codecs                       list the installed puzzle types
"""


def _shown_type(self, ctx):
    """Typer 0.29 shows every parameter's Python type: `--json <bool>` reads as if the flag
    took a value (`--json true` is then refused), `<list[Path]>` as if it took a list. Flags
    and repeatable parameters show none (their help and metavar say what they take); others
    show what typer says."""
    if getattr(self, "is_flag", False):
        return None
    shown = _TYPER_SHOWN[type(self)](self, ctx)
    return None if shown and shown.startswith("<list[") else shown


# older typers (0.12-0.2x, which pyproject allows) have no such method and show no types
_TYPER_SHOWN = {cls: cls.display_type_rich for cls in (TyperOption, TyperArgument)
                if hasattr(cls, "display_type_rich")}
for _cls in _TYPER_SHOWN:
    _cls.display_type_rich = _shown_type


class _Group(TyperGroup):
    """Turns user errors into one clear message and an exit code, never a traceback."""

    def make_context(self, info_name, args, parent=None, **extra):
        try:  # ptrm's own options (`ptrm --bogus`), parsed before any command runs
            return super().make_context(info_name, args, parent=parent, **extra)
        except _USAGE_ERRORS as e:
            if type(e).__name__ == "NoArgsIsHelpError":  # `ptrm` alone: the help, as it is
                raise
            _usage_error(e)

    def invoke(self, ctx):
        try:
            # SIGTERM (a scheduler, `timeout`, `kill`) stops a command as Ctrl-C does: what
            # is finished is kept and said (train saves a checkpoint on either by itself)
            signal.signal(signal.SIGTERM, _interrupt)
            return super().invoke(ctx)
        except PtrmError as e:
            if _says():
                err_console.print(f"[bold red]error:[/] {esc(e)}", highlight=False,
                                  soft_wrap=True)
                # every mistake has a hint (README): one raised without its own points at
                # the command's --help, as the option parser's mistakes do
                where = " ".join(filter(None, (ctx.command_path, ctx.invoked_subcommand)))
                hint = e.hint or help_hint(where)
                err_console.print(f"[dim]hint:[/] {esc(hint)}", highlight=False,
                                  soft_wrap=True)
            raise typer.Exit(e.exit_code)
        except KeyboardInterrupt:
            if _says():
                err_console.print("[yellow]interrupted[/]")
            raise typer.Exit(130)
        except _USAGE_ERRORS as e:  # a command's option that does not exist, a bad value
            _usage_error(e)
        except BrokenPipeError:  # the reader went away (`ptrm ... | head`): stop quietly
            silence_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE)
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
            err_console.print(f"[bold red]error:[/] {esc(e.strerror)} (writing the output)",
                              highlight=False)
            raise typer.Exit(2)


def _usage_error(e) -> None:
    """The option parser's mistake as one line and a hint, as every other mistake (it was a
    usage line and a boxed panel)."""
    if _says():
        err_console.print(f"[bold red]error:[/] {esc(e.format_message())}", highlight=False,
                          soft_wrap=True)
        where = e.ctx.command_path if e.ctx is not None else "ptrm"
        err_console.print(f"[dim]hint:[/] {esc(help_hint(where))}", highlight=False,
                          soft_wrap=True)
    raise typer.Exit(e.exit_code)


def _usage_errors() -> tuple[type, ...]:
    """The option parser's UsageError: typer's own copy of click (typer 0.2x), and click's."""
    import importlib

    found = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            found.append(importlib.import_module(name).UsageError)
        except (ImportError, AttributeError):
            pass
    return tuple(found)


_USAGE_ERRORS = _usage_errors()


def _says() -> bool:
    """Whether this process speaks: alone, or rank 0 of a launch (--gpus N), as every rank
    meets the same user error; the launcher exits with the failing rank's status."""
    return os.environ.get("RANK", "0") == "0"


def _interrupt(signum, frame):
    raise KeyboardInterrupt


app = typer.Typer(cls=_Group, help=HELP, no_args_is_help=True, add_completion=False,
                  rich_markup_mode="rich", pretty_exceptions_show_locals=False)


def _version(value: bool):
    if value:
        typer.echo(f"ptrm {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    verbose: bool = typer.Option(False, "--verbose", "-v",
                                 help="Also show torch's own warnings and INFO log lines on "
                                      "stderr (for bug reports)."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print the version and exit."),
):
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    warnings.formatwarning = one_line_warning
    if not verbose:
        warnings.filterwarnings("ignore", category=UserWarning, module="torch")


def _reflow(doc: str | None) -> str:
    """A docstring for --help: the lines of each prose paragraph joined (Typer keeps their
    source line breaks, which break sentences mid-line); indented blocks (examples, layouts)
    keep theirs."""
    paragraphs = inspect.cleandoc(doc or "").split("\n\n")
    return "\n\n".join(p if any(line.startswith(" ") for line in p.splitlines())
                       else " ".join(line.strip() for line in p.splitlines())
                       for p in paragraphs)


for name, command in (("solve", solve.solve), ("eval", eval_cmd.evaluate),
                      ("build-data", build_data.build_data), ("train", train.train),
                      ("codecs", codecs.list_codecs), ("generate", generate.generate),
                      ("convert", convert.convert), ("bench", bench.bench)):
    app.command(name, help=_reflow(command.__doc__))(command)


def main():
    app()


if __name__ == "__main__":
    main()
