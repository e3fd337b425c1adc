"""Our PPBench codecs against pzpr.js, the engine PPBench itself checks answers with.

For every golden puzzle of the six types (every size):
  * pzpr.js replays the PPBench moves to a complete board (the oracle itself works);
  * our decoded solution (`codec.from_record`) is the board the moves solve to, and pzpr.js
    accepts it as complete, both set as cells on the URL's board and as our pzprv3 text;
  * our URL, re-read by pzpr.js, is the same puzzle, and our pzprv3 text is byte for byte the
    file pzpr.js writes;
  * our verifier agrees with pzpr.js, verdict and first fail code, on ~40 nearby and random
    boards per puzzle (seeded), all sent through the one node process.

Types whose codec is not installed yet skip. The agreement tally is printed at the end of the
run (see conftest.py) and kept in `pzpr_oracle.AGREEMENT`.
"""

from __future__ import annotations

import zlib

import numpy as np
import pytest

import pzpr_oracle
from pzpr_oracle import GOLDEN_TYPES, cells_for, compare_verifier, golden_params, nearby_states

pytestmark = pytest.mark.node

RECORDS = golden_params(GOLDEN_TYPES)


def _url(record):
    return record.get("puzzlink_url") or record["puzzle_url"]


def _moves(record, which="moves_full"):
    from ptrm_codecs import formats

    return formats.decode_solution(record)[which]


def _decoded(record, installed_codec):
    codec = installed_codec(record["pid"])
    puzzle, solution = codec.from_record(record, source=pzpr_oracle.record_id(record))
    return codec, puzzle, solution


def _answer_fields(codec, cells):
    """The fields that decide completion: qans (anum for sudoku) on the answer cells."""
    k = 2 if codec.name == "sudoku" else 0
    return [cell[k] for cell in cells]


# -- the oracle on its own ---------------------------------------------------------------------

def test_oracle_replays_every_golden_solution(pzpr):
    """pzpr.js under our driver: PPBench's moves_required complete every golden board of the six
    types, the empty board does not (PPBENCH_FORMATS.md §5). Needs no codec; moves_full is
    replayed per puzzle in test_pzpr_accepts_our_solution."""
    records = [rec for pid in GOLDEN_TYPES for rec in pzpr_oracle.golden_by_type(pid)]
    if not records:
        pytest.skip(pzpr_oracle.find_golden()[1])
    requests = []
    for rec in records:
        requests += [{"url": _url(rec), "moves": _moves(rec, "moves_required")},
                     {"url": _url(rec)}]
    answers = pzpr.ask(requests)
    assert not [a for a in answers if "error" in a], [a for a in answers if "error" in a][:3]
    solved, empty = answers[0::2], answers[1::2]
    assert [pzpr_oracle.record_id(r) for r, a in zip(records, solved) if not a["complete"]] == []
    assert [pzpr_oracle.record_id(r) for r, a in zip(records, empty) if a["complete"]] == []


# -- (a) pzpr.js accepts what we decode and write ----------------------------------------------

@pytest.mark.parametrize("record", RECORDS)
def test_pzpr_accepts_our_solution(record, pzpr, installed_codec):
    codec, puzzle, solution = _decoded(record, installed_codec)
    url = _url(record)
    moves = _moves(record)
    cells = cells_for(codec, puzzle, solution.grid)
    replayed, as_cells, as_file = pzpr.ask([
        {"url": url, "moves": moves, "want": ["cells"]},
        {"url": url, "cells": cells},
        {"file": codec.to_pzprv3(puzzle, solution), "want": ["cells"]},
    ])
    for answer in (replayed, as_cells, as_file):
        assert "error" not in answer, answer
    assert replayed["complete"], f"pzpr.js: PPBench's moves_full end in {replayed['code']}"
    # our decode is the board pzpr.js reaches by replaying PPBench's moves
    ours = _answer_fields(codec, cells)
    theirs = [None if o is None else t for o, t in zip(ours, _answer_fields(codec, replayed["cells"]))]
    assert ours == theirs, "from_record's grid differs from pzpr.js's replay of moves_full"
    assert as_cells["refused"] == [], f"pzpr.js refused our values at cells {as_cells['refused']}"
    assert as_cells["complete"], f"pzpr.js rejects our solution set as cells: {as_cells['code']}"
    assert as_file["complete"], f"pzpr.js rejects our pzprv3 text: {as_file['code']}"
    read_back = [None if o is None else t for o, t in zip(ours, _answer_fields(codec, as_file["cells"]))]
    assert ours == read_back, "pzpr.js reads a different answer out of our pzprv3 text"


@pytest.mark.parametrize("record", RECORDS)
def test_our_url_is_the_same_puzzle(record, pzpr, installed_codec):
    codec, puzzle, _ = _decoded(record, installed_codec)
    golden, ours = pzpr.ask([{"url": _url(record), "want": ["url"]},
                             {"url": codec.to_url(puzzle), "want": ["url"]}])
    assert "error" not in ours, ours
    strip = lambda u: u.split("?", 1)[1]  # pzv.jp vs puzz.link host
    assert strip(ours["url"]) == strip(golden["url"])


@pytest.mark.parametrize("record", RECORDS)
def test_our_pzprv3_is_pzprs_file(record, pzpr, installed_codec):
    """Byte for byte what pzpr.js's getFileData() writes, for the bare puzzle (a fresh board)
    and for the solution. Dots never matter to checking, so codecs drop them and write the
    file pzpr.js writes after PPBench's moves_required; heyawake writes the one after
    moves_full, which dots every unshaded cell (see each codec's docstring)."""
    codec, puzzle, solution = _decoded(record, installed_codec)
    moves = _moves(record, "moves_full" if codec.name == "heyawake" else "moves_required")
    bare, solved = pzpr.ask([{"url": _url(record), "want": ["file"]},
                             {"url": _url(record), "moves": moves, "want": ["file"]}])
    assert codec.to_pzprv3(puzzle) == bare["file"]
    assert codec.to_pzprv3(puzzle, solution) == solved["file"]


# -- (b) our verifier agrees with pzpr.js ------------------------------------------------------

@pytest.mark.parametrize("record", RECORDS)
def test_verifier_agrees_with_pzpr(record, pzpr, installed_codec):
    """Verdict and first fail code, ours vs pzpr.js, on ~40 boards set as cells on the URL's
    board; every 4th board is also sent as our pzprv3 text (not for heyawake, whose vendored
    pzprv3 form drops loose borders, PPBENCH_FORMATS.md §4.4)."""
    codec, puzzle, solution = _decoded(record, installed_codec)
    url = _url(record)
    states = nearby_states(codec, puzzle, solution, np.random.default_rng(zlib.crc32(url.encode())))
    mismatches = compare_verifier(pzpr, codec, puzzle, url, states,
                                  file_every=None if codec.name == "heyawake" else 4)
    assert not mismatches, f"{len(mismatches)} disagree:\n" + "\n".join(mismatches)
