"""Errors that are the user's to fix.

Anything raised as a `PtrmError` is shown by the CLI as one clear message (where, what was
expected) and a non-zero exit code, never as a traceback. Everything else is a bug in ptrm.
"""

from __future__ import annotations


class PtrmError(Exception):
    """A problem with the user's input, files or environment. `exit_code` follows the CLI's table."""

    exit_code = 2

    def __init__(self, message: str, *, hint: str | None = None):
        super().__init__(message)
        self.hint = hint


class UsageError(PtrmError, ValueError):
    """A library call's argument outside what it takes (K=0, an unknown noise target, tokens
    of the wrong shape for the model): a PtrmError like every user mistake, and a ValueError,
    which Python callers expect of a bad argument."""


def check_counts(**values) -> None:
    """A UsageError for each library argument that should be a whole number >= 1 or None
    (`wave=0`, `sample=0`, `limit=True`): where the CLI's option parser checks its flags, a
    Python caller's values went through and were read as something else."""
    import numbers

    for name, v in values.items():
        if v is not None and not (isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                  and v >= 1):
            raise UsageError(f"{name} must be a whole number >= 1 or None (got {v!r})")


def help_hint(command: str) -> str:
    """The hint of a mistake raised without one (README: every mistake has a hint): where
    `command` says what it takes."""
    return f"{command} --help says what it takes"


def plain_message(e: PtrmError, command: str | None = None) -> str:
    """The error as a script without the CLI's console says it: "error: ..." and "hint: ..."
    on the next line, its own hint or, given the `command` the user ran, the one the CLI
    gives (a `ptrm train --gpus N` rank speaks for `ptrm train`)."""
    hint = e.hint or (help_hint(command) if command else None)
    return f"error: {e}" + (f"\nhint: {hint}" if hint else "")


class ParseError(PtrmError):
    """Puzzle text that a codec cannot read. Says where (source, line) and what was expected."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None,
                 hint: str | None = None):
        where = ""
        if source is not None:
            where = f"{source}:{line}: " if line is not None else f"{source}: "
        elif line is not None:
            where = f"line {line}: "
        super().__init__(where + message, hint=hint)
        self.source, self.line = source, line


class OtherType(ParseError):
    """Input that is a puzzle of another type than the codec reading it (`found`: the type it
    is, as ptrm names it, or as the input wrote it). Whoever chose the codec (--codec, a
    record's type field) can say how to choose again."""

    def __init__(self, message: str, *, found: str, **where):
        super().__init__(message, **where)
        self.found = found


class VocabError(PtrmError):
    """A token table that does not match (checkpoint vs dataset vs codec), or a value outside it."""


class CodecNotFound(PtrmError):
    """No installed codec for a puzzle type or input."""


def did_you_mean(words, known, show=str) -> str:
    """" (did you mean X?)" for the names in `known` closest to each of the mistyped `words`
    (case aside), "" when none is close: what an unknown-name message appends. `known` may map
    each name to what to suggest for it (a puzzle's URL id to its type)."""
    import difflib

    known = known if isinstance(known, dict) else {k: k for k in known}
    by_lower = {str(k).lower(): v for k, v in known.items()}
    near = [by_lower[m] for w in words
            for m in difflib.get_close_matches(str(w).strip().lower(), by_lower, n=1)]
    return f" (did you mean {', '.join(map(show, dict.fromkeys(near)))}?)" if near else ""


def is_out_of_memory(e: BaseException) -> bool:
    """An allocation that failed: CUDA's OutOfMemoryError or the CPU allocator's RuntimeError,
    which a command turns into one message saying what to make smaller."""
    import torch

    return isinstance(e, torch.OutOfMemoryError) or (
        isinstance(e, RuntimeError) and "can't allocate memory" in str(e))


def load_json(text: str):
    """json.loads for a user's text. JSON nested deeper than Python's recursion limit (a
    thousand '[' make 2 KB) raises RecursionError, which no reader's `except ValueError` /
    `except json.JSONDecodeError` caught: a traceback. It is the JSONDecodeError it is to a
    reader, and `json_problem` says it."""
    import json

    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("Nested too deeply", text, 0) from None


def json_problem(e) -> str:
    """A json.JSONDecodeError as a reader says it: "not valid JSON: Expecting value (column
    7)", or "not valid JSON: Unterminated string starting at column 7" where its own msg ends
    in the "at" that its str() follows with the position (cutting the "at" left "starting")."""
    if e.msg.endswith(" at"):
        return f"not valid JSON: {e.msg} column {e.colno}"
    return f"not valid JSON: {e.msg} (column {e.colno})"
