"""docs/PYTHON_API.md runs: every ```python block, as the document says they run.

Each numbered section (`## N. ...`) is one notebook: its blocks run in order in one fresh
namespace, in a temporary working folder, and their `assert` lines are what is checked. A block
compiles with the document as its file name and its own line numbers, so a failure points at
the line of the document that broke. Sections that use the bundled model skip without it, as
tests/test_readme.py does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ptrm_cli.models import default_checkpoint

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "PYTHON_API.md"
FENCE = re.compile(r"^```(\w*)[ \t]*$")


def sections() -> dict[str, list[tuple[int, str]]]:
    """{section heading: [(first line of the block, its code), ...]} for the ```python blocks
    under each `## ` heading, in document order."""
    out: dict[str, list[tuple[int, str]]] = {}
    heading, block, lang, start = "(top)", None, "", 0
    for n, line in enumerate(DOC.read_text().splitlines(), 1):
        fence = FENCE.match(line)
        if block is None:
            if fence and fence.group(1):
                block, lang, start = [], fence.group(1), n + 1
            elif line.startswith("## "):
                heading = line[3:].strip()
        elif fence and not fence.group(1):
            if lang == "python":
                out.setdefault(heading, []).append((start, "\n".join(block)))
            block = None
        else:
            block.append(line)
    assert block is None, f"{DOC.name}: a code block opened at line {start} never closes"
    return out


SECTIONS = sections()


def test_every_python_block_is_in_a_numbered_section():
    assert SECTIONS, f"no python blocks in {DOC}"
    for heading in SECTIONS:
        assert re.match(r"\d+\. ", heading), \
            f"python blocks under {heading!r}: the test runs numbered sections only"
    assert sum(len(b) for b in SECTIONS.values()) >= 8


@pytest.mark.parametrize("heading", list(SECTIONS))
def test_section_runs(heading, tmp_path, monkeypatch):
    blocks = SECTIONS[heading]
    if default_checkpoint() is None and any("load_model(None" in code
                                            or "default_checkpoint()" in code
                                            for _, code in blocks):
        pytest.skip("no bundled model in this checkout")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__python_api_doc__"}
    for start, code in blocks:
        # blank lines in front, so that line numbers in a traceback are the document's
        exec(compile("\n" * (start - 1) + code, str(DOC), "exec"), namespace)


def test_the_docs_link_it():
    assert "docs/PYTHON_API.md" in (ROOT / "README.md").read_text()
    assert "PYTHON_API.md" in (ROOT / "docs" / "INFERENCE.md").read_text()
