"""Shared fixtures: installed codecs (skipping types whose codec has not landed) and the pzpr.js
oracle (one node process per test session). Golden-record helpers live in pzpr_oracle.py."""

from __future__ import annotations

import warnings

import pytest
import torch

from ptrm_cli import codec as registry

import pzpr_oracle


@pytest.fixture(scope="session", autouse=True)
def one_thread():
    """Every test's tensors are small: on a 2-core machine intra-op thread hand-offs cost more
    than they save (20x more when the machine is busy), and one fixed thread count keeps float
    summation order, so the bit-exact comparisons (resume, chunking, sharding) stay exact."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="session", autouse=True)
def ctrl_c_is_heard():
    """A suite started in the background (`pytest &` from a script) inherits SIGINT ignored,
    and Python then keeps it so: the tests of what Ctrl-C does (training saves and stops, the
    launcher forwards it) failed for want of a signal. They get Python's usual handler."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def _installed_codec(name: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # plugins still being written warn as they fail to load
        codecs = registry.registered()
    if name not in codecs:
        pytest.skip(f"codec {name!r} is not installed (yet): no loadable `ptrm.codecs` entry "
                    f"point named {name!r}")
    return codecs[name].codec


@pytest.fixture(scope="session")
def installed_codec():
    """`installed_codec(name)`: the registered codec, or skip the test saying it is missing."""
    return _installed_codec


@pytest.fixture(scope="session")
def pzpr():
    """The pzpr.js oracle, started once per session; skips with the reason when node or the
    ppbench wheel (which carries pzpr.js) is missing."""
    try:
        oracle = pzpr_oracle.PzprOracle.start()
    except pzpr_oracle.OracleError as e:
        pytest.skip(f"pzpr.js oracle unavailable: {e}")
    yield oracle
    oracle.close()


def pytest_terminal_summary(terminalreporter):
    """How often our verifiers and pzpr.js agreed (verdict and first fail code), per type."""
    if not pzpr_oracle.AGREEMENT:
        return
    terminalreporter.section("verifier vs pzpr.js")
    for pid, t in sorted(pzpr_oracle.AGREEMENT.items()):
        codes = ", ".join(sorted(t["codes"]))
        terminalreporter.write_line(f"{pid:11s} {t['agree']}/{t['total']} agree  ({codes})")
