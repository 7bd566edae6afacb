"""Checks from an old-system rubric's words: verification strings and written requirements.

Old rubrics that have no ``autograder_checks.sections`` say what a part needs in two
ways, and this module turns both into our checks, entry by entry:

- *verification strings* (``"inner_join("``, ``"customer_orders <-"``,
  ``"by = \\"CustomerID\\""``, ``"filter.*%>%.*select"``): ``name(`` and ``name()`` become
  a ``calls`` entry; ``name <-`` an ``assigns`` entry; a bare name the file lists among
  its required variables an ``assigns`` entry, any other bare name a ``code`` check of
  that word; other code a ``code`` check (a regular expression when the string is one,
  else the text itself, spaces and quotes free); words alone ("growth rates") are prose
  and no check.
- *requirements in prose* ("read_csv() or read.csv() used", "sales_df variable
  created", "Proper use of pipe operator (%>%) throughout", "Code is well-commented"):
  functions named with parentheses become ``calls`` entries (``a() or b()`` one any-of
  entry ``"a | b"``; a list ending in "etc." one any-of entry of its examples);
  ``library(pkg)`` a ``code`` check that loads the package; a name said to be created,
  calculated, defined or used an ``assigns`` entry; a list of names after "variables"
  or "datasets" ``assigns`` entries, after "functions", "types" or "syntax" ``calls``
  entries; "required variables" the file's required variables; the pipe a ``code``
  check of ``%>%`` or ``|>``; executed cells and visible outputs a ``ran`` check; errors,
  warnings and syntax a ``runs`` check; comments and documentation a ``documented``
  check. A sentence none of this reads is kept as text for the reviewer (``unread``).

Every requirement weighs the same in its criterion: a ``calls`` check built from three
verification strings weighs three, one built from one sentence weighs one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PIPE", "CheckSet", "accepted_group", "code_pattern", "lubridate_family"]

PIPE = r"%>%|\|>"
_NAME = r"[A-Za-z_.][\w.]*"
_CALL = re.compile(rf"({_NAME})\(")  # in prose, "types (a, b)" is no call
_CALL_ONLY = re.compile(rf"^({_NAME})\s*\(\s*\)?$")
_CALL_ARGS = re.compile(rf"^({_NAME})\s*\(([\w.$\s,\"']*)\)$")
_ASSIGN = re.compile(rf"^({_NAME})\s*<-$")
_COLUMN = re.compile(rf"^({_NAME})\s*=$")
_BARE = re.compile(rf"^{_NAME}$")
_PROSE = re.compile(r"^[A-Za-z][A-Za-z'-]*(?:\s+[A-Za-z][A-Za-z'-]*)+$")
_REGEX = re.compile(r"\.\*|\.\+|\\[dswb]")
_LOADS = {"library", "require", "requireNamespace"}
_MADE = re.compile(rf"\b((?:{_NAME}\s*(?:,\s*|\s+and\s+))*{_NAME})\s+(?:variables?\s+|"
                   r"datasets?\s+|data\s+frames?\s+|functions?\s+|"
                   r"objects?\s+)?(?:is\s+|are\s+)?(?:correctly\s+|successfully\s+)?"
                   r"(?:created|exists|assigned|calculated|computed|defined|implemented|"
                   r"uses|using)\b")
_LEADING_ASSIGN = re.compile(rf"^\s*({_NAME})\s*(?:<-|=(?!=))")
_LIST = re.compile(r"\(([^()]*,[^()]*)\)")
_USE = re.compile(r"\b(?:use of|using|uses|syntax for|call(?:s|ed)?)\b", re.I)
_SNAKE = re.compile(r"(?<![\w.])([A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+)(?![\w.(])")
_ENGLISH = {"e.g", "i.e", "etc"}
_PLAIN = (
    ("pipe", re.compile(r"\bpipe|%>%|\|>")),
    ("ran", re.compile(r"unexecuted|\bexecuted\b|visible output|outputs? (?:are )?displayed|"
                       r"all cells (?:are )?run|run all")),
    ("runs", re.compile(r"\berrors?\b|\bwarnings?\b|\bsyntax\b|runs without|"
                        r"execute properly")),
    ("documented", re.compile(r"comment|documented|documentation")),
)
# R's date parsers: the same order of fields with a time (mdy -> mdy_hm) is one parser.
_LUBRIDATE = ("ymd", "ydm", "mdy", "myd", "dmy", "dym")


def lubridate_family(name: str) -> tuple[str, ...]:
    """``mdy`` -> ``("mdy", "mdy_h", "mdy_hm", "mdy_hms")``; other names alone."""
    if name in _LUBRIDATE:
        return (name, f"{name}_h", f"{name}_hm", f"{name}_hms")
    return (name,)


def code_pattern(text: str) -> str:
    """A verification string as a regular expression over the student's code: itself
    when it is one (``filter.*%>%.*select``), else its text with spaces optional and
    either quote accepted."""
    if _REGEX.search(text):
        try:
            re.compile(text)
            return text
        except re.error:
            pass
    out = []
    for part in re.split(r"(\s+|[\"'])", text):
        if not part:
            continue
        out.append(r"\s*" if part.isspace() else "[\"']" if part in "\"'" else re.escape(part))
    return "".join(out)


def _word(name: str) -> str:
    return rf"(?<![\w.]){re.escape(name)}(?![\w.])"


def _loads(pkg: str) -> str:
    return rf"\b(?:library|require)\s*\(\s*[\"']?{re.escape(pkg)}[\"']?\s*\)"


@dataclass
class CheckSet:
    """The checks of one criterion, gathered requirement by requirement."""

    required_variables: tuple[str, ...] = ()
    calls: dict[str, float] = field(default_factory=dict)  # entry -> weight
    assigns: dict[str, float] = field(default_factory=dict)
    code: dict[str, tuple[str, float]] = field(default_factory=dict)  # pattern -> (what, w)
    plain: dict[str, float] = field(default_factory=dict)  # runs / ran / documented
    unread: list[str] = field(default_factory=list)  # requirements no check reads

    # -- verification strings ----------------------------------------------------------
    def verification(self, entry: str) -> None:
        text = entry.strip()
        if not text:
            return
        if m := _CALL_ONLY.match(text):
            self._call(m.group(1))
        elif (m := _CALL_ARGS.match(text)) and m.group(1) in _LOADS and m.group(2).strip():
            self._code(_loads(m.group(2).strip(" \"'")), f"loads {m.group(2).strip(chr(34))}")
        elif m := _CALL_ARGS.match(text):
            self._call(m.group(1))
        elif m := _ASSIGN.match(text):
            self.assigns.setdefault(m.group(1), 1.0)
        elif m := _COLUMN.match(text):
            self._code(rf"{_word(m.group(1))}\s*=(?!=)", text)
        elif _BARE.match(text):
            if text in self.required_variables:
                self.assigns.setdefault(text, 1.0)
            else:
                self._code(_word(text), text)
        elif _PROSE.match(text):
            self.unread.append(text)
        else:
            self._code(code_pattern(text), text)

    # -- requirements in prose ---------------------------------------------------------
    def prose(self, line: str) -> bool:
        """Read one requirement (weighing one in all); False when nothing in it became a
        check."""
        snap = self._weights()
        hit = self._read(line)
        delta = {k: w - snap.get(k, 0.0) for k, w in self._weights().items()
                 if w - snap.get(k, 0.0) > 1e-12}
        if sum(delta.values()) > 1:
            for k, d in delta.items():
                self._set(k, snap.get(k, 0.0) + d / sum(delta.values()))
        return hit

    def _weights(self) -> dict[tuple[str, str], float]:
        out = {("calls", k): w for k, w in self.calls.items()}
        out.update({("assigns", k): w for k, w in self.assigns.items()})
        out.update({("code", k): w for k, (_, w) in self.code.items()})
        out.update({("plain", k): w for k, w in self.plain.items()})
        return out

    def _set(self, key: tuple[str, str], w: float) -> None:
        kind, name = key
        if kind == "code":
            self.code[name] = (self.code[name][0], w)
        else:
            getattr(self, kind)[name] = w

    def _read(self, line: str) -> bool:
        before = self._size()
        low = line.lower()
        hit = self._prose_calls(line)
        if m := _LEADING_ASSIGN.match(line):
            hit = self._assign(m.group(1)) or hit
        for m in _MADE.finditer(line):
            if line[m.end(1):].lstrip().startswith("("):
                continue
            for name in re.split(r"\s*,\s*|\s+and\s+", m.group(1)):
                if self._named(name):
                    hit = self._assign(name) or hit
        for m in _LIST.finditer(line):
            names = [n.strip() for n in m.group(1).split(",")]
            etc = any(n.rstrip(".").lower() in _ENGLISH for n in names)
            names = [n for n in names if _BARE.match(n) and n.rstrip(".").lower() not in _ENGLISH]
            if not names:
                continue
            said = low[:m.start()]
            if re.search(r"(?:variables?|datasets?|objects?|data frames?|tables?)\s*$", said):
                hit = any([self._assign(n) for n in names]) or hit
            elif re.search(r"(?:functions?|types?|syntax for|operations?)\s*$", said) or etc:
                hit = self._group(names, any_of=etc) or hit
        if use := _USE.search(line):
            for m in _SNAKE.finditer(line, use.end()):
                if m.group(1) not in self.calls and m.group(1) not in self.assigns \
                        and m.group(1).lower().rstrip(".") not in _ENGLISH:
                    self.calls.setdefault(m.group(1), 1.0)
                    hit = True
        if "required variables" in low and not _LIST.search(line) and self.required_variables:
            for n in self.required_variables:
                self.assigns.setdefault(n, 0.0)
            self.assigns[self.required_variables[0]] = 1.0
            hit = True
        bare = re.sub(r"[\w.]*_[\w.]*", " ", low)  # "comments_df" says no "comments"
        for kind, pattern in _PLAIN:
            if pattern.search(bare):
                if kind == "pipe":
                    what, w = self.code.get(PIPE, ("uses the pipe (%>% or |>)", 0.0))
                    self.code[PIPE] = (what, w + 1.0)
                else:
                    self.plain[kind] = self.plain.get(kind, 0.0) + 1.0
                hit = True
        if not hit and self._size() == before:
            self.unread.append(line)
            return False
        return True

    def _prose_calls(self, line: str) -> bool:
        found = [(m.start(), m.end(), m.group(1)) for m in _CALL.finditer(line)
                 if not line[:m.start()].endswith(("%", "$"))]
        i = 0
        while i < len(found):
            _, end, name = found[i]
            if name in _LOADS:
                arg = re.match(r"\s*[\"']?([\w.]+)[\"']?\s*\)", line[end:])
                if arg:
                    self._code(_loads(arg.group(1)), f"loads {arg.group(1)}")
                    i += 1
                    continue
            group = [name]
            while i + 1 < len(found):
                between = line[self._close(line, end):found[i + 1][0]]
                if not re.fullmatch(r"\s*,?\s*or\s*", between):
                    break
                i += 1
                end = found[i][1]
                group.append(found[i][2])
            self._group(group, any_of=len(group) > 1)
            i += 1
        return bool(found)

    @staticmethod
    def _close(line: str, end: int) -> int:
        """Where the call opened just before ``end`` closes (its arguments skipped)."""
        depth = 1
        for j in range(end, len(line)):
            depth += {"(": 1, ")": -1}.get(line[j], 0)
            if depth == 0:
                return j + 1
        return len(line)

    # -- building ----------------------------------------------------------------------
    def _named(self, name: str) -> bool:
        return ("_" in name or "." in name.strip(".")) and name.lower() not in _ENGLISH

    def _call(self, name: str) -> None:
        if name not in self.calls:
            self.calls[name] = 1.0

    def _assign(self, name: str) -> bool:
        if name in self.calls or name in _LOADS:
            return False
        self.assigns[name] = max(self.assigns.get(name, 0.0), 1.0)
        return True

    def _group(self, names: list[str], any_of: bool) -> bool:
        names = list(dict.fromkeys(n for n in names if n not in _LOADS))
        if not names:
            return False
        if any_of:
            self.calls.setdefault(" | ".join(names), 1.0)
        else:
            for n in names:
                self._call(n)
        return True

    def _code(self, pattern: str, what: str) -> None:
        self.code.setdefault(pattern, (what, 1.0))

    def _size(self) -> int:
        return len(self.calls) + len(self.assigns) + len(self.code) + len(self.plain)

    def empty(self) -> bool:
        return self._size() == 0

    def add_plain(self, kind: str) -> None:
        self.plain.setdefault(kind, 1.0)

    def checks(self) -> list[dict[str, Any]]:
        """The check dicts, weights in proportion to the requirements behind them."""
        parts: list[tuple[dict[str, Any], float]] = []
        if self.calls:
            entries = dict.fromkeys(accepted_group(e.split("|")) for e in self.calls)
            parts.append(({"type": "calls", "functions": list(entries)},
                          sum(self.calls.values())))
        if self.assigns:
            parts.append(({"type": "assigns", "names": list(self.assigns)},
                          sum(self.assigns.values())))
        for pattern, (_, w) in self.code.items():
            parts.append(({"type": "code", "pattern": pattern}, w))
        for kind, w in self.plain.items():
            parts.append(({"type": kind}, w))
        total = sum(w for _, w in parts) or 1.0
        out = []
        for d, w in parts:
            out.append({**d, "weight": w / total})
        if out:  # the weights add up to 1 exactly
            out[-1]["weight"] = 1.0 - sum(c["weight"] for c in out[:-1])
        return out

    def summary(self) -> str:
        """The checks in words, for the import report."""
        said = []
        if self.calls:
            said.append(f"calls {', '.join(self.calls)}")
        if self.assigns:
            said.append(f"assigns {', '.join(self.assigns)}")
        said += [f"code {what}" for what, _ in self.code.values()]
        said += [{"runs": "runs (no errors)", "ran": "ran (cells run, outputs kept)",
                  "documented": "documented (comments of the student's own)"}[k]
                 for k in self.plain]
        return "; ".join(said)


def accepted_group(names: list[str] | tuple[str, ...]) -> str:
    """Names any of which is accepted, as one any-of entry, each lubridate parser with
    its variants for a time: ["mdy", "parse_date_time"] -> "mdy | mdy_h | mdy_hm |
    mdy_hms | parse_date_time"."""
    return " | ".join(dict.fromkeys(x for n in names for x in lubridate_family(n.strip())))
