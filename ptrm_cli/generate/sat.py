"""SAT helpers shared by the generators: a clause builder with cardinality constraints, a
solver loop that adds lazy cuts for global rules (CEGAR), uniqueness by a blocking clause,
connectivity cuts, and the difficulty signal.

Every type module builds one `Formula` of its *local* rules (clauses over cell variables, with
each removable clue behind a selector literal), and supplies a `check(model) -> cuts` function
for its *global* rules (connectivity, island sizes). `Search.solve` alternates SAT calls and
cuts until the model satisfies every rule, so a model it returns is a real solution, and UNSAT
means no real solution exists: the cuts are all implied by the rules, never approximations.

Uniqueness of a puzzle whose solution S is known: add once the clause "the answer differs from
S somewhere" behind a selector d; then "unique" is "no real solution under the active clues
and d". Removing clues only adds solutions, so S stays a solution throughout a removal loop
and the same clause serves every check.

Solver: CaDiCaL 1.9.5 through python-sat. It is deterministic for a given clause order, so a
puzzle built from a seeded RNG comes out the same in any process.
"""

from __future__ import annotations

from collections import deque
from typing import Callable, Iterable, Sequence

from pysat.card import CardEnc, EncType
from pysat.solvers import Solver

from .base import OverBudget

SOLVER = "cadical195"

Cut = list[int]
Check = Callable[[set[int]], list[Cut]]


class Formula:
    """Variables and clauses. `var()` hands out fresh ids; cardinality encodings take theirs
    from the same counter. `guard` (a literal) makes a constraint conditional: every clause gets
    `-guard` added, so the constraint holds only when the guard is true."""

    def __init__(self) -> None:
        self.top = 0
        self.clauses: list[list[int]] = []

    def var(self) -> int:
        self.top += 1
        return self.top

    def vars(self, n: int) -> list[int]:
        return [self.var() for _ in range(n)]

    def add(self, clause: Iterable[int], guard: int | None = None) -> None:
        clause = list(clause)
        if guard is not None:
            clause.append(-guard)
        self.clauses.append(clause)

    def _card(self, lits: Sequence[int], k: int, guard: int | None) -> None:
        cnf = CardEnc.atmost(lits=list(lits), bound=k, top_id=self.top, encoding=EncType.seqcounter)
        self.top = max(self.top, cnf.nv)
        for cl in cnf.clauses:
            self.add(cl, guard)

    def at_most(self, lits: Sequence[int], k: int, guard: int | None = None) -> None:
        lits = list(lits)
        if k >= len(lits):
            return
        if k < 0:
            self.add([], guard)
        elif k == 0:
            for lit in lits:
                self.add([-lit], guard)
        elif k == 1 and len(lits) <= 6:
            for i, a in enumerate(lits):
                for b in lits[i + 1:]:
                    self.add([-a, -b], guard)
        else:
            self._card(lits, k, guard)

    def at_least(self, lits: Sequence[int], k: int, guard: int | None = None) -> None:
        lits = list(lits)
        if k <= 0:
            return
        if k > len(lits):
            self.add([], guard)
        elif k == len(lits):
            for lit in lits:
                self.add([lit], guard)
        elif k == 1:
            self.add(lits, guard)
        else:  # at least k of lits == at most n-k of their negations
            self.at_most([-lit for lit in lits], len(lits) - k, guard)

    def exactly(self, lits: Sequence[int], k: int, guard: int | None = None) -> None:
        self.at_most(lits, k, guard)
        self.at_least(lits, k, guard)

    def solver(self) -> Solver:
        return Solver(name=SOLVER, bootstrap_with=self.clauses)


class Search:
    """A solver plus the lazy cuts of the global rules. `solve` returns a model (the set of true
    literals) that satisfies every rule, or None when none exists under the assumptions."""

    def __init__(self, formula: Formula, check: Check | None = None):
        self.formula = formula
        self.solver = formula.solver()
        self.check = check
        self.calls = 0
        self.cuts = 0

    def add(self, clause: Iterable[int]) -> None:
        self.solver.add_clause(list(clause))

    def new_var(self) -> int:
        return self.formula.var()

    def solve(self, assumptions: Sequence[int] = (), budget: int = 0) -> set[int] | None:
        """budget: the conflicts this search may have spent in all (this call and earlier
        ones) when it returns; past it, OverBudget. 0: no limit."""
        while True:
            self.calls += 1
            if budget:
                left = budget - self.stats()["conflicts"]
                if left <= 0:
                    raise OverBudget
                self.solver.conf_budget(left)
                done = self.solver.solve_limited(assumptions=list(assumptions))
                if done is None:
                    raise OverBudget
            else:
                done = self.solver.solve(assumptions=list(assumptions))
            if not done:
                return None
            model = set(self.solver.get_model())
            cuts = self.check(model) if self.check else []
            if not cuts:
                return model
            for cut in cuts:
                self.cuts += 1
                self.solver.add_clause(cut)

    def set_phases(self, lits: Sequence[int]) -> None:
        """Preferred polarity of variables (randomised solutions)."""
        self.solver.set_phases(list(lits))

    def forbid(self, answer: Sequence[int]) -> int:
        """Add "the answer differs from these literals somewhere" behind a new selector, and
        return the selector; assume it to ask for a second solution."""
        d = self.new_var()
        self.solver.add_clause([-d] + [-lit for lit in answer])
        return d

    def stats(self) -> dict:
        s = self.solver.accum_stats() or {}
        return {"conflicts": int(s.get("conflicts", 0)), "decisions": int(s.get("decisions", 0)),
                "propagations": int(s.get("propagations", 0)), "sat_calls": self.calls,
                "cuts": self.cuts}

    def close(self) -> None:
        self.solver.delete()

    def __enter__(self) -> "Search":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def solutions(search: Search, answer_vars: Sequence[int], assumptions: Sequence[int] = (),
              limit: int = 2) -> list[set[int]]:
    """Up to `limit` real solutions, distinct on `answer_vars` (blocking clause after each)."""
    found = []
    selectors: list[int] = []
    while len(found) < limit:
        model = search.solve(list(assumptions) + selectors)
        if model is None:
            break
        found.append(model)
        selectors.append(search.forbid([v if v in model else -v for v in answer_vars]))
    return found


def reduce_clues(search: Search, differ: int, clues: Sequence[int], order: Sequence[int],
                 fixed: Sequence[int] = (), target: int | None = None) -> list[int]:
    """Greedy clue removal: `clues` are selector literals (all true = the full puzzle, which
    must be unique), tried for removal in `order` (indices into clues). A removal is kept while
    no other solution appears (`differ` from `Search.forbid`). Stops at `target` clues if given,
    else returns a minimal clue set (no single clue can go). `fixed` are always assumed. A clue
    that is off is simply not assumed, so a clue literal may be the answer variable itself
    (sudoku givens) or a selector that switches the clue's clauses on."""
    active = [True] * len(clues)
    count = len(clues)
    for i in order:
        if target is not None and count <= target:
            break
        active[i] = False
        assume = list(fixed) + [differ] + [c for c, on in zip(clues, active) if on]
        if search.solve(assume) is not None:
            active[i] = True  # needed now, and for good: fewer clues never remove solutions
        else:
            count -= 1
    return [c for c, on in zip(clues, active) if on]


# -- grid helpers ----------------------------------------------------------------------------

def neighbours(rows: int, cols: int, r: int, c: int):
    if r > 0:
        yield r - 1, c
    if r + 1 < rows:
        yield r + 1, c
    if c > 0:
        yield r, c - 1
    if c + 1 < cols:
        yield r, c + 1


def components(rows: int, cols: int,
               inside: Callable[[int, int], bool]) -> list[list[tuple[int, int]]]:
    """4-connected components of the cells where `inside(r, c)`, each in BFS order."""
    seen = [[False] * cols for _ in range(rows)]
    out = []
    for r0 in range(rows):
        for c0 in range(cols):
            if seen[r0][c0] or not inside(r0, c0):
                continue
            comp, queue = [], deque([(r0, c0)])
            seen[r0][c0] = True
            while queue:
                r, c = queue.popleft()
                comp.append((r, c))
                for nr, nc in neighbours(rows, cols, r, c):
                    if not seen[nr][nc] and inside(nr, nc):
                        seen[nr][nc] = True
                        queue.append((nr, nc))
            out.append(comp)
    return out


def boundary(rows: int, cols: int, comp: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Cells outside `comp` that touch it orthogonally, in first-seen order."""
    inside = set(comp)
    seen, out = set(), []
    for r, c in inside:
        for n in neighbours(rows, cols, r, c):
            if n not in inside and n not in seen:
                seen.add(n)
                out.append(n)
    out.sort()
    return out


def connectivity_cuts(rows: int, cols: int, lit: Callable[[int, int], int],
                      model: set[int], every: int = 0) -> list[Cut]:
    """Cuts for "the cells whose literal `lit(r, c)` is true are 4-connected".

    For each component C of the candidate (when there are two or more): its outer boundary B
    holds no set cell, so a set cell x in C and a set cell z elsewhere are cut apart. The clause
    "some cell of B is set, or x is not, or z is not" is implied by connectivity (any path from
    x to z crosses B) and rules the candidate out; it is short and reused by later candidates
    with the same separator. For components of at most `every` cells, one clause per cell x of
    C (fewer rounds: no subset of C can stay behind B either)."""
    comps = components(rows, cols, lambda r, c: lit(r, c) in model)
    if len(comps) < 2:
        return []
    cuts = []
    for k, comp in enumerate(comps):
        other = comps[k - 1] if k else comps[1]
        wall = [lit(*b) for b in boundary(rows, cols, comp)]
        z = other[0]
        for x in (comp if len(comp) <= every else comp[:1]):
            cuts.append(wall + [-lit(*x), -lit(*z)])
    return cuts


def difficulty(stats: dict) -> dict:
    """The difficulty record written with every generated puzzle: the solver's work to solve
    the puzzle and prove the solution unique, from a fresh solver."""
    return {k: stats[k] for k in ("conflicts", "decisions", "propagations", "sat_calls", "cuts")}

