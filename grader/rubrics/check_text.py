"""The text the rubric editor shows for a check's target and options, and its parser.

Lists are comma-separated; options are ``key=value`` pairs separated by ``;``
(``compare=type, shape; rtol=1e-06; partial=type:0.4, shape:0.6``). A text that
holds ``,``, ``;`` or ``"``, or starts or ends with a space, is written as a JSON
string (``"Your answer, here"``), so every value survives the round trip exactly: a
test's code of several lines is one JSON string (``code="x = f(2)\\nassert x == 4"``).
A value check's expected value is JSON (``expected=57``, ``expected=[1.5, 2.5]``);
several accepted values are ``accept=[57, 58]``. A printed check's number is
``number=57.3``. Parsers raise ValueError with a message fit for the instructor.
"""

from __future__ import annotations

import json
import math
from typing import Any

from .. import check_types as registry
from .check_fields import CHECK_FIELDS, Check, thaw

__all__ = ["OPTION_NAMES", "TARGET_FIELD", "finite", "format_options", "format_target",
           "format_value", "parse_list", "parse_value", "quote", "split_outside_quotes", "unquote"]

# The field each check type shows in the ``target`` column (its module's ``target_field``).
TARGET_FIELD = {t.name: t.target_field for t in registry.types() if t.target_field}
OPTION_NAMES = (*CHECK_FIELDS, "accept")  # several expected values are written as accept
_DEFAULT = Check(type="")


def quote(text: str) -> str:
    if not text or text != text.strip() or any(c in text for c in ',;"') \
            or not text.isprintable():
        return json.dumps(text, ensure_ascii=False)
    return text


def split_outside_quotes(text: str, sep: str) -> list[str]:
    """``text`` split at ``sep`` outside double-quoted (JSON) strings."""
    parts, buf, quoted, escaped = [], [], False, False
    for ch in text:
        if quoted:
            escaped, quoted = (False, True) if escaped else (ch == "\\", ch != '"')
        elif ch == '"':
            quoted = True
        elif ch == sep:
            parts.append("".join(buf))
            buf = []
            continue
        buf.append(ch)
    if quoted:
        raise ValueError("a quoted text is not closed with \"")
    parts.append("".join(buf))
    return parts


def unquote(text: str) -> str:
    text = text.strip()
    if not text.startswith('"'):
        return text
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{text}: not one quoted text ({exc.msg})") from None
    if not isinstance(value, str):
        raise ValueError(f"{text}: not a quoted text")
    return value


def parse_list(text: str) -> tuple[str, ...]:
    return tuple(unquote(p) for p in split_outside_quotes(text, ",") if p.strip())


def _json(value: Any) -> str:
    return json.dumps(thaw(value), ensure_ascii=False)


def format_value(name: str, value: Any) -> str:
    if name == "expected":
        return _json(value[0]) if len(value) == 1 else _json(list(value))
    if name == "accept":
        return _json(list(value))
    if name in ("key_points", "levels"):
        return _json([v.to_dict() for v in value])
    if name == "partial":
        return ", ".join(f"{quote(k)}:{v!r}" for k, v in value)
    if isinstance(value, tuple):
        return ", ".join(quote(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quote(value)
    return repr(value)


def parse_value(name: str, text: str) -> Any:
    if name in ("expected", "accept"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"{text.strip()!r} is not a JSON value (a number, \"a text\", "
                             "true, or a [list])") from None
        if name == "accept" and not isinstance(value, list):
            raise ValueError("accept takes a [list] of the accepted values")
        return value
    if name in ("number", "min_share"):
        return finite(text)
    if name in ("key_points", "levels"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(f"{name} takes a JSON [list] of objects") from None
        if not isinstance(value, list):
            raise ValueError(f"{name} takes a JSON [list] of objects")
        return value
    default = getattr(_DEFAULT, name)
    if name == "partial":
        pairs = []
        for part in split_outside_quotes(text, ","):
            if not part.strip():
                continue
            aspect, colon, fraction = part.rpartition(":")
            if not colon:
                raise ValueError(f"{part.strip()!r}: write aspect:fraction")
            pairs.append((unquote(aspect), finite(fraction)))
        return dict(pairs)
    if isinstance(default, tuple):
        return list(parse_list(text))
    if isinstance(default, bool):
        word = text.strip().lower()
        if word not in ("true", "false", "yes", "no", "1", "0"):
            raise ValueError(f"{text.strip()!r} is not true or false")
        return word in ("true", "yes", "1")
    if isinstance(default, int):
        try:
            return int(text.strip())
        except ValueError:
            raise ValueError(f"{text.strip()!r} is not a whole number") from None
    if isinstance(default, float):
        return finite(text)
    return unquote(text)


def finite(text: str) -> float:
    try:
        value = float(text.strip())
    except ValueError:
        raise ValueError(f"{text.strip()!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text.strip()!r} is not a finite number")
    return value


def format_target(ch: Check) -> str:
    name = TARGET_FIELD.get(ch.type)
    return "" if name is None else format_value(name, getattr(ch, name))


def format_options(ch: Check) -> str:
    """The check's fields besides type, weight and target that differ from the defaults."""
    target = TARGET_FIELD.get(ch.type)
    if ch.type == "printed" and not ch.pattern:
        target = None  # a printed check of a number: the pattern column stays empty
    parts = []
    for name in CHECK_FIELDS:
        value = getattr(ch, name)
        if name == target or value == getattr(_DEFAULT, name):
            continue
        key = "accept" if name == "expected" and len(value) > 1 else name
        parts.append(f"{key}={format_value(key, value)}")
    return "; ".join(parts)
