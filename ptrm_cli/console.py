"""Shared Rich consoles: results to stdout, progress and messages to stderr."""

from rich.console import Console

console = Console()
err_console = Console(stderr=True)
