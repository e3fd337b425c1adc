"""Sudoku codec (placeholder until the full codec lands)."""
