"""The shared console helpers: progress that still reports where no live bar can show."""

from __future__ import annotations

import io
import os

from rich.console import Console

from ptrm_cli import console as console_mod


def _captured(monkeypatch, terminal: bool) -> io.StringIO:
    buf = io.StringIO()
    monkeypatch.setattr(console_mod, "err_console",
                        Console(file=buf, force_terminal=terminal, width=100, emoji=False))
    return buf


def test_fraction_progress_prints_a_line_per_tenth_off_a_terminal(monkeypatch):
    buf = _captured(monkeypatch, terminal=False)
    with console_mod.fraction_progress("eval") as update:
        for f in (0.0, 0.05, 0.1, 0.12, 0.35, 0.35, 1.0):
            update(f)
    lines = buf.getvalue().splitlines()
    # 0.1 -> 10%, 0.35 -> a line at the third tenth (once), 1.0 -> 100%; nothing for 0 or
    # for progress inside a tenth already shown
    assert [line.split(" · ")[0] for line in lines] == ["eval 10%", "eval 35%", "eval 100%"]
    assert all("s elapsed" in line and "s left" in line for line in lines)
    assert lines[-1].endswith("~0 s left")


def test_progress_lines_report_at_least_every_minute_in_human_units(monkeypatch):
    """By tenths alone, a CPU evaluation of ~5 hours printed its first line after half an
    hour, with the time left in seconds ("~16200 s left")."""
    clock = [1000.0]
    monkeypatch.setattr(console_mod.time, "perf_counter", lambda: clock[0])
    buf = _captured(monkeypatch, terminal=False)
    update = console_mod.progress_lines("eval")
    for minutes, fraction in ((0.5, 0.001), (1.5, 0.004), (2.0, 0.005), (3.0, 0.006)):
        clock[0] = 1000.0 + 60 * minutes
        update(fraction)
    lines = buf.getvalue().splitlines()
    # 1.5 min: a line (a minute since the start); 2.0: none (30 s later, same tenth); 3.0: one
    assert lines == ["eval 0.4% · 90 s elapsed · ~6.2 h left",
                     "eval 0.6% · 3 min elapsed · ~8.3 h left"]
    update(1.2)  # a caller's overshoot: 100%, not "~-5 s left"
    assert buf.getvalue().splitlines()[-1] == "eval 100% · 3 min elapsed · ~0 s left"


def test_durations_read_as_people_say_them():
    assert [console_mod.duration(s) for s in (0, 42.4, 99, 99.6, 750, 5369, 5370, 12240)] == \
        ["0 s", "42 s", "99 s", "2 min", "12 min", "89 min", "1.5 h", "3.4 h"]


def test_fraction_progress_on_a_terminal_is_a_transient_bar(monkeypatch):
    buf = _captured(monkeypatch, terminal=True)
    with console_mod.fraction_progress("eval") as update:
        update(0.5)
        update(1.0)
    assert "eval 50%" not in buf.getvalue()  # no log lines: the bar, cleared at the end


def test_a_stream_that_cannot_encode_the_drawing_writes_ascii_standins():
    """An ASCII stdout (PYTHONIOENCODING=ascii, a C locale without Python's UTF-8 mode, a
    legacy code page) raised UnicodeEncodeError at the first board line: a traceback after
    the solve, and exit 1, which `ptrm solve` means as "unsolved"."""
    from ptrm_codecs.shakashaka import GLYPHS

    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    console_mod.draw_within_encoding(stream)
    Console(file=stream, width=100, emoji=False).print(
        "┌─┐\n│●│ ■ █ · " + "".join(GLYPHS.values()) + " σ=0.5")
    stream.flush()
    assert raw.getvalue().decode("ascii").splitlines() == [
        "+-+", "|*| # # . " + "".join(console_mod.ASCII_STANDINS[g] for g in GLYPHS.values())
        + " sigma=0.5"]
    assert all(console_mod.ASCII_STANDINS.get(g, "?") != "?" for g in GLYPHS.values())


def test_every_character_the_code_prints_has_a_stand_in():
    """Each non-ASCII character in a string the package prints (not its docstrings) has an
    ASCII stand-in: a maze's path (`••`), ARC's `→` and its ✓/✗ printed `?` on an ASCII
    terminal. Anything else, a file name's `é`, is escaped as Python escapes it, not lost."""
    import tokenize
    from pathlib import Path

    root = Path(console_mod.__file__).resolve().parents[1]
    sources = [*(root / "ptrm_cli").rglob("*.py"), *(root / "codecs").rglob("*.py")]
    missing = {}
    for path in sources:
        with open(path, encoding="utf-8") as f:
            tokens = [t for t in tokenize.generate_tokens(f.readline)
                      if t.type not in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT,
                                        tokenize.DEDENT)]
        for i, t in enumerate(tokens):
            docstring = (i == 0 or tokens[i - 1].type == tokenize.NEWLINE
                         or tokens[i - 1].string == ":") and \
                i + 1 < len(tokens) and tokens[i + 1].type == tokenize.NEWLINE
            if t.type == tokenize.STRING and not docstring or \
                    t.type == getattr(tokenize, "FSTRING_MIDDLE", None):
                for ch in t.string:
                    if ord(ch) > 127 and ch not in console_mod.ASCII_STANDINS:
                        missing.setdefault(ch, path.name)
    assert not missing, missing
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    console_mod.draw_within_encoding(stream)
    stream.write("café.txt •→✓")
    stream.flush()
    assert raw.getvalue() == b"caf\\xe9.txt o->ok"


def test_an_ascii_stdout_is_set_up_when_the_console_loads():
    import subprocess
    import sys

    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    done = subprocess.run([sys.executable, "-c", "from ptrm_cli.console import console; "
                           "console.print('┌─●─┐')"], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.decode("ascii").strip() == "+-*-+"


def test_a_utf8_stream_keeps_its_drawing():
    stream = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    console_mod.draw_within_encoding(stream)
    assert stream.errors == "strict"
