"""Shared Rich consoles: results to stdout, progress and messages to stderr.

Messages are Rich markup, so a value from the user (a path, a task id, a line of their file)
goes in through `esc`: `[b]` in a file name must print as itself, not open a style or crash
the printer. Emoji codes stay off for the same reason (`:x:` in a device name is text).
"""

from rich.console import Console
from rich.markup import escape

console = Console(emoji=False)
err_console = Console(stderr=True, emoji=False)


def esc(value) -> str:
    """Any value as markup-safe text."""
    return escape(str(value))
