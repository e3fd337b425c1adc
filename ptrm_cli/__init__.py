"""ptrm: Probabilistic Tiny Recursive Models for grid puzzles."""

__version__ = "0.1.0"
