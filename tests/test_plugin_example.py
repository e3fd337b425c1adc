"""The example third-party plugin, examples/ptrm-plugin-hitori: it conforms to the codec
contract, agrees with pzpr.js, and, once pip-installed, shows up in `ptrm codecs` through its
entry point with no change to ptrm.

The install test builds the plugin from a copy of its source into a temporary `--target`
folder (no network, no build isolation, nothing written to the repository or the current
environment) and runs ptrm in a subprocess with that folder on PYTHONPATH.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from ptrm_cli.codec import Solution
from ptrm_cli.conformance import check_codec

import pzpr_oracle

PLUGIN_DIR = Path(__file__).resolve().parents[1] / "examples" / "ptrm-plugin-hitori"

# a 4x4 hitori made for this test; test_handmade_puzzle_is_unique proves its solution unique
HANDMADE_URL = "https://puzz.link/p?hitori/4/4/2124443133421323"
HANDMADE_ANSWER = [[0, 0, 1, 0], [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 1]]


@pytest.fixture(scope="module")
def hitori():
    """The plugin's codec, imported straight from its source file (not installed)."""
    spec = importlib.util.spec_from_file_location("ptrm_hitori_under_test",
                                                  PLUGIN_DIR / "ptrm_hitori.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.HitoriCodec()


def _samples(codec):
    samples = [codec.from_record({"url": HANDMADE_URL, "answer": HANDMADE_ANSWER})]
    samples += [codec.from_record(rec) for rec in pzpr_oracle.golden_by_type("hitori")]
    return samples


def test_handmade_puzzle_is_unique(hitori):
    puzzle = hitori.parse(HANDMADE_URL).puzzle
    grids = np.array(list(itertools.product((0, 1), repeat=16)), dtype=np.int16).reshape(-1, 4, 4)
    # only boards without touching shaded cells can pass; the verifier judges those
    apart = ~((grids[:, :, 1:] & grids[:, :, :-1]).any(axis=(1, 2))
              | (grids[:, 1:, :] & grids[:, :-1, :]).any(axis=(1, 2)))
    solutions = [g.tolist() for g in grids[apart]
                 if not hitori.verify(puzzle, Solution("hitori", g))]
    assert solutions == [HANDMADE_ANSWER]


def test_plugin_conforms(hitori):
    # registration is checked on the installed copy below
    problems = check_codec(hitori, _samples(hitori), registered=False)
    assert not problems, "\n".join(problems)


def test_plugin_gives_users_a_page(hitori):
    """The example plugin, the one docs/PLUGINS.md tells authors to start from, had no rules,
    example or legend, which the same document's checklist asks for: `ptrm codecs hitori`
    showed no example and a legend of "0 nothing entered (EMPTY)" alone, never saying what
    1 (shaded) means, and `ptrm solve --json` gave that legend for its answers."""
    from ptrm_cli import codec_page
    from ptrm_cli.codec import legend_of

    page = codec_page.as_json(hitori, codec_page.example_of(hitori))
    assert page["rules"] and "connected" in page["rules"]
    assert set(page["examples"]) == {"url", "pzprv3", "grid"}, page["examples"]
    assert page["examples"]["url"] == HANDMADE_URL  # the puzzle proven unique above
    assert set(legend_of(hitori)) == {0, 1} and "shaded" in legend_of(hitori)[1]


def test_plugin_formats_and_errors(hitori):
    puzzle, solution = hitori.from_record({"url": HANDMADE_URL, "answer": HANDMADE_ANSWER})
    assert hitori.to_url(puzzle) == HANDMADE_URL
    grid_text = "hitori\n" + "\n".join(
        " ".join(f"{puzzle.clues[r, c]}{'#' if solution.grid[r, c] else ''}" for c in range(4))
        for r in range(4))
    parsed = hitori.parse(grid_text)
    assert parsed.format == "grid" and parsed.solution == solution
    assert hitori.key(parsed.puzzle) == hitori.key(puzzle)
    assert hitori.verify(puzzle, Solution("hitori", np.zeros((4, 4), dtype=np.int16)))[0].code \
        == "brNoShade"
    from ptrm_cli.errors import ParseError, PtrmError

    with pytest.raises(ParseError, match="expected 4 cells"):
        hitori.parse("hitori\n1 2 3 4\n1 2 3")
    with pytest.raises(ParseError, match="empty input"):
        hitori.parse("  ")
    with pytest.raises(ParseError, match="covers 15 cells, but its 4x4 board has 16"):
        hitori.parse(HANDMADE_URL[:-1])
    with pytest.raises(ParseError, match="2 character.s. left over"):
        hitori.parse(HANDMADE_URL + "11")
    with pytest.raises(ParseError, match="two base-36 digits"):
        hitori.parse(HANDMADE_URL[:-1] + "-")
    big = hitori.parse("https://puzz.link/p?hitori/13/13/" + "1" * 169).puzzle
    with pytest.raises(PtrmError, match="does not fit"):
        hitori.encode(big)


@pytest.mark.node
def test_plugin_agrees_with_pzpr(hitori, pzpr):
    """The plugin's verifier against pzpr.js's hitori, as for the built-in types."""
    problems = []
    for puzzle, solution in _samples(hitori):
        url = puzzle.meta.get("url") or HANDMADE_URL
        states = pzpr_oracle.nearby_states(hitori, puzzle, solution,
                                           np.random.default_rng(zlib.crc32(url.encode())))
        problems += [f"{url}: {m}" for m in pzpr_oracle.compare_verifier(
            pzpr, hitori, puzzle, url, states, file_every=4)]
        bare = pzpr.ask([{"url": url, "want": ["file", "url"]}])[0]
        if bare["file"] != hitori.to_pzprv3(puzzle):
            problems.append(f"{url}: our pzprv3 text is not pzpr.js's")
        if bare["url"].split("?", 1)[1] != hitori.to_url(puzzle).split("?", 1)[1]:
            problems.append(f"{url}: pzpr.js writes the URL as {bare['url']}")
    assert not problems, "\n".join(problems[:30])


# -- installed like any third-party plugin -----------------------------------------------------

CHECK_INSTALLED = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
from ptrm_cli import codec as registry
from ptrm_cli.conformance import check_codec
import ptrm_hitori

url, answer = sys.argv[1], json.loads(sys.argv[2])
codec = registry.get("hitori")
sample = codec.from_record({"url": url, "answer": answer})
print(json.dumps({
    "module": ptrm_hitori.__file__,
    "provider": registry.registered()["hitori"].provider,
    "detected": registry.detect(url).name,
    "problems": check_codec(codec, [sample]),  # registration included
}))
"""


def _pip_install(source: Path, target: Path) -> None:
    """Build and install the plugin into `target`. With setuptools at hand this needs no
    network (no build isolation); without it pip must fetch setuptools, and a failure then is
    the environment's, so the test skips."""
    base = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
            "--disable-pip-version-check", "--target", str(target), str(source)]
    local = importlib.util.find_spec("setuptools") is not None
    cmd = base + (["--no-index", "--no-build-isolation"] if local else [])
    pip = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if pip.returncode != 0 and not local:
        pytest.skip(f"cannot build the plugin here (no setuptools, pip failed): "
                    f"{pip.stderr.strip()[-500:]}")
    assert pip.returncode == 0, pip.stderr[-3000:]


def test_installed_plugin_appears_in_ptrm_codecs(tmp_path):
    source, target = tmp_path / "src", tmp_path / "site"
    shutil.copytree(PLUGIN_DIR, source,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    _pip_install(source, target)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(target), *filter(None, [os.environ.get("PYTHONPATH")])]))

    listed = subprocess.run([sys.executable, "-W", "ignore", "-m", "ptrm_cli.app", "codecs",
                             "--json"], capture_output=True, text=True, env=env, timeout=180)
    assert listed.returncode == 0, listed.stderr[-3000:]
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["hitori"]["family"] == "hitori"
    assert rows["hitori"]["provider"] == "ptrm-plugin-hitori 0.1.0"
    assert (rows["hitori"]["seq_len"], rows["hitori"]["vocab_size"]) == (144, 16)

    checked = subprocess.run(
        [sys.executable, "-c", CHECK_INSTALLED, HANDMADE_URL, json.dumps(HANDMADE_ANSWER)],
        capture_output=True, text=True, env=env, timeout=180)
    assert checked.returncode == 0, checked.stderr[-3000:]
    report = json.loads(checked.stdout)
    assert Path(report["module"]).resolve().is_relative_to(target.resolve())
    assert report["provider"] == "ptrm-plugin-hitori 0.1.0"
    assert report["detected"] == "hitori"
    assert report["problems"] == []


def test_plugin_reads_a_dataset_puzzles_line(hitori):
    """A built dataset's puzzles.jsonl names the puzzle `text` (build-data writes its URL
    there): `ptrm solve` on such a line, which hands the codec the whole record, failed with
    "expected a PPBench record (solution_enc) or a ptrm record (url, answer)"."""
    line = {"answer": HANDMADE_ANSWER, "key": HANDMADE_URL, "line": 1, "source": "h.jsonl",
            "text": HANDMADE_URL, "type": "hitori"}
    puzzle, solution = hitori.from_record(line)
    assert hitori.key(puzzle) == HANDMADE_URL
    assert solution.grid.tolist() == HANDMADE_ANSWER and not hitori.verify(puzzle, solution)
