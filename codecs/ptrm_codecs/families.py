"""Token families of the built-in codecs: one source of truth for each vocabulary.

PPBench family: the six PPBench types share 10x10 grids (sudoku's 9x9 sits top-left, padded)
and one vocabulary of 294 tokens. Each type owns a namespace (PPBENCH_FORMATS.md §6.3, design
B without "?" clues): its input states, then its answer states. Open-ended ranges are capped
so that the total is the paper's 294: nurikabe clues 1..58, heyawake room numbers 0..39
(pzpr.js's own cap for a 10x10 room), i.e. V = 80 + 58 + 4*39.

  ids      type        tokens
  0        -           pad
  1-19     sudoku      blank, given 1..9, digit 1..9                         (19)
  20-28    lightup     white, wall (unnumbered), wall 0..4, dark, light      (9)
  29-40    shakashaka  white, black (unnumbered), black 0..4,
                       empty, tri 2..5 (pzpr qans: ◣ ◢ ◥ ◤)                    (12)
  41-101   nurikabe    blank, clue 1..58, unshaded, shaded                   (61)
  102-127  tapa        blank, the 23 clue multisets, unshaded, shaded        (26)
  128-293  heyawake    cell (wall right?, wall below?, room number none|0..39)
                       = 4 x 41, then unshaded, shaded                       (166)

Labels use the answer tokens on cells the solver fills and copy the input token on cells it
cannot change (givens, walls, clues); pad stays pad (ignored by the loss). Heyawake cells are
all answer cells, so its labels are unshaded/shaded only.
"""

from __future__ import annotations

from itertools import product

from ptrm_cli.codec import Family
from ptrm_cli.vocab import PAD, Vocab

NURIKABE_MAX_CLUE = 58
HEYAWAKE_MAX_NUMBER = 39

#: every multiset of run lengths a tapa clue can show on an 8-cell ring (PPBENCH_FORMATS.md §6.1)
TAPA_CLUES: tuple[tuple[int, ...], ...] = (
    (0,), (1,), (2,), (3,), (4,), (5,), (6,), (7,), (8,),
    (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (2, 2), (2, 3), (2, 4), (3, 3),
    (1, 1, 1), (1, 1, 2), (1, 1, 3), (1, 2, 2),
    (1, 1, 1, 1),
)


def tapa_token(clue) -> str:
    return "tapa.clue." + ",".join(str(v) for v in sorted(clue))


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
    t += ["nurikabe.blank"] + [f"nurikabe.clue.{n}" for n in range(1, NURIKABE_MAX_CLUE + 1)]
    t += ["nurikabe.unshaded", "nurikabe.shaded"]
    t += ["tapa.blank"] + [tapa_token(c) for c in TAPA_CLUES] + ["tapa.unshaded", "tapa.shaded"]
    numbers = [None, *range(HEYAWAKE_MAX_NUMBER + 1)]
    t += [heyawake_token(r, b, n) for r, b in product((False, True), repeat=2) for n in numbers]
    t += ["heyawake.unshaded", "heyawake.shaded"]
    return t


PPBENCH = Family("ppbench", 10, 10, Vocab("ppbench", tuple(_ppbench_tokens())))
assert len(PPBENCH.vocab) == 294, len(PPBENCH.vocab)
