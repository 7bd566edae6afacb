"""Facts for results stored before results carried them (the store's older grades).

A grade stored before ``grader.types.Facts`` holds only each check's sentence; the
letters read facts, so a stored result without them gets them here, once, as it is
loaded: read from the sentences the layers wrote then. Nothing else reads a message.
"""

from __future__ import annotations

import re
from typing import Any

from ..types import NO_FACTS, Facts, Part

TEST_STATES = (("passed", "passed"), ("failed", "failed: "), ("timeout", "timed out: "),
               ("dead", "the kernel died: "), ("not run", "not run: "),
               ("unreliable", "not trusted: "))
FAILED_FOR_STUDENT = "this cell failed when the student ran it"
NO_OWN_CODE = ("not run: the notebook has no code of the student's own",
               "no code of the student's own")


def legacy_facts(check: str, message: str, target: str = "") -> Facts:
    """The facts of a stored result of type ``check`` whose sentence is ``message`` (and
    whose target, for calls and assigns, lists the entries looked for)."""
    if message.startswith(NO_OWN_CODE):
        return Facts("no_own_code")
    if check in ("calls", "assigns"):
        verb = "called" if check == "calls" else "assigned"
        m = re.search(rf"not {verb} in the student's code: (.*)$", message)
        missing = tuple(n.strip() for n in m.group(1).split(",")) if m else ()
        expected = tuple(n.strip() for n in target.split(", ") if n.strip())
        return Facts("missing" if missing else "found", expected=expected, missing=missing,
                     found=tuple(n for n in expected if n not in missing))
    if check == "runs":
        if m := re.match(r"(\d+) of the student's (\d+) code cells raised errors", message):
            return Facts("errors", counts=(("errors", int(m[1])), ("cells", int(m[2]))))
        if ok := re.search(r"(\d+) code cells ran with (\d+) errors", message):
            return Facts("ran", counts=(("errors", int(ok[2])), ("cells", int(ok[1]))))
        return NO_FACTS  # a sentence it does not know: said as what was looked for
    if check == "answer":
        return _answer(message)
    if check == "test":
        return Facts(next((state for state, said in TEST_STATES if message.startswith(said)),
                          ""))
    if check in ("printed", "plot") and message.startswith(FAILED_FOR_STUDENT):
        return Facts("failed_for_student")
    if check == "level":
        return Facts("level", quoted=message)
    if check == "output":
        return _output(message)
    if check in ("documented", "ran") and (m := re.match(r"(\d+) of (\d+) cells", message)):
        asked = re.search(r"\((\d+)% asked", message)
        if check == "documented":
            return Facts("bare", counts=(("documented", int(m[1])), ("cells", int(m[2])),
                                         ("asked", int(asked[1]) if asked else 50)))
        failed = "failed when" in message
        return Facts("failed" if failed else "unrun" if "never run: " in message else "ran",
                     counts=(("ran", int(m[1])), ("cells", int(m[2]))))
    return NO_FACTS


def _answer(message: str) -> Facts:
    if "not found in the notebook" in message:
        return Facts("not_found")
    if message.startswith("unanswered"):
        return Facts("unanswered")
    m = re.match(r"answered with (\d+) words(?:, below the minimum of (\d+)|, below the "
                 r"(\d+) asked)?", message)
    if m is None:
        return NO_FACTS
    counts: list[tuple[str, float]] = [("words", int(m[1])), ("asked", int(m[2] or m[3] or 0))]
    quoted = ""
    if (lv := re.search(r"; level (\d+)%(?:: (.*))?$", message)):
        counts.append(("level", int(lv[1])))
        quoted = lv[2] or ""
    found = re.search(r"\(mentions: ([^)]*)\)", message)
    missing = re.search(r"\(missing: ([^)]*)\)", message)
    state = "no_level" if "no level of the rubric is met" in message else "answered"
    return Facts(state, found=tuple(p.strip() for p in found[1].split(";")) if found else (),
                 missing=tuple(p.strip() for p in missing[1].split(";")) if missing else (),
                 counts=tuple(counts), quoted=quoted)


_ASPECT = re.compile(r"(?:^|; )(type|shape|columns|rows|values): ")
_TOL = re.compile(r"\s*\(rtol [^)]*\)(?: \(order ignored\))?\s*$")
SLIP_NOTE, FIRST_CAUSE, HARDCODED = "; not charged here: ", "; first cause: ", "; scored 0: "


def _output(message: str) -> Facts:
    """An output check's sentence as it was written before its facts: one part per
    aspect ("type: ok; shape: (3, 2) != solution (4, 2)"), or a plain state."""
    counts = ((("first_cause", 1),) if FIRST_CAUSE in message else ()) + (
        (("hardcoded", 1),) if HARDCODED in message else ())
    message = message.partition(SLIP_NOTE)[0].partition(HARDCODED)[0]
    spots = list(_ASPECT.finditer(message))
    if not spots or spots[0].start() != 0:
        state = ("not_checked" if message.startswith("not checked") else
                 "no_key" if "solution does not define" in message else
                 "uninspectable" if "could not be inspected" in message else
                 "undefined" if "is not defined after running" in message else
                 "no_own_code" if message.startswith("no code of the student's own") else "")
        return Facts(state, counts=counts)
    ends = [m.start() for m in spots[1:]] + [len(message)]
    parts = tuple(_old_part(m.group(1), message[m.end():end])
                  for m, end in zip(spots, ends, strict=True))
    return Facts("compared", counts=counts, parts=parts)


def _old_part(name: str, text: str) -> Part:
    if text.startswith("ok"):
        return Part(name, True)
    if "in the solution" in text:
        return Part(name, False, "no_key")
    if "could not be inspected" in text:
        return Part(name, False, "uninspectable")
    if "is not defined in the student" in text:
        return Part(name, False, "undefined")
    m = re.match(rf"{name} (.+?) != solution (.+)$", text) if name in ("type", "shape") \
        else re.match(r"rows (\S+) != solution (\S+)", text) if name == "rows" else None
    if m:
        return Part(name, False, "differ", m[1], m[2])
    if name == "columns":
        return _old_columns(text)
    if name == "values":
        return _old_values(_TOL.sub("", text))
    return Part(name, False)


def _names(text: str | None) -> tuple[str, ...]:
    from ..pyast import literal_eval

    try:
        value = literal_eval(text or "[]")
    except (ValueError, SyntaxError):
        return ()
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


def _old_columns(text: str) -> Part:
    if m := re.match(r"columns differ: (?:missing (\[.*?\]))?(?:, )?(?:unexpected (\[.*\]))?$",
                     text):
        return Part("columns", False, "differ", missing=_names(m[1]), extra=_names(m[2]))
    if m := re.match(r"columns in a different order: .* != solution (\[.*\])$", text):
        return Part("columns", False, "order", missing=_names(m[1]))
    if m := re.match(r"no columns; the solution has (\[.*\])$", text):
        return Part("columns", False, "none", missing=_names(m[1]))
    return Part("columns", False, "not_table")


def _old_values(text: str) -> Part:
    if m := re.match(r"(\d+) of (\d+) rows/elements differ(?: \(order ignored\))?; first at "
                     r"(row \d+)(?:, column '(.*?)'|, (position \d+))?: (.*)$", text):
        got, _, want = m[6].partition(" != solution ")
        return Part("values", False, "differ", got, want, at=m[3], column=m[4] or "",
                    position=m[5] or "", counts=(("differ", int(m[1])), ("of", int(m[2]))))
    if m := re.match(r"(\d+) rows/elements != solution (\d+)$", text):
        return Part("values", False, "count", m[1], m[2])
    if m := re.match(r"value (.*) != solution (.*)$", text):
        return Part("values", False, "value", m[1], m[2])
    if m := re.search(r"; (.+?):(sum|mean|min|max) (\S+) != solution (\S+)$", text):
        return Part("values", False, "summary", m[3], m[4], column=m[1], stat=m[2])
    return Part("values", False)


def facts_from(data: Any) -> Facts:
    """``Facts`` from their JSON (a stored report's)."""
    if not isinstance(data, dict):
        raise ValueError(f"facts: expected an object, got {type(data).__name__}")
    return Facts(str(data.get("state", "")), *_texts(data, "expected", "found", "missing"),
                 counts=_counts(data), quoted=str(data.get("quoted", "")),
                 parts=tuple(_part(p) for p in data.get("parts", ())))


def _texts(data: dict, *keys: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(str(v) for v in data.get(k, ())) for k in keys)


def _counts(data: dict) -> tuple[tuple[str, float], ...]:
    return tuple((str(k), float(v)) for k, v in data.get("counts", ()))


def _part(data: Any) -> Part:
    if not isinstance(data, dict):
        raise ValueError(f"facts.parts: expected objects, got {type(data).__name__}")
    return Part(str(data.get("name", "")), bool(data.get("ok")),
                *(str(data.get(k, "")) for k in ("how", "got", "want")),
                *_texts(data, "missing", "extra"),
                *(str(data.get(k, "")) for k in ("at", "column", "position", "stat")),
                counts=_counts(data))
