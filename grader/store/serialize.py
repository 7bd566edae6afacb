"""GradeReport <-> plain JSON, exactly.

The store keeps each report as JSON so that what the instructor sees later is
what the grader produced, field for field. ``report_to_dict`` turns a report
into JSON-native values (tuples become lists, nested dataclasses become dicts);
``report_from_dict`` rebuilds every nested dataclass (``Evidence``, ``Flag``,
``CheckResult``, ``CriterionResult``, ``LayerResult``) so that

    report_from_dict(json.loads(json.dumps(report_to_dict(r)))) == r

Reading is tolerant in one direction only: keys this version does not know
(such as the derived ``needs_review`` that ``GradeReport.to_dict`` adds) are
ignored, and fields missing from an older record take their dataclass default.
A missing field without a default, or a value JSON cannot hold, is an error,
never a guess. The one change writing makes: a lone UTF-16 surrogate in any
string (which no UTF-8 writer, SQLite included, accepts) is written as U+FFFD,
so a report that kept one from a kernel's output is still stored and exported.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..safe_text import scrub
from ..types import CheckResult, CriterionResult, Evidence, Flag, GradeReport, LayerResult
from .legacy_facts import facts_from, legacy_facts

__all__ = ["report_from_dict", "report_from_json", "report_to_dict", "report_to_json"]

T = TypeVar("T")
_Converter = Callable[[Any], Any]


def _plain(value: Any, path: str) -> Any:
    """``value`` as JSON-native data; ``path`` names the place for error messages."""
    if isinstance(value, str):
        return scrub(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), f"{path}.{f.name}")
                for f in dataclasses.fields(value)}
    if isinstance(value, list | tuple):
        return [_plain(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{path}: key {k!r} is not a string; JSON keys must be")
            out[scrub(k)] = _plain(v, f"{path}.{k}")
        return out
    raise TypeError(f"{path}: {type(value).__name__} cannot be stored as JSON")


def report_to_dict(r: GradeReport) -> dict[str, Any]:
    """The report as JSON-native data (dicts, lists, str, numbers, bool, None).

    Raises ``TypeError`` naming the offending place when a layer put something
    JSON cannot hold (a Path, a set, a non-string key) into ``details``.
    """
    out = _plain(r, "report")
    assert isinstance(out, dict)
    return out


def _build(cls: type[T], data: Any, convert: Mapping[str, _Converter] | None = None) -> T:
    """An instance of dataclass ``cls`` from ``data``, converting nested fields."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{cls.__name__}: expected an object, got {type(data).__name__}")
    convert = convert or {}
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            value = data[f.name]
            kwargs[f.name] = convert[f.name](value) if f.name in convert else value
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ValueError(f"{cls.__name__}: required field {f.name!r} is missing")
    return cls(**kwargs)


def _list_of(item: Callable[[Any], T]) -> Callable[[Any], list[T]]:
    def convert(value: Any) -> list[T]:
        if not isinstance(value, list | tuple):
            raise ValueError(f"expected a list, got {type(value).__name__}")
        return [item(v) for v in value]
    return convert


def _tuple_of(item: Callable[[Any], T]) -> Callable[[Any], tuple[T, ...]]:
    as_list = _list_of(item)
    return lambda value: tuple(as_list(value))


def _evidence(d: Any) -> Evidence:
    return _build(Evidence, d)


def _flag(d: Any) -> Flag:
    return _build(Flag, d, {"evidence": _tuple_of(_evidence)})


def _check(d: Any) -> CheckResult:
    """A stored check result; one stored before results carried facts gets them from
    its message (``grader.store.legacy_facts``), so the letters read facts alone."""
    result = _build(CheckResult, d, {"evidence": _tuple_of(_evidence), "facts": facts_from})
    if isinstance(d, Mapping) and "facts" not in d:
        result = dataclasses.replace(result, facts=legacy_facts(result.check, result.message,
                                                                 result.target))
    return result


def _criterion(d: Any) -> CriterionResult:
    return _build(CriterionResult, d, {"checks": _list_of(_check),
                                       "review_reasons": _list_of(str)})


def _dict(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected an object, got {type(value).__name__}")
    return dict(value)


def _layer(d: Any) -> LayerResult:
    return _build(LayerResult, d, {
        "checks": _list_of(_check), "flags": _list_of(_flag), "notes": _list_of(str),
        "details": _dict,
    })


def _layers(value: Any) -> dict[str, LayerResult]:
    return {str(k): _layer(v) for k, v in _dict(value).items()}


def report_from_dict(d: Mapping[str, Any]) -> GradeReport:
    """Rebuild a ``GradeReport`` (and every nested dataclass) from ``report_to_dict`` output.

    Raises ``ValueError`` when a required field is missing or a nested value has
    the wrong shape.
    """
    return _build(GradeReport, d, {
        "criteria": _list_of(_criterion), "flags": _list_of(_flag), "layers": _layers,
    })


def report_to_json(r: GradeReport) -> str:
    """The report as a JSON string; NaN and infinities are refused (``ValueError``)."""
    return json.dumps(report_to_dict(r), ensure_ascii=False, allow_nan=False,
                      separators=(",", ":"))


def report_from_json(text: str) -> GradeReport:
    """Inverse of ``report_to_json``."""
    return report_from_dict(json.loads(text))
