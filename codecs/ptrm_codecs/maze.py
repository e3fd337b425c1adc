"""Maze: find the shortest path from S to G (TRM's Maze-Hard task; docs/MAZE_ARC.md).

Cell values (the TRM token ids, so a value is also its token in the `maze` family):
    1 '#' wall   2 ' ' free   3 'S' start   4 'G' goal   5 'o' path
Puzzle.clues: [rows, cols] int8 of 1..4: the maze without its path; exactly one S and one G.
Solution.grid: [rows, cols] int16: the whole labelled maze, i.e. the clues with 5 on the path's
cells (S and G keep 3 and 4). 0 = EMPTY: nothing decodable there (a pad token).
A path of L steps (moves) from S to G has L - 1 'o' cells.

Formats:
  * plain text: one line per row of '#', ' ' or '.' (free), 'S', 'G', 'o'; an optional first
    line "maze". Rows shorter than the longest are padded with free cells (editors drop
    trailing spaces; write '.' for free cells to be safe). 'o' cells make it a solved maze.
  * HRM/TRM CSV form: one line of n*n characters ("# SGo"), row-major (900 for 30x30).
  * records: ptrm records {"type": "maze", "text": <rows joined by newlines, path drawn in>,
    "answer": <Solution.grid as lists>, ...} (what `to_record` and the generator write), and
    HRM CSV rows {"question": <900 chars>, "answer": <900 chars>}.
Tokens (`maze` family, 30x30): the cell values themselves; smaller mazes sit top-left, pad
around. Inputs show the maze (plus 'o' on the cells of a partial path, for trajectory states);
labels show the solved maze.

Verifier codes (checklist order; ours, pzpr.js has no maze). mzNoRoute is also the codec's
`puzzle_violations`, which `ptrm solve` checks before running a model:
  mzCellChanged   a cell differs from the maze where it must not: a wall, S or G not kept, or a
                  free cell holding anything but free or path (EMPTY included)
  mzPathOnWall    a path cell on a wall
  mzNoRoute       the maze itself has no route from S to G (no answer can be right)
  mzNoPath        no path cells at all, and S and G are not neighbours
  mzEndpoint      S or G does not touch exactly one path cell (or each other, for a 1-step path)
  mzBranch        a path cell with more than two path neighbours (S and G count as path)
  mzDeadEnd       a path cell with fewer than two path neighbours: a broken path
  mzDisconnected  path cells that are not connected to S (stray pieces, loops)
  mzNotShortest   a proper S-G path, longer than the shortest (BFS distance)
A proper path (no code from mzNoPath on) is a simple 4-connected chain S, o, ..., o, G; a
shortest path has no chords, so "exactly the 'o' cells form one chain" loses no valid answer.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
from rich.text import Text

from ptrm_cli import dihedral
from ptrm_cli.codec import Parsed, Puzzle, Solution, Violation, cell_name, cells_named, \
    size_name
from ptrm_cli.errors import ParseError

from .common import NEIGHBOURS4, GridCodec
from .families import MAZE

WALL, FREE, START, GOAL, PATH = 1, 2, 3, 4, 5
#: value -> character of the official CSV form ("# SGo")
CHARS = {WALL: "#", FREE: " ", START: "S", GOAL: "G", PATH: "o"}
#: character -> value; '.' is also free (readable, and survives editors that strip spaces)
READ = {"#": WALL, " ": FREE, ".": FREE, "S": START, "G": GOAL, "o": PATH}
TOKENS = {WALL: "maze.wall", FREE: "maze.free", START: "maze.start", GOAL: "maze.goal",
          PATH: "maze.path"}
VALUES = {name: v for v, name in TOKENS.items()}
#: how `render` draws each value (two columns a cell), and a cell that differs from the maze
GLYPHS = {WALL: "██", FREE: "  ", START: " S", GOAL: " G", PATH: "••"}
CHANGED_GLYPH = "??"


# -- grid helpers (no codec state) -----------------------------------------------------------

def find(clues: np.ndarray, value: int) -> tuple[int, int]:
    (r,), (c,) = np.nonzero(clues == value)
    return int(r), int(c)


def bfs(passable: np.ndarray, source: tuple[int, int]) -> np.ndarray:
    """Distances (in steps) from `source` through 4-neighbour moves on passable cells; -1 where
    unreachable."""
    rows, cols = passable.shape
    dist = np.full((rows, cols), -1, dtype=np.int32)
    dist[source] = 0
    queue = deque([source])
    while queue:
        r, c = queue.popleft()
        d = dist[r, c] + 1
        for dr, dc in NEIGHBOURS4:
            nr, nc = r + dr, c + dc
            if 0 <= nr < rows and 0 <= nc < cols and passable[nr, nc] and dist[nr, nc] < 0:
                dist[nr, nc] = d
                queue.append((nr, nc))
    return dist


def shortest_distance(clues: np.ndarray) -> int:
    """Steps of a shortest S-G route in the maze, -1 if there is none."""
    return int(bfs(clues != WALL, find(clues, START))[find(clues, GOAL)])


def path_cells(solution: np.ndarray, clues: np.ndarray) -> list[tuple[int, int]]:
    """The 'o' cells in walking order from S when they form a chain from S; otherwise (a
    broken answer) the chain as far as it goes, then the rest in row-major order."""
    on = solution == PATH
    order, seen = [], set()
    cur = find(clues, START)
    while True:
        nxt = [(cur[0] + dr, cur[1] + dc) for dr, dc in NEIGHBOURS4]
        nxt = [p for p in nxt if 0 <= p[0] < on.shape[0] and 0 <= p[1] < on.shape[1]
               and on[p] and p not in seen]
        if len(nxt) != 1 and order:  # a branch or the end of the chain
            break
        if not nxt:
            break
        cur = nxt[0]
        seen.add(cur)
        order.append(cur)
    rest = [(int(r), int(c)) for r, c in zip(*np.nonzero(on)) if (int(r), int(c)) not in seen]
    return order + rest


def shortest_path(clues: np.ndarray) -> list[tuple[int, int]]:
    """One shortest route's 'o' cells (S and G excluded), walking from S; [] if there is no
    route or S and G are neighbours."""
    passable = clues != WALL
    s, g = find(clues, START), find(clues, GOAL)
    dist = bfs(passable, s)
    if dist[g] < 0:
        return []
    out, cur = [], g
    while dist[cur] > 1:
        r, c = cur
        for dr, dc in NEIGHBOURS4:
            p = (r + dr, c + dc)
            if 0 <= p[0] < dist.shape[0] and 0 <= p[1] < dist.shape[1] \
                    and dist[p] == dist[cur] - 1:
                cur = p
                break
        out.append(cur)
    return out[::-1]


# -- the codec -------------------------------------------------------------------------------

class MazeCodec(GridCodec):
    name = "maze"
    description = "Maze: shortest path from S to G (TRM Maze-Hard tokens)"
    families = (MAZE,)
    EMPTY = 0
    rules = ("Find a shortest path from S to G, moving up, down, left or right through free "
             "cells, never through a wall.")
    example = "\n".join(("maze", "#######", "#S..#.#", "#.#.#.#", "#.#...#", "#...#G#",
                         "#######"))
    legend = {EMPTY: f"nothing readable there, a pad token ({CHANGED_GLYPH}, as is any cell "
                     "that differs from the maze)",
              WALL: f"wall ({GLYPHS[WALL].strip()})", FREE: "free",
              START: f"start ({GLYPHS[START].strip()})", GOAL: f"goal ({GLYPHS[GOAL].strip()})",
              PATH: f"the path ({GLYPHS[PATH]})"}

    # -- parsing ---------------------------------------------------------------------------
    def parse(self, text: str, *, source: str | None = None) -> Parsed:
        # Spaces are cells here: only line ends and wholly empty lines around the grid go.
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        first = 1  # the file's line number of lines[0]

        def drop_leading_blanks():
            nonlocal first
            while lines and lines[0] == "":
                lines.pop(0)
                first += 1

        drop_leading_blanks()
        while lines and lines[-1] == "":
            lines.pop()
        if lines and lines[0].strip().lower() == self.name:
            lines.pop(0)
            first += 1
            drop_leading_blanks()  # blank lines between the header and the grid are not rows
        if not lines:
            raise ParseError("empty maze: expected rows of '#', ' ' or '.', 'S', 'G', 'o'",
                             source=source)
        fmt = "grid"
        if len(lines) == 1:  # the HRM/TRM CSV form: one square grid, row-major
            flat = lines[0]
            n = math.isqrt(len(flat))
            if n < 2 or n * n != len(flat):
                raise ParseError(f"a one-line maze holds n*n cells (900 for 30x30); this line "
                                 f"has {len(flat)} characters", source=source, line=first)
            lines, fmt = [flat[i * n:(i + 1) * n] for i in range(n)], "csv"
        width = max(len(ln) for ln in lines)
        grid = np.full((len(lines), width), FREE, dtype=np.int16)
        for r, ln in enumerate(lines):
            for c, ch in enumerate(ln):
                v = READ.get(ch)
                if v is None:  # the one-line form is one line: its cell by character too
                    at = (f"at character {r * len(lines) + c + 1} (row {r + 1}, column "
                          f"{c + 1})" if fmt == "csv" else f"in column {c + 1}")
                    raise ParseError(f"maze cell {ch!r} {at}: expected '#', ' ', '.', 'S', "
                                     f"'G' or 'o'", source=source,
                                     line=first + (0 if fmt == "csv" else r))
                grid[r, c] = v
        puzzle = self._puzzle(np.where(grid == PATH, FREE, grid), source=source)
        solution = Solution(self.name, grid) if (grid == PATH).any() else None
        return Parsed(puzzle, solution, fmt)

    def _puzzle(self, clues: np.ndarray, *, source=None, meta=None) -> Puzzle:
        clues = np.asarray(clues)
        if clues.ndim != 2 or clues.size == 0:
            raise ParseError("a maze is a non-empty 2-D grid", source=source)
        for value, what in ((START, "start 'S'"), (GOAL, "goal 'G'")):
            n = int((clues == value).sum())
            if n != 1:
                raise ParseError(f"a maze has exactly one {what}, this one has {n}",
                                 source=source)
        if not np.isin(clues, (WALL, FREE, START, GOAL)).all():
            raise ParseError("maze cells must be wall, free, start or goal", source=source)
        return Puzzle(self.name, clues.shape[0], clues.shape[1], clues.astype(np.int8),
                      dict(meta or {}))

    def sniff(self, text: str) -> bool:
        body = [ln for ln in text.splitlines() if ln.strip().lower() != self.name]
        chars = set("".join(body))
        return (bool(body) and chars <= set(READ) and "#" in chars
                and sum(ln.count("S") for ln in body) == 1
                and sum(ln.count("G") for ln in body) == 1)

    def from_record(self, record: dict, *, source: str | None = None,
                    line: int | None = None) -> tuple[Puzzle, Solution]:
        """ptrm records ({"type": "maze", "text", "answer"}; build-data's JSONL reader hands the
        text over as "url") and HRM CSV rows ({"question", "answer"} as 900-char strings)."""
        if not isinstance(record, dict):
            raise ParseError("a maze record is a JSON object", source=source, line=line)
        text = next((record[k] for k in ("text", "url", "question") if k in record), None)
        if isinstance(text, list):
            text = "\n".join(str(x) for x in text)
        if not isinstance(text, str):
            raise ParseError("unrecognised maze record: expected 'text' (the maze rows) or "
                             "'question' (the HRM CSV string)", source=source, line=line)
        parsed = self.parse(text, source=source)
        solution = parsed.solution
        answer = record.get("answer")
        if answer is not None:
            given = self._answer(answer, parsed.puzzle, source=source, line=line)
            if solution is not None and given != solution:
                raise ParseError("the record's text and answer draw different paths",
                                 source=source, line=line)
            solution = given
        if solution is None:
            raise ParseError("maze record without a path: draw it with 'o' in the text or "
                             "give 'answer'", source=source, line=line)
        parsed.puzzle.meta.update({k: record[k] for k in ("id", "source", "seed", "index")
                                   if k in record})
        return parsed.puzzle, solution

    def _answer(self, answer, puzzle: Puzzle, *, source=None, line=None) -> Solution:
        if isinstance(answer, list) and answer and all(isinstance(x, str) for x in answer):
            answer = "\n".join(answer)
        if isinstance(answer, str):
            parsed = self.parse(answer, source=source)
            if not np.array_equal(parsed.puzzle.clues, puzzle.clues):
                raise ParseError("the answer is drawn on another maze", source=source, line=line)
            if parsed.solution is None:
                raise ParseError("the answer shows no path ('o')", source=source, line=line)
            return parsed.solution
        try:
            grid = np.asarray(answer)
        except (TypeError, ValueError):  # ragged rows
            grid = None
        # integers only, checked before any cast: int16 of 10**10 raised OverflowError (a
        # "bug in the codec"), and 2.7 became 2 without a word
        if grid is None or grid.dtype.kind not in "iu":
            raise ParseError("answer: expected the solved maze as text or as an integer grid",
                             source=source, line=line)
        if grid.shape != (puzzle.rows, puzzle.cols):
            got = size_name(*grid.shape) if grid.ndim == 2 else f"of shape {grid.shape}"
            raise ParseError(f"answer grid is {got}, the maze is "
                             f"{size_name(puzzle.rows, puzzle.cols)}", source=source, line=line)
        if grid.min() < WALL or grid.max() > PATH:
            raise ParseError("answer values must be 1..5 (wall, free, start, goal, path)",
                             source=source, line=line)
        return Solution(self.name, grid.astype(np.int16))

    # -- writing ---------------------------------------------------------------------------
    def to_text(self, puzzle: Puzzle, solution: Solution | None = None, *,
                free: str = " ") -> str:
        """Rows joined by newlines, the path drawn in when a solution is given."""
        grid = puzzle.clues if solution is None else solution.grid
        chars = {**CHARS, FREE: free}
        return "\n".join("".join(chars.get(int(v), "?") for v in row) for row in grid)

    def to_line(self, puzzle: Puzzle, solution: Solution | None = None) -> str:
        """The HRM/TRM CSV form: all rows on one line (' ' for free cells)."""
        return self.to_text(puzzle, solution).replace("\n", "")

    def key(self, puzzle: Puzzle) -> str:
        # '.' for free cells: a key that stays parsable whatever strips whitespace
        return self.to_text(puzzle, free=".")

    def to_record(self, puzzle: Puzzle, solution: Solution, **extra) -> dict:
        return {"type": self.name, "text": self.to_text(puzzle, solution),
                "answer": solution.grid.astype(int).tolist(),
                "path_length": int((solution.grid == PATH).sum()) + 1, **extra}

    # -- tokens ----------------------------------------------------------------------------
    def token_range_help(self) -> str:
        return "maze cells are wall, free, start, goal and path"

    def is_answer_cell(self, puzzle, r, c):
        return int(puzzle.clues[r, c]) == FREE

    def required_cells(self, puzzle, solution):
        """The path's cells, walking from S (so a trajectory state is a path prefix)."""
        return [rc for rc in path_cells(np.asarray(solution.grid), puzzle.clues)
                if self.is_answer_cell(puzzle, *rc)]

    def input_token(self, puzzle, r, c, value):
        clue = int(puzzle.clues[r, c])
        return TOKENS[PATH] if clue == FREE and value == PATH else TOKENS[clue]

    def label_token(self, puzzle, r, c, value):
        return TOKENS.get(value) or TOKENS[int(puzzle.clues[r, c])]

    def token_value(self, puzzle, r, c, name):
        return VALUES.get(name, self.EMPTY)

    # -- rules -----------------------------------------------------------------------------
    def verify(self, puzzle, solution):
        clues = np.asarray(puzzle.clues)
        grid = np.asarray(solution.grid)
        if grid.shape != clues.shape:
            return [Violation("mzCellChanged", f"the answer is {size_name(*grid.shape)}, the "
                                               f"maze {size_name(*clues.shape)}")]
        out: list[Violation] = []
        on_wall = (clues == WALL) & (grid == PATH)
        allowed = (grid == clues) | ((clues == FREE) & (grid == PATH))
        changed = ~allowed & ~on_wall
        if changed.any():
            out.append(_listing("mzCellChanged", f"{int(changed.sum())} cell(s) differ from "
                                "the maze (walls, S and G stay; free cells hold free or path)",
                                changed))
        if on_wall.any():
            out.append(_listing("mzPathOnWall", f"the path runs through {int(on_wall.sum())} "
                                "wall cell(s)", on_wall))
        shortest, no_route = _route(clues)
        if no_route:
            return out + no_route
        s, g = find(clues, START), find(clues, GOAL)

        path = grid == PATH
        n_path = int(path.sum())
        if n_path == 0 and shortest > 1:
            return out + [Violation("mzNoPath", "no path cells ('o') are marked")]
        nodes = path.copy()
        nodes[s] = nodes[g] = True
        pad = np.pad(nodes, 1)
        degree = (pad[:-2, 1:-1].astype(int) + pad[2:, 1:-1] + pad[1:-1, :-2] + pad[1:-1, 2:])
        degree = np.where(nodes, degree, 0)
        for cell, what in ((s, "start S"), (g, "goal G")):
            if degree[cell] != 1:
                out.append(Violation("mzEndpoint", f"the {what} at {cell_name(*cell)} touches "
                                     f"{int(degree[cell])} path cell(s); a path leaves it "
                                     "through exactly one", (cell,)))
        branch = path & (degree > 2)
        if branch.any():
            out.append(_listing("mzBranch", f"{int(branch.sum())} path cell(s) have more than "
                                "two path neighbours", branch))
        dead = path & (degree < 2)
        if dead.any():
            out.append(_listing("mzDeadEnd", f"{int(dead.sum())} path cell(s) are loose ends "
                                "(the path is broken)", dead))
        reach = bfs(nodes, s) >= 0
        stray = nodes & ~reach
        if stray.any():
            what = "G and " if stray[g] else ""
            out.append(_listing("mzDisconnected", f"{what}{int((stray & path).sum())} path "
                                "cell(s) are not connected to S", stray))
        structural = {"mzEndpoint", "mzBranch", "mzDeadEnd", "mzDisconnected"}
        if not any(v.code in structural for v in out) and n_path + 1 > shortest:
            out.append(_listing("mzNotShortest", f"the path takes {n_path + 1} steps; the "
                                f"shortest takes {shortest}; the path", path))
        return out

    def puzzle_violations(self, puzzle):
        """mzNoRoute for a maze whose S cannot reach G: no answer can be right, so `ptrm solve`
        says so before running a model (one BFS, the one `verify` runs)."""
        return _route(np.asarray(puzzle.clues))[1]

    # -- augmentation ----------------------------------------------------------------------
    def transform(self, puzzle, solution, t):
        p = Puzzle(self.name, *dihedral.shape(puzzle.rows, puzzle.cols, t),
                   dihedral.apply(puzzle.clues, t), dict(puzzle.meta))
        s = None if solution is None else Solution(self.name, dihedral.apply(solution.grid, t))
        return p, s

    # -- people ----------------------------------------------------------------------------
    def render(self, puzzle, solution=None):
        grid = puzzle.clues if solution is None else solution.grid
        out = Text()
        for r in range(puzzle.rows):
            for c in range(puzzle.cols):
                v, clue = int(grid[r, c]), int(puzzle.clues[r, c])
                if v != clue and not (v == PATH and clue == FREE):
                    # the maze changed there (a path through a wall, a wall or S moved, a pad
                    # token): marked by its text, not by colour alone, which NO_COLOR, a file
                    # or a pipe loses (a red wall then looked like any wall)
                    out.append(CHANGED_GLYPH, style="bold red")
                elif v == PATH:
                    out.append(GLYPHS[PATH], style="bold yellow")
                elif v == WALL:
                    out.append(GLYPHS[WALL], style="bright_black")
                elif v in (START, GOAL):
                    out.append(GLYPHS[v], style="bold green")
                else:
                    out.append(GLYPHS[FREE])
            if r < puzzle.rows - 1:
                out.append("\n")
        return out


def _route(clues: np.ndarray) -> tuple[int, list[Violation]]:
    """The steps of a shortest S-G route, and [mzNoRoute] when there is none (steps -1): what
    `verify` and `puzzle_violations` both judge a maze's route by."""
    shortest = shortest_distance(clues)
    if shortest >= 0:
        return shortest, []
    s, g = find(clues, START), find(clues, GOAL)
    return shortest, [Violation("mzNoRoute", f"the maze has no route from S at {cell_name(*s)} "
                                             f"to G at {cell_name(*g)}", (s, g))]


def _cells(mask: np.ndarray) -> tuple[tuple[int, int], ...]:
    return tuple((int(r), int(c)) for r, c in zip(*np.nonzero(mask)))


def _listing(code: str, text: str, mask: np.ndarray) -> Violation:
    """A violation at the cells of `mask`, its message `text` followed by where they are."""
    cells = _cells(mask)
    return Violation(code, f"{text}: {cells_named(cells)}", cells)


def solve(puzzle: Puzzle) -> Solution | None:
    """A shortest-path solution of the maze (one of them), or None without a route."""
    clues = np.asarray(puzzle.clues)
    if shortest_distance(clues) < 0:
        return None
    grid = clues.astype(np.int16)
    for rc in shortest_path(clues):
        grid[rc] = PATH
    return Solution(puzzle.type, grid)


__all__ = ["MazeCodec", "WALL", "FREE", "START", "GOAL", "PATH", "CHARS", "bfs",
           "shortest_distance", "shortest_path", "path_cells", "solve"]
