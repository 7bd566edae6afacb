"""Text and names from students, made safe for every writer, in one place.

Students' notebooks and file names reach SQLite, JSON, CSV, HTML, file names,
ZIP entries, the terminal, the browser and the kernel. Three kinds of character
break one of these writers or fool the person reading:

- lone UTF-16 surrogates (a JSON ``"\\ud800"`` escape, a non-UTF-8 byte of a file
  name decoded with ``surrogateescape``): no UTF-8 encoder accepts them, so a
  single one fails a whole write;
- C0 control characters: NUL ends C strings, the others mean nothing in a
  notebook's text and scramble a terminal;
- in names, format characters: bidi overrides (U+202E shows ``exe.ipynb`` as
  ``bnypi.exe``), zero-width characters, line separators, and plain length
  (a 300-character name is longer than a file system allows).

Notebook text is cleaned once, where it enters (``clean_text``/``clean_tree``,
used by ``grader.notebooks.load``): surrogates and C0 controls other than TAB, LF, CR,
FF and ESC become U+FFFD, and the number replaced is recorded so that the
instructor can be told. ESC is kept because outputs need it until ANSI escapes
are removed (``strip_ansi``), which also removes a stray ESC.

Names get three forms: ``record_name`` (the original, exact for any valid
Unicode name; only surrogates become ``\\xNN`` escapes so it can be stored),
``shown_name`` (unsafe characters as visible ``\\u202e``-style escapes, length
capped with a hash of the original so two long names stay apart) and
``file_stem`` (letters, digits, ``.``, ``_``, ``-``; short; never a device name
of Windows). ``scrub``/``utf8`` are the writers' last line of defence.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LABEL_LIMIT",
    "SHOWN_LIMIT",
    "STEM_LIMIT",
    "TextRepairs",
    "clean_text",
    "clean_tree",
    "file_stem",
    "record_name",
    "scrub",
    "shown_name",
    "unshown",
    "utf8",
]

SHOWN_LIMIT = 160  # characters of a name as shown (an entry's path in an archive, a file name)
LABEL_LIMIT = 3 * SHOWN_LIMIT + 20  # an upload's name (twice as long) / an entry's name (n)
STEM_LIMIT = 80  # bytes of a file stem we write (the name plus ".html" stays under 100)

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_BAD_TEXT = re.compile("[\ud800-\udfff\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
# In names: controls (C0, DEL, C1), format characters (bidi, zero-width, BOM, soft
# hyphen, tags), surrogates, private use, line and paragraph separators.
_UNSHOWN = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})
_STEM_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_WINDOWS_DEVICES = frozenset(
    {"CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"}
    | {f"{d}{n}" for d in ("COM", "LPT") for n in "0123456789"}
)


@dataclass(frozen=True, slots=True)
class TextRepairs:
    """What ``clean_tree`` replaced with U+FFFD, and where (e.g. "cell 3", "metadata")."""

    surrogates: int = 0
    controls: int = 0
    places: tuple[str, ...] = ()
    cells: tuple[int, ...] = ()  # indices of the cells among ``places``

    @property
    def count(self) -> int:
        return self.surrogates + self.controls

    def describe(self) -> str:
        """One sentence for the instructor; "" when nothing was replaced."""
        if not self.count:
            return ""
        kinds = []
        if self.surrogates:
            kinds.append(_plural(self.surrogates, "lone UTF-16 surrogate"))
        if self.controls:
            kinds.append(_plural(self.controls, "control character"))
        where = _join(self.places[:8]) + (" and more" if len(self.places) > 8 else "")
        return (f"{' and '.join(kinds)} in {where} could not be kept as they were "
                "and were replaced with U+FFFD")


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _join(items: Iterable[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def clean_text(text: str) -> tuple[str, int, int]:
    """``text`` with lone surrogates and C0 controls (not TAB, LF, CR, FF, ESC) as U+FFFD,
    and how many of each were replaced."""
    if not _BAD_TEXT.search(text):
        return text, 0, 0
    text, surrogates = _SURROGATE.subn(REPLACEMENT, text)
    text, controls = _CONTROL.subn(REPLACEMENT, text)
    return text, surrogates, controls


def clean_tree(value: Any, place: str, repairs: TextRepairs) -> tuple[Any, TextRepairs]:
    """``value`` (parsed JSON) with every string and key cleaned by ``clean_text``, and
    ``repairs`` with what was replaced here counted under ``place``.

    Walks with an explicit stack, so nesting as deep as the JSON parser allowed
    never hits the recursion limit. Lists and dicts are changed in place.
    """
    surrogates = controls = 0

    def fix(text: str) -> str:
        nonlocal surrogates, controls
        text, s, c = clean_text(text)
        surrogates += s
        controls += c
        return text

    if isinstance(value, str):
        value = fix(value)
    stack = [value] if isinstance(value, dict | list) else []
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = fix(item)
                elif isinstance(item, dict | list):
                    stack.append(item)
            continue
        for key in list(node):
            item = node[key]
            if isinstance(item, str):
                item = fix(item)
                node[key] = item
            elif isinstance(item, dict | list):
                stack.append(item)
            if isinstance(key, str) and _BAD_TEXT.search(key):
                del node[key]
                node.setdefault(fix(key), item)
    if not surrogates + controls:
        return value, repairs
    places, cells = repairs.places, repairs.cells
    if place not in places:
        places = (*places, place)
        if place.startswith("cell ") and place[5:].isdigit():
            cells = (*cells, int(place[5:]))
    return value, TextRepairs(repairs.surrogates + surrogates, repairs.controls + controls,
                              places, cells)


def scrub(text: str) -> str:
    """``text`` with lone surrogates as U+FFFD: what any UTF-8 writer accepts."""
    return _SURROGATE.sub(REPLACEMENT, text) if _SURROGATE.search(text) else text


def utf8(text: str) -> bytes:
    """``text`` encoded as UTF-8; never fails (lone surrogates become U+FFFD)."""
    return scrub(text).encode("utf-8")


def _escape(ch: str) -> str:
    if ch in "\n\t\r":
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}[ch]
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def record_name(name: str) -> str:
    """The original name as it can be stored: exact, except that a lone surrogate (a
    non-UTF-8 byte of a file name) becomes a ``\\xNN`` (or ``\\udNNN``) escape."""
    return _SURROGATE.sub(lambda m: _escape(m.group()), name)


def unshown(name: str) -> list[str]:
    """The escapes ``shown_name`` uses for ``name``'s unsafe characters, each once, in order."""
    found = (_escape(ch) for ch in name if unicodedata.category(ch) in _UNSHOWN)
    return list(dict.fromkeys(found))


def _digest(name: str) -> str:
    return hashlib.sha256(utf8(record_name(name))).hexdigest()[:8]


def shown_name(name: str, limit: int = SHOWN_LIMIT) -> str:
    """``name`` safe to show and to use as a label: controls, bidi and other format
    characters, surrogates and separators as visible escapes (``\\u202e``), and at most
    ``limit`` characters: a longer name keeps its start and end around ``…<hash>…``.

    Two different names give two different results (escapes are unambiguous;
    a cut name carries a hash of the whole)."""
    pieces = [_escape(ch) if unicodedata.category(ch) in _UNSHOWN else ch for ch in name]
    if sum(map(len, pieces)) <= limit:
        return "".join(pieces)
    middle = f"…{_digest(name)}…"
    room = max(limit - len(middle), 2)
    head = _fit(pieces, room - room // 3)
    tail = _fit(pieces[::-1], room // 3)[::-1]
    return "".join(head) + middle + "".join(tail)


def _fit(pieces: list[str], room: int) -> list[str]:
    """The leading pieces whose total length fits ``room`` (an escape is never cut)."""
    out: list[str] = []
    for piece in pieces:
        if len(piece) > room:
            break
        out.append(piece)
        room -= len(piece)
    return out


def file_stem(name: str, limit: int = STEM_LIMIT, fallback: str = "submission") -> str:
    """``name`` as a file name's stem: ASCII letters, digits, '.', '_' and '-' only
    (accents dropped: "José" -> "Jose"), no leading dot or dash (hidden files, options
    to a shell command), never a Windows device name
    (CON, NUL, COM1, ...), at most ``limit`` bytes: a longer one is cut and ends with a
    hash of the whole, so that two long names stay two stems. ``fallback`` when
    nothing is left."""
    ascii_ = unicodedata.normalize("NFKD", scrub(name)).encode("ascii", "ignore").decode()
    stem = _STEM_UNSAFE.sub("_", ascii_).strip("-_.") or fallback
    if stem.split(".")[0].upper() in _WINDOWS_DEVICES:
        stem = f"_{stem}"
    if len(stem) > limit:
        stem = f"{stem[: limit - 9].rstrip('_.')}-{_digest(name)}"
    return stem
