"""Text formats shared by the PPBench codecs (PPBENCH_FORMATS.md §2): puzz.link URLs and their
bit/number codings, pzprv3 files, and PPBench dataset records (encrypted solution moves).

Each codec composes these; nothing here knows a puzzle type's rules.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from urllib.parse import unquote

from ptrm_cli.codec import size_name
from ptrm_cli.errors import ParseError, load_json

PUZZLINK = "https://puzz.link/p?"
_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"


def is_number(tok: str) -> bool:
    """An ASCII digit string: str.isdigit alone also accepts '²', which int() refuses, and
    '٣', which int() reads as 3."""
    return tok.isascii() and tok.isdigit()


# -- puzz.link URLs -------------------------------------------------------------------------

@dataclass
class Url:
    urlid: str
    cols: int
    rows: int
    body: str
    variant: str | None = None
    pflag: str | None = None


_URL_RE = re.compile(r"^\s*(?:https?://)?[^?\s]*\?(?P<rest>\S+?)\s*$")


def parse_url(text: str, *, source: str | None = None) -> Url:
    """`http(s)://puzz.link/p?<urlid>/[v:<variant>/][<pflag>/]<cols>/<rows>/<body>[/]`;
    pzv.jp's `p.html?` form is the same after the `?`."""
    m = _URL_RE.match(text)
    if not m:
        raise ParseError(f"not a puzz.link URL: {text.strip()[:80]!r}", source=source,
                         hint="expected https://puzz.link/p?<type>/<cols>/<rows>/<body>")
    rest = m.group("rest")
    # a link copied from a page or a message may carry an anchor or a tracker ('#top',
    # '&fbclid=...', '?utm_source=...'): said as such, not as body characters a type rejects
    extra = re.search(r"#|[&?][\w.-]*=", rest)
    if extra:
        raise ParseError(f"puzz.link URL has text after the puzzle: {rest[extra.start():]!r}",
                         source=source, hint="remove it: the puzzle's URL ends before it")
    parts = rest.split("/")
    if parts and parts[-1] == "":  # one trailing empty segment, written after bodies like "...."
        parts.pop()
    urlid, parts = parts[0], parts[1:]
    variant = pflag = None
    if parts and parts[0].startswith("v:"):
        variant, parts = parts[0][2:], parts[1:]
    if parts and not is_number(parts[0]):
        pflag, parts = parts[0], parts[1:]
    if len(parts) < 2 or not is_number(parts[0]) or not is_number(parts[1]):
        raise ParseError(f"puzz.link URL for {urlid!r} has no <cols>/<rows> size", source=source,
                         hint="expected https://puzz.link/p?<type>/<cols>/<rows>/<body>")
    cols, rows = int(parts[0]), int(parts[1])
    if not (1 <= cols <= 100 and 1 <= rows <= 100):
        raise ParseError(f"puzz.link URL size {size_name(rows, cols)} is out of range (1 to "
                         "100 a side)", source=source)
    return Url(urlid, cols, rows, "/".join(parts[2:]), variant, pflag)


def make_url(urlid: str, cols: int, rows: int, body: str) -> str:
    tail = "" if not body or body[-1].isalnum() else "/"
    return f"{PUZZLINK}{urlid}/{cols}/{rows}/{body}{tail}"


def _b36(ch: str) -> int:
    return _B36.index(ch)


# number16: one value per cell; g..z skip 1..20 cells; "." = -2 ("?")

def decode_number16(body: str, n: int, *, source: str | None = None, board: str | None = None,
                   what: str = "URL body", unit: str = "cells") -> tuple[list[int], int]:
    """Decode `n` cells of number16 (-1 empty, -2 "?"); return the values and chars consumed.
    With `board` (its size for errors, "9x9"), the body must describe exactly those n cells
    (`check_fills`)."""
    try:
        values, used, reached = _decode_number16(body, n)
    except ValueError:  # a multi-digit form cut short or with non-hex digits ("-zz")
        raise ParseError(f"puzz.link numbers do not decode: malformed number coding in {body[:40]!r}",
                         source=source) from None
    if board is not None:
        check_fills(body, used, reached, n, board=board, what=what, unit=unit, source=source)
    return values, used


def _hex(digits: str, width: int) -> int:
    """`width` hex digits; int() alone would also take a sign, '_' or non-ASCII digits."""
    if len(digits) != width or not all(ch in "0123456789abcdefABCDEF" for ch in digits):
        raise ValueError(digits)
    return int(digits, 16)


def _decode_number16(body: str, n: int) -> tuple[list[int], int, int]:
    """(values, chars consumed, cells reached)."""
    out = [-1] * n
    c = i = 0
    while i < len(body) and c < n:
        ch = body[i]
        if ch in "0123456789abcdef":
            out[c] = int(ch, 16)
        elif ch == "-":
            out[c] = _hex(body[i + 1:i + 3], 2)
            i += 2
        elif ch == "+":
            out[c] = _hex(body[i + 1:i + 4], 3)
            i += 3
        elif ch == "=":
            out[c] = _hex(body[i + 1:i + 4], 3) + 4096
            i += 3
        elif ch in "@%":
            out[c] = _hex(body[i + 1:i + 4], 3) + 8192
            i += 3
        elif ch == "*":
            out[c] = _hex(body[i + 1:i + 5], 4) + 12240
            i += 4
        elif ch == "$":
            out[c] = _hex(body[i + 1:i + 6], 5) + 77776
            i += 5
        elif ch == ".":
            out[c] = -2
        elif "g" <= ch <= "z":
            c += _b36(ch) - 16  # plus the c += 1 below: 1..20 blanks
        else:  # pzpr.js skips any other character without consuming a cell
            i += 1
            continue
        c += 1
        i += 1
    return out, i, c


def check_fills(body: str, used: int, reached: int, n: int, *, board: str,
                what: str = "URL body", unit: str = "cells", source: str | None = None) -> None:
    """A URL body must describe exactly the n cells (heyawake: rooms) of its board.
    pzpr.js's encoders write every trailing run of blanks, so a body that stops short was cut
    off (its decoder would silently leave the rest blank), a run of blanks that goes past the
    end was written for a bigger board (the URL's size is wrong), and characters left over once
    the board is full belong to no cell. `used`/`reached`: chars consumed and cells reached by
    the decoder, which stops once it reaches n (a 4Cell number's own blanks may run past the
    end, as pzpr.js writes them: `decode_4cell` counts those only up to n)."""
    if reached != n:
        more = " at least" if used < len(body) else ""  # the decoder stopped before the end
        raise ParseError(f"{what}: it covers{more} {reached} {unit}, but its {board} board has "
                         f"{n}", source=source)
    if used < len(body):
        raise ParseError(f"{what}: {len(body) - used} character(s) left over after the {board} "
                         "board is full", source=source)


def encode_number16(values: list[int]) -> str:
    out, blanks = [], 0
    for v in values:
        if v == -1:
            blanks += 1
            if blanks == 20:
                out.append("z")
                blanks = 0
            continue
        if blanks:
            out.append(_B36[15 + blanks])
            blanks = 0
        if v == -2:
            out.append(".")
        elif 0 <= v < 16:
            out.append(f"{v:x}")
        elif v < 256:
            out.append(f"-{v:02x}")
        elif v < 4096:
            out.append(f"+{v:03x}")
        else:
            raise ValueError(f"number16 value {v} too large")
    if blanks:
        out.append(_B36[15 + blanks])
    return "".join(out)


# 4Cell (lightup, shakashaka): 0-4 number, 5-9 number + 1 blank, a-e number + 2 blanks,
# "." unnumbered (-2), g-z 1..20 blanks

def decode_4cell(body: str, n: int, *, source: str | None = None, board: str | None = None,
                 what: str = "URL body") -> tuple[list[int], int]:
    """Decode `n` cells of 4Cell; return the values and chars consumed. With `board` (its
    size, "10x10"), the body must describe exactly those n cells (`check_fills`)."""
    out = [-1] * n
    c = i = 0
    while i < len(body) and c < n:
        ch = body[i]
        if "0" <= ch <= "4":
            out[c] = int(ch)
        elif "5" <= ch <= "9":
            out[c] = int(ch) - 5
            c = min(c + 1, n - 1)  # pzpr.js writes a number's blanks past the end too
        elif "a" <= ch <= "e":
            out[c] = _b36(ch) - 10
            c = min(c + 2, n - 1)
        elif ch == ".":
            out[c] = -2
        elif "g" <= ch <= "z":
            c += _b36(ch) - 16
        c += 1
        i += 1
    if board is not None:
        check_fills(body, i, c, n, board=board, what=what, source=source)
    return out, i


def encode_4cell(values: list[int]) -> str:
    out, blanks, c, n = [], 0, 0, len(values)
    while c < n:
        v = values[c]
        if v == -1:
            blanks += 1
            if blanks == 20:
                out.append("z")
                blanks = 0
            c += 1
            continue
        if blanks:
            out.append(_B36[15 + blanks])
            blanks = 0
        if v == -2:
            out.append(".")
            c += 1
            continue
        # absorb the following blanks: +5 for one, +10 for two (even past the board's end)
        if c + 1 < n and values[c + 1] != -1:
            out.append(str(v))
            c += 1
        elif c + 2 < n and values[c + 2] != -1:
            out.append(str(v + 5))
            c += 2
        else:
            out.append(_B36[v + 10])
            c += 3
    if blanks:
        out.append(_B36[15 + blanks])
    return "".join(out)


# border bits: 5 bits per base-32 char, MSB first, last char zero-padded

def decode_bits(body: str, nbits: int) -> tuple[list[int], int]:
    nchars = (nbits + 4) // 5
    bits = []
    for ch in body[:nchars]:
        v = int(ch, 32)
        bits.extend((v >> (4 - k)) & 1 for k in range(5))
    bits = (bits + [0] * nbits)[:nbits]
    return bits, nchars


def encode_bits(bits: list[int]) -> str:
    out = []
    for k in range(0, len(bits), 5):
        chunk = (list(bits[k:k + 5]) + [0] * 5)[:5]
        v = 0
        for b in chunk:
            v = v * 2 + int(b)
        out.append(_B36[v])
    return "".join(out)


# -- pzprv3 files ---------------------------------------------------------------------------

@dataclass
class Pzprv3:
    pid: str
    rows: int
    cols: int
    lines: list[list[str]]  # the remaining lines, split on spaces (empty tokens dropped)
    version: str = "pzprv3"
    first_line: int = 5  # the 1-based file line of lines[0], for error messages
    pid_line: int = 2    # the 1-based file line of the type (after a `v:` line: 3)


#: what may follow the board in a pzpr.js file: history/info JSON and trial-mode data
_NOT_BOARD = ("history:", "info:", "__HISTORY__", "TrialData")


def parse_pzprv3(text: str, *, source: str | None = None, one_size_line: bool = False) -> Pzprv3:
    """Header (`pzprv3[.n]`, optional `v:` line, pid, rows, cols) and tokenised body lines.
    Sudoku writes a single size line (`one_size_line=True`)."""
    raw = text.rstrip().split("\n")
    lead = 0  # blank lines before the header: skipped, but they count in line numbers
    while lead < len(raw) and not raw[lead].strip():
        lead += 1
    raw = raw[lead:]
    if raw and "?pzprv3/" in raw[0]:
        # each line is URI-encoded (encodeURIComponent): spaces, '#', '+' all arrive escaped
        raw = [unquote(ln) for ln in raw[0].split("?", 1)[1].split("/")]
    lines = [ln.strip() for ln in raw]
    while lines and not lines[-1]:  # blank lines at the end (a URL form's trailing '/')
        lines.pop()
    if not lines or not lines[0].startswith("pzprv3"):
        raise ParseError("not pzprv3 text: the first line must be 'pzprv3'", source=source,
                         line=lead + 1)
    version = lines[0]
    i = 1
    if i < len(lines) and lines[i].startswith("v:"):
        i += 1
    if i >= len(lines):
        raise ParseError("pzprv3 text ends before the puzzle type line", source=source,
                         line=lead + i + 1)
    pid, pid_line = lines[i], lead + i + 1
    i += 1
    n_sizes = 1 if one_size_line else 2
    sizes = lines[i:i + n_sizes] + [""] * n_sizes
    for k in range(n_sizes):
        # pzpr.js opens no file whose size is not a positive number
        if not (is_number(sizes[k]) and int(sizes[k]) >= 1):
            what = "the size (one line: rows = cols)" if one_size_line else \
                "the grid size (rows, then cols)"
            found = f"found {sizes[k]!r}" if sizes[k] else "found nothing"
            raise ParseError(f"pzprv3 text: expected {what} after the type, as whole numbers "
                             f">= 1; {found}", source=source, line=lead + i + k + 1)
    rows = int(sizes[0])
    cols = rows if one_size_line else int(sizes[1])
    i += n_sizes
    body = [ln.split() for ln in lines[i:]]
    cut = next((k for k, ln in enumerate(body) if ln and ln[0].startswith(_NOT_BOARD)), None)
    if cut is not None:
        body = body[:cut]
        while body and not body[-1]:
            body.pop()
    return Pzprv3(pid, rows, cols, body, version, first_line=lead + i + 1, pid_line=pid_line)


def grid_section(p: Pzprv3, start: int, rows: int, cols: int, *, what: str,
                 source: str | None = None) -> list[list[str]]:
    """Take `rows` lines of exactly `cols` tokens from the body, starting at body line `start`."""
    out = []
    for r in range(rows):
        k = start + r
        if k >= len(p.lines):
            raise ParseError(f"the {what} section ends early (expected {rows} rows, found {r})",
                             source=source, line=p.first_line + len(p.lines) - 1)
        if len(p.lines[k]) != cols:
            raise ParseError(f"{what}: expected {cols} entries on this line, found "
                             f"{len(p.lines[k])}", source=source, line=p.first_line + k)
        out.append(p.lines[k])
    return out


def optional_section(p: Pzprv3, start: int, rows: int, cols: int, *, what: str,
                     source: str | None = None) -> list[list[str]] | None:
    """A section a file may leave out (answers, completion marks): None when the body has
    nothing at `start`, or something that does not start like it (`expect_end` reports
    that); otherwise all of it, and a section cut short is an error."""
    if start >= len(p.lines) or len(p.lines[start]) != cols:
        return None
    return grid_section(p, start, rows, cols, what=what, source=source)


def optional_border_lines(p: Pzprv3, start: int, *, source: str | None = None) -> int:
    """pzpr.js's border section (`encodeBorderLineIfPresent`: heyawake, tapa), written only
    when some border has a line or a cross: rows lines of cols-1 values, then rows-1 lines of
    cols ('-1' cross, '0' none, n > 0 a line). ptrm keeps neither, so, like pzpr.js, it reads
    as many of those lines as are there and only checks their entries. Returns the body line
    after them."""
    widths = [p.cols - 1] * p.rows + [p.cols] * (p.rows - 1)
    k = start
    for width in widths:
        if k >= len(p.lines) or len(p.lines[k]) != width:
            break
        bad = next((t for t in p.lines[k] if not re.fullmatch(r"-1|\d+", t)), None)
        if bad is not None:
            raise ParseError(f"border section entry {bad!r}: expected -1 (cross), 0 or a line "
                             "count", source=source, line=p.first_line + k)
        k += 1
    return k


def expect_end(p: Pzprv3, end: int, *, source: str | None = None) -> None:
    """Nothing but pzpr.js's trailing extras (cut off by `parse_pzprv3`) may follow the last
    section, which ends before body line `end`."""
    if end < len(p.lines):
        text = " ".join(p.lines[end])
        raise ParseError(f"unexpected text after the board: {text[:40]!r}", source=source,
                         line=p.first_line + end,
                         hint=f"a {p.pid} file ends after its grids (or pzpr.js's history:, "
                              "info: or TrialData sections)")


def write_pzprv3(pid: str, rows: int, cols: int, sections: list[list[list[str]]], *,
                 one_size_line: bool = False, extra_lines: list[str] | None = None) -> str:
    """pzprv3 text as pzpr.js writes it: every token followed by one space, one final newline."""
    head = ["pzprv3", pid, str(rows)] + ([] if one_size_line else [str(cols)])
    head += extra_lines or []
    body = ["".join(f"{t} " for t in row) for section in sections for row in section]
    return "\n".join(head + body) + "\n"


# -- PPBench records ------------------------------------------------------------------------

_KEY = b"ppbench"


def decode_solution(record: dict, *, source: str | None = None, line: int | None = None) -> dict:
    """`solution_enc` = base64(JSON XOR b"ppbench") -> {"moves_full", "moves_required", "moves_hint"}."""
    enc = record.get("solution_enc")
    if not isinstance(enc, str):
        raise ParseError("PPBench record has no solution_enc", source=source, line=line)
    try:
        raw = base64.b64decode(enc)
        plain = bytes(b ^ _KEY[i % len(_KEY)] for i, b in enumerate(raw))
        return load_json(plain.decode("utf-8"))
    except (ValueError, json.JSONDecodeError) as e:  # UnicodeDecodeError is a ValueError
        raise ParseError(f"PPBench solution_enc does not decode: {e}", source=source, line=line) from None


@dataclass
class Move:
    """One PPBench action: a mouse click at board coordinates, or a key press."""

    kind: str  # "mouse" | "key"
    button: str = ""  # "left" | "right" | ...
    x: float = 0.0
    y: float = 0.0
    key: str = ""

    @property
    def cell(self) -> tuple[int, int]:
        """(row, col) hit by the click: col = floor(x/2), row = floor(y/2)."""
        return int(self.y // 2), int(self.x // 2)


def parse_moves(move: str) -> list[Move]:
    """`mouse,left,X,Y[;key,D]` -> actions. Only single-point clicks occur for these types."""
    out = []
    for action in move.split(";"):
        f = action.split(",")
        if f[0] == "mouse" and len(f) >= 4:
            out.append(Move("mouse", f[1], float(f[2]), float(f[3])))
        elif f[0] == "key" and len(f) >= 2:
            out.append(Move("key", key=f[1]))
        else:
            raise ValueError(f"unsupported PPBench move {move!r}")
    return out


def record_url(record: dict) -> str:
    return record.get("puzzlink_url") or record.get("puzzle_url") or ""
