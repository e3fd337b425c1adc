"""Tapa and heyawake generators: a small batch per type made through the runner's codec
hand-off, each puzzle re-checked unique by the generator's solver and by an independent
encoding here (another SAT solver, the codec's own rule helpers, our own connectivity cuts),
verified by the codec (and by pzpr.js when the oracle is available), round-tripped through
to_record -> from_record; determinism per (seed, index), across processes too; the knobs;
the encodings against the golden PPBench puzzles (each must have exactly its one solution);
tapa "?" clues (qmarks) and the corridor/shape knobs, and default output unchanged by them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pysat")

from pysat.card import CardEnc, EncType  # noqa: E402
from pysat.solvers import Solver  # noqa: E402

from ptrm_cli.generate import get  # noqa: E402
from ptrm_cli.generate.base import Instance, Knobs  # noqa: E402
from ptrm_cli.generate.runner import Job, make_instance, make_record  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
from shared_data import GOLDEN  # noqa: E402
TYPES = ("tapa", "heyawake")
SEED = 7
N = {"tapa": 4, "heyawake": 3}


@pytest.fixture(scope="module")
def batch(installed_codec):
    """{type: [(instance, record)]} for indices 0..N-1 at 10x10, default knobs."""
    out = {}
    for name in TYPES:
        installed_codec(name)
        job = Job(name, 10, 10, SEED, Knobs())
        out[name] = [(make_instance(job, i), make_record(job, i)) for i in range(N[name])]
    return out


# -- an independent uniqueness check ---------------------------------------------------------

def _cuts(rows, cols, on, lit):
    """Cuts for "the cells where on(cell) are 4-connected" when they are not: for each
    component C, with outer boundary B, x in C and z in another component: some cell of B
    on, or x off, or z off. `lit(cell)` is the literal of "cell is on"."""
    comps, seen = [], set()
    for r0 in range(rows):
        for c0 in range(cols):
            if (r0, c0) in seen or not on(r0, c0):
                continue
            comp, stack = {(r0, c0)}, [(r0, c0)]
            seen.add((r0, c0))
            while stack:
                r, c = stack.pop()
                for n in ((r - 1, c), (r + 1, c), (r, c - 1), (r, c + 1)):
                    if 0 <= n[0] < rows and 0 <= n[1] < cols and on(*n) and n not in seen:
                        seen.add(n)
                        comp.add(n)
                        stack.append(n)
            comps.append(((r0, c0), comp))
    cuts = []
    for k, (x, comp) in enumerate(comps if len(comps) > 1 else []):
        z = comps[k - 1][0] if k else comps[1][0]
        wall = {(r + dr, c + dc) for r, c in comp for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
                if 0 <= r + dr < rows and 0 <= c + dc < cols and (r + dr, c + dc) not in comp}
        cuts.append([lit(b) for b in sorted(wall)] + [-lit(x), -lit(z)])
    return cuts


def _solutions(rows, cols, clauses, connected_shaded: bool, limit=2):
    """Up to `limit` answer grids of `clauses` (cell (r, c) = variable r*cols+c+1, true =
    shaded) plus connectivity (of shaded cells, or of unshaded ones), by lazy cuts, with
    Glucose (the generators use CaDiCaL)."""
    var = lambda r, c: r * cols + c + 1  # noqa: E731
    sign = 1 if connected_shaded else -1
    lit = lambda rc: sign * var(*rc)  # noqa: E731
    found = []
    with Solver(name="glucose4", bootstrap_with=clauses) as s:
        while len(found) < limit and s.solve():
            model = set(s.get_model())
            cuts = _cuts(rows, cols, lambda r, c: lit((r, c)) in model, lit)
            for cut in cuts:
                s.add_clause(cut)
            if cuts:
                continue
            grid = np.array([[int(var(r, c) in model) for c in range(cols)] for r in range(rows)])
            found.append(grid)
            s.add_clause([-v if v in model else v for v in range(1, rows * cols + 1)])
    return found


def _tapa_clauses(puzzle):
    from ptrm_codecs.tapa import clue_met, ring_runs

    rows, cols = puzzle.rows, puzzle.cols
    var = lambda r, c: r * cols + c + 1  # noqa: E731
    clauses = [[var(r, c) for r in range(rows) for c in range(cols)]]
    for r in range(rows - 1):
        for c in range(cols - 1):
            clauses.append([-var(r, c), -var(r + 1, c), -var(r, c + 1), -var(r + 1, c + 1)])
    for r in range(rows):
        for c in range(cols):
            clue = puzzle.clues[r][c]
            if not clue:
                continue
            clauses.append([-var(r, c)])
            ring = [(r + dr, c + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)
                    if (dr or dc) and 0 <= r + dr < rows and 0 <= c + dc < cols]
            for mask in range(1 << len(ring)):  # forbid every ring assignment the codec rejects
                shaded = np.zeros((rows, cols), dtype=bool)
                for k, x in enumerate(ring):
                    shaded[x] = bool(mask >> k & 1)
                if not clue_met(clue, ring_runs(shaded, r, c)):
                    clauses.append([-var(*x) if shaded[x] else var(*x) for x in ring])
    return clauses, rows * cols


def _heyawake_clauses(puzzle):
    board = puzzle.clues
    rows, cols = board.shape
    var = lambda r, c: r * cols + c + 1  # noqa: E731
    top = rows * cols
    clauses = [[var(r, c) for r in range(rows) for c in range(cols)]]
    for r in range(rows):
        for c in range(cols):
            if r + 1 < rows:
                clauses.append([-var(r, c), -var(r + 1, c)])
            if c + 1 < cols:
                clauses.append([-var(r, c), -var(r, c + 1)])
    lines = [[(r, c) for c in range(cols)] for r in range(rows)]
    lines += [[(r, c) for r in range(rows)] for c in range(cols)]
    for line in lines:  # every stretch that crosses two or more borders holds a shaded cell
        for a in range(len(line)):
            for b in range(a + 2, len(line)):
                walls = sum(board.wall(x, y) for x, y in zip(line[a:b], line[a + 1:b + 1]))
                if walls >= 2:
                    clauses.append([var(*x) for x in line[a:b + 1]])
    for room in board.rooms():
        numbers = [int(board.numbers[x]) for x in room if board.numbers[x] >= 0]
        if numbers:
            cnf = CardEnc.equals(lits=[var(*x) for x in room], bound=numbers[0], top_id=top,
                                 encoding=EncType.totalizer)
            top = max(top, cnf.nv)
            clauses += cnf.clauses
    return clauses, top


def independent_solutions(name, puzzle):
    if name == "tapa":
        clauses, top = _tapa_clauses(puzzle)
    else:
        clauses, top = _heyawake_clauses(puzzle)
    return _solutions(puzzle.rows, puzzle.cols, clauses, connected_shaded=name == "tapa")


# -- the batch ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", TYPES)
def test_batch_unique_valid_and_round_trips(batch, installed_codec, name):
    codec = installed_codec(name)
    gen = get(name)
    for inst, rec in batch[name]:
        assert rec["type"] == name and rec["source"] == "generated" and rec["seed"] == SEED
        puzzle, solution = codec.from_record(rec)
        assert (puzzle.rows, puzzle.cols) == (10, 10)
        assert codec.verify(puzzle, solution) == []
        # the generator's own solver, fresh: exactly one solution, ours
        sols, stats = gen.solve(inst)
        assert len(sols) == 1 and (sols[0] == inst.answer).all()
        assert rec["difficulty"]["conflicts"] == inst.stats["difficulty"]["conflicts"]
        # an independent encoding of the codec's puzzle: exactly one solution, the record's
        other = independent_solutions(name, puzzle)
        assert len(other) == 1, f"{rec['id']} has {len(other)} solutions"
        assert (other[0] == solution.grid).all()
        # the record round-trips, and the text hand-off kept everything
        again = codec.to_record(puzzle, solution, **{k: v for k, v in rec.items()
                                                      if k not in ("type", "url", "answer")})
        assert again == rec
        p2, s2 = codec.from_record(again)
        assert codec.key(p2) == codec.key(puzzle) and s2 == solution
        parsed = codec.parse(gen.to_pzprv3(inst))
        assert codec.key(parsed.puzzle) == codec.key(puzzle) and parsed.solution == solution
        # usable by build-data: every clue has a PPBench token
        codec.encode(puzzle, solution)
        codec.encode_label(puzzle, solution)


def test_tapa_clues_are_vocabulary_multisets(batch):
    from ptrm_codecs.families import TAPA_CLUES

    for inst, _ in batch["tapa"]:
        assert inst.clues and all(tuple(sorted(v)) in TAPA_CLUES for v in inst.clues.values())
        assert all(inst.answer[rc] == 0 for rc in inst.clues)  # clue cells are never shaded
        assert 5 <= len(inst.clues) <= 30


def test_heyawake_rooms_and_numbers(batch):
    from ptrm_cli.generate.heyawake import rooms_of, top_cell

    for inst, _ in batch["heyawake"]:
        rooms = rooms_of(inst.fixed)
        assert 12 <= len(rooms) <= 40
        for room in rooms:  # rectangles, at most 4x4
            rs, cs = [r for r, _ in room], [c for _, c in room]
            h, w = max(rs) - min(rs) + 1, max(cs) - min(cs) + 1
            assert h * w == len(room) and max(h, w) <= 7 and min(h, w) <= 4
        tops = {top_cell(room): room for room in rooms}
        for rc, n in inst.clues.items():
            assert 0 <= n <= 39 and n == sum(int(inst.answer[x]) for x in tops[rc])


def test_pzpr_accepts_the_batch(batch, pzpr):
    """pzpr.js (PPBench's reference engine) judges each generated solution complete."""
    for name in TYPES:
        gen = get(name)
        for inst, rec in batch[name]:
            verdict = pzpr.check_file(gen.to_pzprv3(inst))
            assert verdict["complete"], (rec["id"], verdict)


# -- determinism -------------------------------------------------------------------------------

def test_deterministic_per_seed_and_index(batch):
    for name in TYPES:
        job = Job(name, 10, 10, SEED, Knobs())
        assert make_record(job, 1) == batch[name][1][1]
        assert batch[name][0][1]["url"] != batch[name][1][1]["url"]
        assert make_record(Job(name, 10, 10, SEED + 1, Knobs()), 0) != batch[name][0][1]


def test_deterministic_across_processes(batch):
    """Another interpreter (another hash seed) makes the same records."""
    code = ("import json,sys\n"
            "from ptrm_cli.generate.runner import Job, make_record\n"
            "from ptrm_cli.generate.base import Knobs\n"
            f"for name in {TYPES!r}:\n"
            f"    print(json.dumps(make_record(Job(name, 10, 10, {SEED}, Knobs()), 0)))\n")
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=ROOT, check=True).stdout.splitlines()
    assert [json.loads(line) for line in out] == [batch[name][0][1] for name in TYPES]


# -- knobs -------------------------------------------------------------------------------------

def _unique_without_each(gen, inst):
    """For every clue: the puzzle without it has more than one solution."""
    for rc in inst.clues:
        less = Instance(inst.rows, inst.cols, {k: v for k, v in inst.clues.items() if k != rc},
                        fixed=inst.fixed)
        if len(gen.solve(less)[0]) < 2:
            return False
    return True


def test_tapa_minimal_by_default_and_max_clues(batch):
    gen = get("tapa")
    inst = batch["tapa"][0][0]
    assert _unique_without_each(gen, inst)
    dense = make_instance(Job("tapa", 10, 10, SEED, Knobs(max_clues=25)), 0)
    assert len(dense.clues) == 25
    full = make_instance(Job("tapa", 10, 10, SEED, Knobs(minimal=False)), 0)
    assert len(full.clues) == int((full.answer == 0).sum())  # every unshaded cell
    assert len(gen.solve(full)[0]) == 1


def test_heyawake_numbered_and_minimal():
    from ptrm_cli.generate.heyawake import rooms_of

    gen = get("heyawake")
    minimal = make_instance(Job("heyawake", 10, 10, SEED, Knobs(params={"numbered": 0})), 0)
    assert _unique_without_each(gen, minimal)
    full = make_instance(Job("heyawake", 10, 10, SEED, Knobs(minimal=False)), 0)
    assert len(full.clues) == len(rooms_of(full.fixed))
    assert len(gen.solve(full)[0]) == 1


def test_unknown_param_is_refused():
    from ptrm_cli.errors import PtrmError

    for name in TYPES:
        with pytest.raises(PtrmError):
            get(name).check_params(Knobs(params={"nope": 1}))


# -- the encodings on real puzzles ---------------------------------------------------------------

def _golden(name):
    if not GOLDEN.exists():
        pytest.skip(f"golden set not found at {GOLDEN}")
    recs = [json.loads(line) for line in GOLDEN.read_text().splitlines() if line.strip()]
    return [r for r in recs if r["pid"] == name and f"?{name}/10/10/" in r["puzzlink_url"]]


@pytest.mark.parametrize("name", TYPES)
def test_golden_10x10_have_exactly_their_solution(installed_codec, name):
    """read_url + solve on real puzzles ("?" clues included): one solution, PPBench's."""
    codec, gen = installed_codec(name), get(name)
    recs = _golden(name)
    assert recs
    for rec in recs:
        _, solution = codec.from_record(rec)
        sols, _ = gen.solve(gen.read_url(rec["puzzlink_url"]))
        assert len(sols) == 1 and (sols[0] == solution.grid).all(), rec["puzzlink_url"]


# -- tapa "?" clues and the golden-shape knobs ------------------------------------------------

#: records made before the qmarks / corridor / shape knobs existed: (seed, knobs, index) -> (url,
#: conflicts). Default knobs must keep giving them (files are resumed and rebuilt from seeds).
BEFORE = {
    (0, (), 0): ("https://puzz.link/p?tapa/10/10/k5s2h2kblk3hagr3gag7ia96sa9n5ialgagg3p", 17),
    (0, (), 1): ("https://puzz.link/p?tapa/10/10/ga8ha9pafa9h4gagta7h5gaaia9raai5g5ra8l5i7ha8n",
                 15),
    (0, (), 2): ("https://puzz.link/p?tapa/10/10/ka9s5haegagk5u5h3ha9i4i3g3oa8la8gaasa9i1", 16),
    (1, (("tries", 5),), 0): ("https://puzz.link/p?tapa/10/10/2qa9h7labja8m3naehafibmyafha9oblga"
                              "eg5q", 59),
    (1, (("tries", 5),), 1): ("https://puzz.link/p?tapa/10/10/i3m6iafhafj7laetaghafiaexagg6haggag"
                              "nbmh2ga7l2", 27),
}
QKNOBS = {"qmarks": 1.0}  # hide every clue that can be hidden
RECOMMENDED = {"shape": 0.1, "corridor": 2.0, "tries": 5.0, "qmarks": 0.1}


def test_tapa_default_output_unchanged(installed_codec):
    installed_codec("tapa")
    for (seed, params, index), (url, conflicts) in BEFORE.items():
        rec = make_record(Job("tapa", 10, 10, seed, Knobs(params=dict(params))), index)
        assert (rec["url"], rec["difficulty"]["conflicts"]) == (url, conflicts)
    rec = make_record(Job("tapa", 10, 10, 2, Knobs(max_clues=25)), 0)
    assert rec["url"] == ("https://puzz.link/p?tapa/10/10/l1j7g6h2gagla9h7hbnaehafkaek6abg1a8la8"
                          "ia9bniafbnqaeiaag7haeka7j")


@pytest.fixture(scope="module")
def qbatch(installed_codec):
    """[(knobs params, instance, record)]: 4 puzzles with every hideable clue hidden, 2 with the
    recommended training knobs."""
    installed_codec("tapa")
    out = []
    for params, n in ((QKNOBS, 4), (RECOMMENDED, 2)):
        job = Job("tapa", 10, 10, SEED, Knobs(params=params))
        out += [(params, make_instance(job, i), make_record(job, i)) for i in range(n)]
    return out


def test_tapa_qmarks_unique_verified_and_round_trip(qbatch, installed_codec):
    from ptrm_codecs.families import TAPA_CLUES
    from ptrm_codecs.tapa import UNKNOWN

    codec, gen = installed_codec("tapa"), get("tapa")
    for params, inst, rec in qbatch:
        hidden = [c for c in inst.clues.values() if UNKNOWN in c]
        if params is QKNOBS:
            assert hidden, rec["id"]  # qmarks=1: every puzzle of the batch has a "?"
        # "?" clues are all-"?" (the run count kept), each a token of the PPBench vocabulary
        assert all(set(c) == {UNKNOWN} and tuple(sorted(c)) in TAPA_CLUES for c in hidden)
        assert all(inst.answer[rc] == 0 for rc in inst.clues)
        puzzle, solution = codec.from_record(rec)
        assert codec.verify(puzzle, solution) == []
        assert sum(UNKNOWN in c for row in puzzle.clues for c in row) == len(hidden)
        # a fresh solver of the generator, and the independent encoding (codec's clue_met)
        sols, _ = gen.solve(inst)
        assert len(sols) == 1 and (sols[0] == inst.answer).all()
        other = independent_solutions("tapa", puzzle)
        assert len(other) == 1 and (other[0] == solution.grid).all(), rec["id"]
        # round trips: record, URL (a "?" is '.' or a 0 component), pzprv3, tokens
        again = codec.to_record(puzzle, solution, **{k: v for k, v in rec.items()
                                                      if k not in ("type", "url", "answer")})
        assert again == rec
        assert codec.key(codec.parse(rec["url"]).puzzle) == codec.key(puzzle)
        assert codec.parse(codec.to_url(puzzle)).puzzle.clues == puzzle.clues
        parsed = codec.parse(gen.to_pzprv3(inst))
        assert codec.key(parsed.puzzle) == codec.key(puzzle) and parsed.solution == solution
        codec.encode(puzzle, solution)
        codec.encode_label(puzzle, solution)


def test_tapa_qmarks_hide_clues_of_the_same_minimal_puzzle(qbatch):
    """qmarks only hides clues of the puzzle the other knobs make (the same draws come first),
    never a 0, and the set stays minimal."""
    gen = get("tapa")
    for i, (_, inst, _) in enumerate(qbatch[:4]):
        plain = make_instance(Job("tapa", 10, 10, SEED, Knobs()), i)
        assert (plain.answer == inst.answer).all() and set(plain.clues) == set(inst.clues)
        for rc, clue in inst.clues.items():
            was = plain.clues[rc]
            assert clue == was or (set(clue) == {-2} and len(clue) == len(was) and was != (0,))
    assert _unique_without_each(gen, qbatch[0][1])


def test_tapa_qmarks_fraction():
    """qmarks=F hides about F of the clues (fewer where no more can go)."""
    gen = get("tapa")
    counts = []
    for i in range(8):
        inst = make_instance(Job("tapa", 10, 10, SEED, Knobs(params={"qmarks": 0.15})), i)
        counts.append((sum(-2 in c for c in inst.clues.values()), len(inst.clues)))
    hidden, total = map(sum, zip(*counts))
    assert 0.05 <= hidden / total <= 0.2, counts
    assert gen.clue_stats(inst)["qmarks"] == counts[-1][0] / counts[-1][1]


def test_tapa_pzpr_accepts_qmarks(qbatch, pzpr):
    gen = get("tapa")
    for _, inst, rec in qbatch:
        verdict = pzpr.check_file(gen.to_pzprv3(inst))
        assert verdict["complete"], (rec["id"], verdict)


def test_tapa_shape_and_corridor_knobs():
    """shape reshapes the random solution towards corridor clues (still a valid solution, as
    many shaded cells); corridor keeps more of them; together: unique minimal puzzles."""
    from ptrm_cli.generate.base import puzzle_rng
    from ptrm_cli.generate.sat import components
    from ptrm_cli.generate.tapa import CORRIDOR, clue_of

    gen = get("tapa")

    def corridor_cells(grid):
        return sum(clue_of(grid, r, c) in CORRIDOR for r in range(10) for c in range(10)
                   if not grid[r, c])

    before = after = 0
    for i in range(6):
        rng = puzzle_rng(SEED, "tapa", 100 + i)
        grid = gen.random_solution(rng, 10, 10, Knobs())
        shaped = gen.reshape(rng, grid, 0.1)
        assert shaped.sum() == grid.sum()
        assert not any(shaped[r:r + 2, c:c + 2].all() for r in range(9) for c in range(9))
        assert len(components(10, 10, lambda r, c: bool(shaped[r, c]))) == 1
        assert corridor_cells(shaped) >= corridor_cells(grid)
        before, after = before + corridor_cells(grid), after + corridor_cells(shaped)
    assert after >= 2 * before
    inst = make_instance(Job("tapa", 10, 10, SEED, Knobs(params={"shape": 0.1, "corridor": 2})), 0)
    assert _unique_without_each(gen, inst)
    sols, _ = gen.solve(inst)
    assert len(sols) == 1 and (sols[0] == inst.answer).all()
