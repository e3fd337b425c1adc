"""Token families of the built-in codecs: one source of truth for each vocabulary.

PPBench family: the six PPBench types share 10x10 grids (sudoku's 9x9 sits top-left, padded)
and one vocabulary of 294 tokens, the paper's size. Each type owns a namespace
(PPBENCH_FORMATS.md §6.3, design B): its input states, then its answer states. The open-ended
ranges are capped where every real puzzle we have still fits, and "?" clues are supported
wherever a "?" changes the rules:

  ids      type        tokens
  0        -           pad
  1-19     sudoku      blank, given 1..9, digit 1..9                         (19)
  20-28    lightup     white, wall (unnumbered), wall 0..4, dark, light      (9)
  29-40    shakashaka  white, black (unnumbered), black 0..4,
                       empty, tri 2..5 (pzpr qans: ◣ ◢ ◥ ◤)                    (12)
  41-82    nurikabe    blank, clue ?, clue 1..38, unshaded, shaded           (42)
  83-127   tapa        blank, the 23 numeric clue multisets, the 19 with
                       "?", unshaded, shaded                                 (45)
  128-293  heyawake    cell (wall right?, wall below?, room number none|0..39)
                       = 4 x 41, then unshaded, shaded                       (166)

Why these caps: heyawake's 0..39 is pzpr.js's own limit for a 10x10 room; nurikabe clues
1..38 cover every golden (max 20) and janko (max 37) puzzle, and an island of 39+ cells on a
10x10 board leaves almost nothing to shade. A heyawake "?" room constrains nothing, exactly like
a room without a number, so it is encoded as "none" (no token needed); a nurikabe "?" still
marks an island and a tapa "?" still counts a block, so they have tokens. With these, all 61
golden puzzles of the six types and every janko puzzle encode.

Labels use the answer tokens on cells the solver fills and copy the input token on cells it
cannot change (givens, walls, clues); pad stays pad (ignored by the loss). Heyawake cells are
all answer cells, so its labels are unshaded/shaded only.
"""

from __future__ import annotations

from itertools import product

from ptrm_cli.codec import Family
from ptrm_cli.vocab import PAD, Vocab

NURIKABE_MAX_CLUE = 38
UNKNOWN = -2  # a "?" clue, as pzpr.js stores it
HEYAWAKE_MAX_NUMBER = 39

#: every multiset of run lengths a tapa clue can show on an 8-cell ring (PPBENCH_FORMATS.md §6.1),
#: then the 19 with "?" (-2: one block of any length); each sorted, "?" first
TAPA_CLUES: tuple[tuple[int, ...], ...] = (
    (0,), (1,), (2,), (3,), (4,), (5,), (6,), (7,), (8,),
    (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (2, 2), (2, 3), (2, 4), (3, 3),
    (1, 1, 1), (1, 1, 2), (1, 1, 3), (1, 2, 2),
    (1, 1, 1, 1),
    (-2,), (-2, 1), (-2, 2), (-2, 3), (-2, 4), (-2, 5), (-2, -2),
    (-2, 1, 1), (-2, 1, 2), (-2, 1, 3), (-2, 2, 2), (-2, -2, 1), (-2, -2, 2), (-2, -2, 3),
    (-2, -2, -2),
    (-2, 1, 1, 1), (-2, -2, 1, 1), (-2, -2, -2, 1), (-2, -2, -2, -2),
)


def tapa_token(clue) -> str:
    return "tapa.clue." + ",".join("?" if v == UNKNOWN else str(v) for v in sorted(clue))


def heyawake_token(wall_right: bool, wall_below: bool, number: int | None) -> str:
    n = "none" if number is None else str(number)
    return f"heyawake.cell.{'R' if wall_right else '-'}{'B' if wall_below else '-'}.{n}"


def _ppbench_tokens() -> list[str]:
    t = [PAD]
    t += ["sudoku.blank"] + [f"sudoku.given.{d}" for d in range(1, 10)]
    t += [f"sudoku.digit.{d}" for d in range(1, 10)]
    t += ["lightup.white", "lightup.wall"] + [f"lightup.wall.{n}" for n in range(5)]
    t += ["lightup.dark", "lightup.light"]
    t += ["shakashaka.white", "shakashaka.black"] + [f"shakashaka.black.{n}" for n in range(5)]
    t += ["shakashaka.empty"] + [f"shakashaka.tri.{q}" for q in (2, 3, 4, 5)]
    t += ["nurikabe.blank", "nurikabe.clue.?"]
    t += [f"nurikabe.clue.{n}" for n in range(1, NURIKABE_MAX_CLUE + 1)]
    t += ["nurikabe.unshaded", "nurikabe.shaded"]
    t += ["tapa.blank"] + [tapa_token(c) for c in TAPA_CLUES] + ["tapa.unshaded", "tapa.shaded"]
    numbers = [None, *range(HEYAWAKE_MAX_NUMBER + 1)]
    t += [heyawake_token(r, b, n) for r, b in product((False, True), repeat=2) for n in numbers]
    t += ["heyawake.unshaded", "heyawake.shaded"]
    return t


PPBENCH = Family("ppbench", 10, 10, Vocab("ppbench", tuple(_ppbench_tokens())))
assert len(PPBENCH.vocab) == 294, len(PPBENCH.vocab)


# =============================================================================================
# Maze and ARC families: TRM's own token sets (TRM_REFERENCE.md §5.3, §5.4), id for id, so a
# model trained by the official code reads our tokens and ours reads its. Neither shares
# anything with the PPBench family above (docs/MAZE_ARC.md).
#
#   maze  30x30, 6 tokens   0 pad, 1 '#' wall, 2 ' ' free, 3 'S' start, 4 'G' goal, 5 'o' path
#   arc   30x30, 12 tokens  0 pad, 1 eos, 2..11 colours 0..9 (colour c -> id c + 2)
# =============================================================================================

MAZE_TOKENS = (PAD, "maze.wall", "maze.free", "maze.start", "maze.goal", "maze.path")
MAZE = Family("maze", 30, 30, Vocab("maze", MAZE_TOKENS))

ARC_EOS = "arc.eos"
ARC_TOKENS = (PAD, ARC_EOS) + tuple(f"arc.{c}" for c in range(10))
ARC = Family("arc", 30, 30, Vocab("arc", ARC_TOKENS))
assert len(MAZE.vocab) == 6 and len(ARC.vocab) == 12


# =============================================================================================
# Sudoku, TRM's native layout (TRM_REFERENCE.md §5.2): the exact token ids of the official
# Sudoku-Extreme data, so an official TRM-MLP sudoku checkpoint (vocab 11, seq_len 81, no
# padding) reads our datasets and ours read its. Separate from the PPBench family above.
#
#   sudoku-native  9x9, 11 tokens   0 pad (unused), 1 blank, 2..10 digits 1..9 (digit d -> d + 1)
#
# As in TRM's data, givens and entered digits share the digit tokens: input = the puzzle with
# blanks, label = the full solution grid (no pad anywhere).
# =============================================================================================

SUDOKU_NATIVE_BLANK = "sudoku.blank"
SUDOKU_NATIVE_DIGITS = tuple(f"sudoku.{d}" for d in range(1, 10))
SUDOKU_NATIVE_TOKENS = (PAD, SUDOKU_NATIVE_BLANK) + SUDOKU_NATIVE_DIGITS
SUDOKU_NATIVE = Family("sudoku-native", 9, 9, Vocab("sudoku-native", SUDOKU_NATIVE_TOKENS))
assert len(SUDOKU_NATIVE.vocab) == 11 and SUDOKU_NATIVE.vocab.id("sudoku.9") == 10
