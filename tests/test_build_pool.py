"""build_pool.pmap: ordered results whatever the workers, and never more processes than
chunks of work to hand out."""

from __future__ import annotations

import os

from ptrm_cli import build_pool


def _pid(_task) -> int:
    return os.getpid()


def test_no_more_workers_than_chunks(monkeypatch):
    sizes = []
    real = build_pool.mp.get_context

    def spy(method):
        ctx = real(method)

        class Ctx:
            def Pool(self, n, **kw):  # noqa: N802 - multiprocessing's name
                sizes.append(n)
                return ctx.Pool(n, **kw)
        return Ctx()

    monkeypatch.setattr(build_pool.mp, "get_context", spy)
    pids = list(build_pool.pmap(_pid, list(range(16)), 500, lambda n: None, chunksize=4))
    assert sizes == [4] and len(pids) == 16  # 16 tasks in chunks of 4: four processes


def test_results_keep_the_task_order():
    out = list(build_pool.pmap(abs, list(range(-20, 0)), 3, lambda n: None, chunksize=2))
    assert out == [abs(i) for i in range(-20, 0)]
