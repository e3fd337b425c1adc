"""Hitori for ptrm: an example third-party codec plugin.

Shade some numbered cells so that
  brNoShade   at least one cell is shaded,
  csAdjacent  no two shaded cells share an edge,
  cuDivideRB  the unshaded cells stay 4-connected,
  nmDupRow    no number appears twice among the unshaded cells of a row or a column.
The codes and their order are pzpr.js's (its `hitori` checklist), so `verify` reports the
same first failure as puzz.link's checker.

Puzzle.clues: [rows, cols] int16, the numbers (1..), -1 for a cell without one.
Solution.grid: [rows, cols] int16, 1 = shaded, 0 = unshaded (EMPTY). Every cell is an answer
cell: the solver shades numbered cells.

Formats:
  puzz.link   hitori/<cols>/<rows>/<body>: one base-36 character per number 1..35, '-' plus two
              base-36 characters for 36..1295, '.' for a cell without a number
  pzprv3      the number grid ('.' for none), then the answer grid ('#' shaded, '+' dot, '.')
  plain grid  an optional first line `hitori`, then one line per row of numbers separated by
              spaces, '.' for none; a number may end in '#' to mark it shaded (an answer)
  records     PPBench JSONL lines (moves: left click shades, right click dots), ptrm
              records {"type": "hitori", "url": ..., "answer": [[0/1, ...], ...]} and the
              lines of a built dataset's puzzles.jsonl ("text" for "url")

Tokens, family "hitori" (its own 16-token vocabulary, 12x12 grids; smaller puzzles sit
top-left, padded): hitori.blank and hitori.1..12 for the puzzle, with hitori.shaded on the
cells a trajectory state shades; labels are hitori.unshaded / hitori.shaded on every cell.

Only the public contract is used: ptrm_cli.codec, .vocab, .errors and .dihedral.
"""

from __future__ import annotations

import base64
import json
import re
from collections import deque

import numpy as np
from rich.text import Text

from ptrm_cli import dihedral
from ptrm_cli.codec import Codec, Family, Parsed, Puzzle, Solution, Violation, cell_name
from ptrm_cli.errors import ParseError, PtrmError
from ptrm_cli.vocab import PAD, Vocab

MAX_SIDE = 12  # the family grid; pzpr.js caps a hitori number at max(rows, cols)
TOKENS = (PAD, "hitori.blank", *(f"hitori.{n}" for n in range(1, MAX_SIDE + 1)),
          "hitori.unshaded", "hitori.shaded")
HITORI = Family("hitori", MAX_SIDE, MAX_SIDE, Vocab("hitori", TOKENS))

_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_URL = re.compile(r"^\s*(?:https?://)?[^?\s]*\?hitori/(\d+)/(\d+)/([^/\s]*)/?\s*$")
_PPBENCH_KEY = b"ppbench"


class HitoriCodec(Codec):
    name = "hitori"
    description = "Hitori: shade cells so no number repeats in a row or column (example plugin)"
    url_ids = ("hitori",)
    families = (HITORI,)
    EMPTY = 0
    # for `ptrm codecs hitori` (and, the legend, `ptrm solve --json`): docs/PLUGINS.md, section 2
    rules = ("Shade some numbered cells so that no number repeats among the unshaded cells of "
             "a row or a column, no two shaded cells touch side by side, and the unshaded cells "
             "stay connected.")
    example = "hitori\n2 1 2 4\n4 4 3 1\n3 3 4 2\n1 3 2 3"
    legend = {0: "unshaded (its number drawn plainly)",
              1: "shaded (its number drawn reversed and dim)"}

    # -- reading ---------------------------------------------------------------------------
    def parse(self, text: str, *, source: str | None = None) -> Parsed:
        stripped = text.strip()
        if not stripped:
            raise ParseError("empty input: expected a hitori URL, pzprv3 text or grid",
                             source=source)
        lines = stripped.splitlines()
        if lines[0].strip().startswith("pzprv3"):
            return self._parse_pzprv3([ln.split() for ln in lines], source)
        if len(lines) == 1 and "?" in lines[0]:
            return self._parse_url(lines[0], source)
        offset = 0
        if lines[0].strip().lower() == self.name:
            offset = 1
        return self._parse_grid(lines[offset:], source, first_line=offset + 1)

    def _parse_url(self, url: str, source) -> Parsed:
        m = _URL.match(url)
        if not m:
            raise ParseError(f"not a hitori puzz.link URL: {url[:80]!r}", source=source,
                             hint="expected https://puzz.link/p?hitori/<cols>/<rows>/<body>")
        cols, rows, body = int(m.group(1)), int(m.group(2)), m.group(3)
        if not (1 <= rows <= 100 and 1 <= cols <= 100):
            raise ParseError(f"hitori URL size {cols}x{rows} is out of range", source=source)
        values, i = [], 0
        while i < len(body) and len(values) < rows * cols:
            ch = body[i]
            if ch in _B36:
                values.append(int(ch, 36))
            elif ch == "-":
                two = body[i + 1:i + 3]
                if len(two) != 2 or not all(c in _B36 for c in two):
                    raise ParseError(f"hitori URL: '-' at body character {i + 1} must be "
                                     f"followed by two base-36 digits, found {two!r}",
                                     source=source)
                values.append(int(two, 36))
                i += 2
            elif ch in "%@":
                raise ParseError("hitori URL has a '?' number, which ptrm cannot use",
                                 source=source)
            else:  # '.' (and, as in pzpr.js, any other character): a cell without a number
                values.append(-1)
            i += 1
        # strict, like ptrm's own codecs: pzpr.js writes every cell, so a short body was cut
        if len(values) < rows * cols:
            raise ParseError(f"hitori URL body covers {len(values)} cells, but its "
                             f"{cols}x{rows} board has {rows * cols}", source=source)
        if i < len(body):
            raise ParseError(f"hitori URL body: {len(body) - i} character(s) left over after "
                             "the board is full", source=source)
        return Parsed(self._puzzle(np.array(values).reshape(rows, cols), source), format="url")

    def _parse_pzprv3(self, lines: list[list[str]], source) -> Parsed:
        try:
            pid, rows, cols = lines[1][0], int(lines[2][0]), int(lines[3][0])
        except (IndexError, ValueError):
            raise ParseError("pzprv3 text: expected 'hitori', rows and cols on lines 2-4",
                             source=source) from None
        if pid != self.name:
            raise ParseError(f"pzprv3 text is a {pid!r} puzzle, not hitori", source=source, line=2)
        body = lines[4:]
        if len(body) < rows or any(len(body[r]) < cols for r in range(rows)):
            raise ParseError(f"pzprv3 text: expected {rows} lines of {cols} numbers",
                             source=source, line=5)
        numbers = np.full((rows, cols), -1)
        for r in range(rows):
            for c, tok in enumerate(body[r][:cols]):
                if tok != ".":
                    numbers[r, c] = self._number(tok, source, 5 + r)
        puzzle = self._puzzle(numbers, source)
        solution = None
        if len(body) >= 2 * rows and all(len(body[rows + r]) >= cols for r in range(rows)):
            grid = np.array([[1 if tok == "#" else 0 for tok in body[rows + r][:cols]]
                             for r in range(rows)], dtype=np.int16)
            solution = Solution(self.name, grid)
        return Parsed(puzzle, solution, format="pzprv3")

    def _parse_grid(self, lines: list[str], source, first_line: int) -> Parsed:
        rows = [(first_line + k, ln.split()) for k, ln in enumerate(lines) if ln.strip()]
        if not rows:
            raise ParseError("hitori grid has no rows", source=source)
        cols = len(rows[0][1])
        numbers = np.full((len(rows), cols), -1)
        shaded = np.zeros((len(rows), cols), dtype=np.int16)
        for r, (line, toks) in enumerate(rows):
            if len(toks) != cols:
                raise ParseError(f"expected {cols} cells on this line, found {len(toks)}",
                                 source=source, line=line)
            for c, tok in enumerate(toks):
                if tok.endswith("#"):
                    shaded[r, c], tok = 1, tok[:-1]
                if tok not in (".", "-", ""):
                    numbers[r, c] = self._number(tok, source, line)
        solution = Solution(self.name, shaded) if shaded.any() else None
        return Parsed(self._puzzle(numbers, source), solution, format="grid")

    @staticmethod
    def _number(tok: str, source, line) -> int:
        if not tok.isdigit() or int(tok) < 1:
            raise ParseError(f"hitori cell {tok!r}: expected a number 1.. or '.'",
                             source=source, line=line)
        return int(tok)

    def _puzzle(self, numbers: np.ndarray, source) -> Puzzle:
        if (numbers == 0).any():
            raise ParseError("hitori numbers start at 1", source=source)
        return Puzzle(self.name, numbers.shape[0], numbers.shape[1], numbers.astype(np.int16))

    def from_record(self, record: dict, *, source: str | None = None) -> tuple[Puzzle, Solution]:
        if "solution_enc" in record:  # PPBench: base64(JSON XOR b"ppbench"), moves per cell
            url = record.get("puzzlink_url") or record.get("puzzle_url") or ""
            puzzle = self.parse(url, source=source).puzzle
            try:
                raw = base64.b64decode(record["solution_enc"])
                moves = json.loads(bytes(b ^ _PPBENCH_KEY[i % len(_PPBENCH_KEY)]
                                         for i, b in enumerate(raw)))["moves_full"]
            except (ValueError, KeyError) as e:
                raise ParseError(f"PPBench solution_enc does not decode: {e}",
                                 source=source) from None
            grid = np.zeros((puzzle.rows, puzzle.cols), dtype=np.int16)
            for move in moves:  # golden moves touch each cell once: left shades, right dots
                f = move.split(",")
                if f[0] != "mouse" or len(f) != 4:
                    raise ParseError(f"unexpected hitori move {move!r}", source=source)
                r, c = int(float(f[3]) // 2), int(float(f[2]) // 2)
                grid[r, c] = 1 if f[1] == "left" else 0
            puzzle.meta.update({"pid": record.get("pid"), "url": url})
            return puzzle, Solution(self.name, grid)
        if ("url" in record or "text" in record) and "answer" in record:
            # `text`: a line of a built dataset's puzzles.jsonl (`ptrm solve` reads one whole)
            puzzle = self.parse(record.get("url") or record["text"], source=source).puzzle
            grid = np.asarray(record["answer"], dtype=np.int16)
            if grid.shape != (puzzle.rows, puzzle.cols):
                raise ParseError(f"answer is {grid.shape}, the puzzle {puzzle.rows}x{puzzle.cols}",
                                 source=source)
            return puzzle, Solution(self.name, grid)
        raise ParseError("expected a PPBench record (solution_enc), a ptrm record "
                         "(url, answer) or a dataset's puzzles.jsonl line (text, answer)",
                         source=source)

    # -- writing ---------------------------------------------------------------------------
    def to_url(self, puzzle: Puzzle) -> str:
        body = []
        for n in puzzle.clues.reshape(-1):
            n = int(n)
            if n < 0:
                body.append(".")
            elif n < 36:
                body.append(_B36[n])
            else:
                body.append("-" + _B36[n // 36] + _B36[n % 36])
        return f"https://puzz.link/p?hitori/{puzzle.cols}/{puzzle.rows}/{''.join(body)}"

    def to_pzprv3(self, puzzle: Puzzle, solution: Solution | None = None) -> str:
        """The file pzpr.js writes: numbers, then answers (every token followed by a space)."""
        lines = ["pzprv3", "hitori", str(puzzle.rows), str(puzzle.cols)]
        lines += ["".join(f"{n if n > 0 else '.'} " for n in row) for row in puzzle.clues]
        for r in range(puzzle.rows):
            lines.append("".join("# " if solution is not None and solution.grid[r, c] == 1
                                 else ". " for c in range(puzzle.cols)))
        return "\n".join(lines) + "\n"

    # -- tokens ----------------------------------------------------------------------------
    def _family(self, puzzle: Puzzle, family: Family | None) -> Family:
        family = family or HITORI
        if family.vocab.family != HITORI.name:
            raise PtrmError(f"hitori encodes only into the hitori family, not {family.name!r}")
        if puzzle.rows > family.rows or puzzle.cols > family.cols:
            raise PtrmError(f"a {puzzle.rows}x{puzzle.cols} hitori does not fit the "
                            f"{family.rows}x{family.cols} hitori family")
        return family

    def _grid_tokens(self, puzzle: Puzzle, family: Family | None, name_of) -> np.ndarray:
        family = self._family(puzzle, family)
        out = np.zeros((family.rows, family.cols), dtype=np.int64)  # pad
        for r in range(puzzle.rows):
            for c in range(puzzle.cols):
                name = name_of(r, c)
                if name not in family.vocab:
                    raise PtrmError(f"hitori cell {cell_name(r, c)}: number {puzzle.clues[r, c]} "
                                    f"has no token (the hitori family has 1..{MAX_SIDE})")
                out[r, c] = family.vocab.id(name)
        return out.reshape(-1)

    def encode(self, puzzle, state=None, family=None):
        def name_of(r, c):
            if state is not None and state.grid[r, c] == 1:
                return "hitori.shaded"
            n = int(puzzle.clues[r, c])
            return "hitori.blank" if n < 0 else f"hitori.{n}"
        return self._grid_tokens(puzzle, family, name_of)

    def encode_label(self, puzzle, solution, family=None):
        return self._grid_tokens(puzzle, family, lambda r, c: "hitori.shaded"
                                 if solution.grid[r, c] == 1 else "hitori.unshaded")

    def decode(self, puzzle, tokens, family=None):
        family = self._family(puzzle, family)
        tokens = np.asarray(tokens).reshape(family.rows, family.cols)
        shaded = family.vocab.id("hitori.shaded")
        grid = (tokens[:puzzle.rows, :puzzle.cols] == shaded).astype(np.int16)
        return Solution(self.name, grid)

    # -- rules -----------------------------------------------------------------------------
    def verify(self, puzzle, solution):
        shaded = np.asarray(solution.grid) == 1
        out = []
        if not shaded.any():
            out.append(Violation("brNoShade", "no cell is shaded"))
        pairs = [((r, c), (r, c + 1)) for r, c in zip(*np.nonzero(shaded[:, :-1] & shaded[:, 1:]))]
        pairs += [((r, c), (r + 1, c)) for r, c in zip(*np.nonzero(shaded[:-1, :] & shaded[1:, :]))]
        if pairs:
            cells = tuple((int(r), int(c)) for pair in pairs for r, c in pair)
            out.append(Violation("csAdjacent", f"{len(pairs)} pair(s) of shaded cells touch",
                                 cells))
        parts = _components(~shaded)
        if len(parts) > 1:
            out.append(Violation("cuDivideRB", f"the unshaded cells fall into {len(parts)} parts",
                                 tuple(parts[1])))
        dups = []
        for lines in ([[(r, c) for c in range(puzzle.cols)] for r in range(puzzle.rows)],
                      [[(r, c) for r in range(puzzle.rows)] for c in range(puzzle.cols)]):
            for line in lines:
                seen: dict[int, list] = {}
                for rc in line:
                    if not shaded[rc] and puzzle.clues[rc] >= 1:
                        seen.setdefault(int(puzzle.clues[rc]), []).append(rc)
                dups += [rcs for rcs in seen.values() if len(rcs) > 1]
        if dups:
            out.append(Violation("nmDupRow", f"{len(dups)} number(s) repeat among unshaded "
                                 "cells of a row or column",
                                 tuple((int(r), int(c)) for rcs in dups for r, c in rcs)))
        return out

    # -- augmentation ----------------------------------------------------------------------
    def transform(self, puzzle, solution, t):
        p = Puzzle(self.name, *dihedral.shape(puzzle.rows, puzzle.cols, t),
                   dihedral.apply(puzzle.clues, t), dict(puzzle.meta))
        s = None if solution is None else Solution(self.name, dihedral.apply(solution.grid, t))
        return p, s

    # -- people ----------------------------------------------------------------------------
    def render(self, puzzle, solution=None):
        width = max(1, len(str(int(puzzle.clues.max()))))
        out = Text()
        for r in range(puzzle.rows):
            for c in range(puzzle.cols):
                n = int(puzzle.clues[r, c])
                cell = f"{n:>{width}}" if n > 0 else "·".rjust(width)
                shaded = solution is not None and solution.grid[r, c] == 1
                out.append(" " + cell, style="reverse dim" if shaded else None)
            out.append("\n" if r < puzzle.rows - 1 else "")
        return out


def _components(mask: np.ndarray) -> list[list[tuple[int, int]]]:
    """4-connected components of the True cells, the one holding the first cell first."""
    rows, cols = mask.shape
    seen = np.zeros_like(mask, dtype=bool)
    parts = []
    for r0, c0 in zip(*np.nonzero(mask)):
        if seen[r0, c0]:
            continue
        part, queue = [], deque([(int(r0), int(c0))])
        seen[r0, c0] = True
        while queue:
            r, c = queue.popleft()
            part.append((r, c))
            for nr, nc in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                if 0 <= nr < rows and 0 <= nc < cols and mask[nr, nc] and not seen[nr, nc]:
                    seen[nr, nc] = True
                    queue.append((nr, nc))
        parts.append(part)
    return parts
