"""Nurikabe generator knobs that move puzzles toward designed ones (`stuck`, `big`, `theme`):
puzzles made with them are unique (a fresh solver on the clues read back from the record's
URL) and verified by the codec; each knob shows its effect (every big=1 puzzle has an island
of 10+, every theme=1 puzzle has equal clues, stuck=0 leaves fewer islands of 1); and puzzles
made without them are the records made before the knobs existed."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

pytest.importorskip("pysat")

from ptrm_cli.errors import PtrmError  # noqa: E402
from ptrm_cli.generate import get  # noqa: E402
from ptrm_cli.generate.base import GenerationFailed, Knobs, puzzle_rng  # noqa: E402
from ptrm_cli.generate.runner import Job, make_record  # noqa: E402

#: records made before the stuck / big / theme knobs existed: (seed, knobs, index) -> (url,
#: conflicts). Existing knobs must keep giving them (files are resumed and rebuilt from seeds);
#: seed 2 with max_island=20 is the start of the last training batch (data/gen2).
BEFORE = {
    (1, (), 0): ("https://puzz.link/p?nurikabe/10/10/1k2j4h2i4v4v3u6p3g7h9n1h1i", 798),
    (1, (), 1): ("https://puzz.link/p?nurikabe/10/10/i1i3g23r1j2t3h5i4l1g3v4l2j2g2k4i", 83),
    (2, (("max_island", 20),), 0): ("https://puzz.link/p?nurikabe/10/10/5n1l4l4p2i2i1i3j1r3h3n3"
                                    "j6s4i4", 123),
    (2, (("max_island", 20),), 1): ("https://puzz.link/p?nurikabe/10/10/1g1p4ibi4w2j1h6j3s2j2h3q"
                                    "1k1l3", 141),
    (4, (("max_island", 14), ("white", 0.5)), 2): ("https://puzz.link/p?nurikabe/10/10/j3h6i3t4i3"
                                                   "n2h1y8i2h5t3k1k1h4", 351),
}
#: sha256 (first 16 hex) of the pzprv3 text and stats of puzzles 0..n-1, made before the knobs
#: existed: ((rows, cols), seed, params, n) -> digest
BEFORE_DIGEST = {
    ((10, 10), 6, (("max_island", 12), ("repairs", 20), ("white", 0.5)), 3): "72be5d7f44904517",
    ((7, 7), 11, (), 3): "d51832a73d613b59",
}
#: the training knobs GENERATORS.md recommends
RECOMMENDED = {"stuck": 0.0, "max_island": 20.0, "repairs": 30.0, "big": 0.2, "theme": 0.1,
               "budget": 20000.0}


def test_existing_knobs_output_unchanged(installed_codec):
    installed_codec("nurikabe")
    for (seed, params, index), (url, conflicts) in BEFORE.items():
        rec = make_record(Job("nurikabe", 10, 10, seed, Knobs(params=dict(params))), index)
        assert (rec["url"], rec["difficulty"]["conflicts"]) == (url, conflicts)
    gen = get("nurikabe")
    for ((rows, cols), seed, params, n), digest in BEFORE_DIGEST.items():
        h = hashlib.sha256()
        for i in range(n):
            inst = gen.make(puzzle_rng(seed, "nurikabe", i), rows, cols, Knobs(params=dict(params)))
            h.update(gen.to_pzprv3(inst).encode())
            h.update(json.dumps(inst.stats, sort_keys=True).encode())
        assert h.hexdigest()[:16] == digest


def _checked(codec, rec):
    """The record's puzzle, re-solved from its URL: exactly one solution, the record's, which
    the codec verifies."""
    gen = get("nurikabe")
    puzzle, solution = codec.from_record(rec)
    assert codec.verify(puzzle, solution) == []
    inst = gen.read_url(rec["url"])
    sols, _ = gen.solve(inst, limit=2)
    assert len(sols) == 1, rec["id"]
    inst.answer = sols[0]
    assert codec.parse(gen.to_pzprv3(inst)).solution == solution
    return inst


def test_big_islands(installed_codec):
    codec = installed_codec("nurikabe")
    job = Job("nurikabe", 10, 10, 3, Knobs(params={"big": 1, "max_island": 14, "stuck": 0,
                                                   "repairs": 30, "budget": 20000}))
    inst = _checked(codec, make_record(job, 0))
    assert 10 <= max(inst.clues.values()) <= 14


@pytest.mark.parametrize("theme_max", [4, 5])
def test_themes(installed_codec, theme_max):
    codec = installed_codec("nurikabe")
    job = Job("nurikabe", 7, 7, 3, Knobs(params={"theme": 1, "theme_max": theme_max}))
    sizes = set()
    for i in range(4):
        inst = _checked(codec, make_record(job, i))
        values = set(inst.clues.values())
        assert len(values) == 1 and 3 <= min(values) <= theme_max
        sizes |= values
    assert len(sizes) > 1  # the size is drawn per puzzle


def test_stuck_seeds_give_fewer_ones():
    gen = get("nurikabe")

    def ones(stuck) -> int:
        count = 0
        for i in range(30):
            try:
                island = gen.random_solution(puzzle_rng(0, "nurikabe", i), 10, 10,
                                             Knobs(params={"stuck": stuck}))
            except GenerationFailed:
                continue
            count += int((np.bincount(island[island >= 0]) == 1).sum())
        return count

    assert ones(0) < 0.7 * ones(1)


def test_budget_drops_runaway_checks():
    """A puzzle whose re-check needs more conflicts than the budget is dropped in `attempt`;
    no budget (0) checks nothing more."""
    gen = get("nurikabe")
    inst = gen.make(puzzle_rng(1, "nurikabe", 0), 10, 10, Knobs())  # 798 conflicts (BEFORE)
    gen._fresh_check(inst, 0)
    gen._fresh_check(inst, 10**6)
    with pytest.raises(GenerationFailed):
        gen._fresh_check(inst, 100)


def test_recommended_knobs(installed_codec):
    codec = installed_codec("nurikabe")
    job = Job("nurikabe", 10, 10, 3, Knobs(params=RECOMMENDED))
    _checked(codec, make_record(job, 1))


def test_knob_checks():
    gen = get("nurikabe")
    gen.check_params(Knobs(params=RECOMMENDED))
    for params in ({"big": 0.5}, {"big": 0.5, "max_island": 9}, {"theme": 1.5},
                   {"stuck": -1}, {"theme": 0.1, "theme_max": 6}, {"theme_max": 2},
                   {"budget": -1}):
        with pytest.raises(PtrmError):
            gen.check_params(Knobs(params=params))
