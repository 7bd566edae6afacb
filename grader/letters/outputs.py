"""An ``output`` check read for the student: a variable against the expected result.

The check's message (``grader.layers.outputs`` and ``grader.layers.compare``) holds one
part per aspect (type, shape, columns, rows, values); each becomes what matches, what
differs said plainly (a size, the columns missing or extra, a value expected and the
one found) and the next step. A variable typed in rather than computed is named.
"""

from __future__ import annotations

import re

from ..pyast import literal_eval
from ..types import CheckResult
from .reading import Context, Reading
from .text import Code, Phrase, Quote, codes, cut, join_and, phrase, plural

_ASPECT = re.compile(r"(?:^|; )(type|shape|columns|rows|values): ")
_TOL = re.compile(r"\s*\(rtol [^)]*\)(?: \(order ignored\))?\s*$")
_KINDS = {"DataFrame": "data frame", "data.frame": "data frame", "tbl_df": "data frame",
          "tbl": "data frame", "grouped_df": "grouped data frame", "Series": "Series",
          "list": "list", "tuple": "tuple", "dict": "dictionary", "int": "number",
          "float": "number", "numeric": "number", "integer": "number", "double": "number",
          "str": "text value", "character": "text value", "bool": "logical value",
          "logical": "logical value", "ndarray": "array"}


def _aspects(message: str) -> dict[str, str]:
    spots = list(_ASPECT.finditer(message))
    if not spots or spots[0].start() != 0:
        return {}
    ends = [s.start() for s in spots[1:]] + [len(message)]
    return {s.group(1): message[s.end():end] for s, end in zip(spots, ends, strict=True)}


def _kind(type_name: str) -> str:
    name = type_name.strip()
    return _KINDS.get(name, name)


def _dims(shape: str) -> tuple[int, ...] | None:
    try:
        value = literal_eval(shape)
    except (ValueError, SyntaxError):
        return None
    return tuple(value) if isinstance(value, tuple) and all(
        isinstance(n, int) for n in value) else None


def _size(dims: tuple[int, ...]) -> str:
    if len(dims) == 2:
        return f"{plural(dims[0], 'row')} and {plural(dims[1], 'column')}"
    if len(dims) == 1:
        return plural(dims[0], "element")
    return "shape " + " x ".join(str(n) for n in dims)


def _names_list(text: str) -> list[str]:
    try:
        value = literal_eval(text)
    except (ValueError, SyntaxError):
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


# The layer's notes after a comparison (``grader.layers.slips``): columns a later part's
# failed cell would have written, left out of the comparison; and the earlier failed cell
# that is the first cause of a variable never made.
SLIP_NOTE, FIRST_CAUSE = "; not charged here: ", "; first cause: "


def read_output(ch: CheckResult, ctx: Context) -> Reading:
    var = ch.target
    message = ch.message.partition(SLIP_NOTE)[0]  # charged where the later cell failed
    message, _, hardcoded = message.partition("; scored 0: ")
    out = Reading()
    where = ctx.places.assigned(var, ctx.evidence, ctx.task)
    ref = phrase(Code(var), f" ({where})" if where else "")
    aspects = _aspects(message)
    if not aspects:
        return _output_plain(ch, message, ref, ctx)
    bad = {a: text for a, text in aspects.items() if not text.startswith("ok")}
    if any("in the solution" in t or "could not be inspected" in t for t in bad.values()):
        return Reading(unchecked=True)
    if any("is not defined in the student" in t for t in bad.values()):
        return _output_plain(ch, f"{var} is not defined after running the notebook", ref, ctx)
    good = [a for a in aspects if a not in bad]
    if not bad and not hardcoded:
        out.done.append(phrase(Code(var), " matches the expected result."))
        return out
    if good and bad:
        words = {"type": "type", "shape": "size", "columns": "columns", "rows": "number of rows",
                 "values": "values"}
        out.done.append(phrase(Code(var), " has the expected ",
                               join_and([words[a] for a in good]), "."))
    if hardcoded:
        out.missing.append(phrase(ref, " holds values typed in rather than computed by your "
                                       "code, so it earns no points here."))
        out.steps.append(phrase("Compute ", Code(var), " from the data with code."))
    for aspect, text in bad.items():
        before = len(out.missing)
        _aspect(aspect, text, var, ref, out, ctx, set(bad))
        if len(out.missing) > before:
            ref = phrase(Code(var))  # the place is named once
    return out


def _output_plain(ch: CheckResult, message: str, ref: Phrase, ctx: Context) -> Reading:
    var = ch.target
    if message.startswith("not checked") or "solution does not define" in message \
            or "could not be inspected" in message:
        return Reading(unchecked=True)
    absent = "is not defined after running" in message \
        or message.startswith("no code of the student's own")
    if absent and var in ctx.unassigned:
        return Reading()  # the criterion's assigns check already says it is not created
    if "is not defined after running" in message and ch.evidence:
        return _stopped(ch, ref, ctx)
    if "is not defined after running" in message:
        where = ctx.places.assigned(var, ctx.evidence, ctx.task)
        make = phrase("Complete the code that creates ", Code(var), f" in {where}") if where \
            else phrase("Create ", Code(var), ctx.part())
        return Reading(missing=[phrase(ref, " does not exist after your notebook runs.")],
                       steps=[phrase(make, ", then restart and run the whole notebook to check "
                                     "that it is there.")])
    if message.startswith("no code of the student's own"):
        return Reading(missing=[phrase("None of your code computes ", Code(var), " yet.")],
                       steps=[phrase("Write the code that computes ", Code(var), ctx.part(),
                                     ".")])
    if ch.score >= 1:
        return Reading(done=[phrase(Code(var), " matches the expected result.")])
    return Reading(missing=[phrase(ref, " does not match the expected result.")])


def _stopped(ch: CheckResult, ref: Phrase, ctx: Context) -> Reading:
    """A variable never made because the cell that makes it stopped with an error (the
    evidence: that cell, then, when the message names a first cause, the earlier cell
    whose error it follows from): the cause, where the points were lost."""
    failed, *rest = ch.evidence
    cell = ctx.places.cell(failed.cell_id) or "its cell"
    out = Reading(missing=[phrase(ref, f" does not exist after your notebook runs: {cell} "
                                       "stops with an error before making it.")])
    out.quotes.append(Quote(ctx.places.cell(failed.cell_id), _first_line(failed.text), "error"))
    cause = rest[0] if FIRST_CAUSE in ch.message and rest else None
    first = ctx.places.cell(cause.cell_id) if cause is not None else ""
    if cause is not None and first:
        out.missing.append(phrase(f"That error follows from an earlier one: {first} stopped "
                                  f"first, before it made what {cell} needs."))
        out.steps.append(phrase(f"Fix the error in {first} first ({cell} needs what it "
                                "makes), then restart and run the whole notebook to check "
                                "that ", Code(ch.target), " is there."))
    else:
        out.steps.append(phrase(f"Fix the error in {cell}, then restart and run the whole "
                                "notebook to check that ", Code(ch.target), " is there."))
    return out


def _first_line(text: str) -> str:
    return cut(next((line for line in text.splitlines() if line.strip()), text), 120)


def _rows_line(ref: Phrase, got: str, want: str) -> Phrase:
    return phrase(ref, f" has {got} rows; {want} are expected.")


def _aspect(aspect: str, text: str, var: str, ref: Phrase, out: Reading, ctx: Context,
            failed: set[str]) -> None:
    """One failed aspect of an output check; ``failed`` names all of them (a row count
    that the shape already gave is not said twice)."""
    m: re.Match[str] | None
    if aspect == "type" and (m := re.match(r"type (.+?) != solution (.+)$", text)):
        want = _kind(m.group(2))
        out.missing.append(phrase(ref, f" is a {_kind(m.group(1))}; a {want} is expected."))
        out.steps.append(phrase("Make ", Code(var), f" a {want}."))
    elif aspect == "shape" and (m := re.match(r"shape (.+?) != solution (.+)$", text)):
        got, want = _dims(m.group(1)), _dims(m.group(2))
        if "type" in failed and (got is None or want is None or len(got) != len(want)):
            return  # a Series where a data frame is expected: the type says it
        if got and want and len(got) == len(want) == 2:
            if got[0] != want[0]:
                out.missing.append(_rows_line(ref, str(got[0]), str(want[0])))
                out.steps.append(phrase("Check the filtering, grouping or joining that builds ",
                                        Code(var), f": it should have {plural(want[0], 'row')}."))
            if got[1] != want[1] and "columns" not in failed:
                out.missing.append(phrase(ref, f" has {plural(got[1], 'column')}; "
                                               f"{want[1]} are expected."))
        else:
            shown = [_size(d) if d else s for d, s in ((got, m.group(1)), (want, m.group(2)))]
            out.missing.append(phrase(ref, f" has {shown[0]}; {shown[1]} are expected."))
    elif aspect == "rows" and (m := re.match(r"rows (\S+) != solution (\S+)", text)):
        if "shape" not in failed:
            out.missing.append(_rows_line(ref, m.group(1), m.group(2)))
    elif aspect == "columns":
        _columns(text, var, ref, out, "type" in failed)
    elif aspect == "values":
        if not ({"shape", "rows"} & failed and re.match(r"\d+ rows/elements != ", text)):
            _values(text, var, ref, out)
    else:
        out.missing.append(phrase(ref, " does not match the expected result."))


def _columns(text: str, var: str, ref: Phrase, out: Reading, typed: bool) -> None:
    """``typed``: the type check failed too (and said so)."""
    m = re.match(r"columns differ: (?:missing (\[.*?\]))?(?:, )?(?:unexpected (\[.*\]))?$", text)
    if m:
        missing, extra = _names_list(m.group(1) or "[]"), _names_list(m.group(2) or "[]")
        if missing:
            word = "column" if len(missing) == 1 else "columns"
            out.missing.append(phrase(ref, f" lacks the {word} ", codes(missing), "."))
            ref = phrase(Code(var))
        if extra:
            out.missing.append(phrase(ref, " has columns that are not asked for: ",
                                      codes(extra), "."))
        if missing and extra:
            out.steps.append(phrase("Check the column names of ", Code(var), ": ",
                                    codes(missing), " are expected, not ", codes(extra), "."))
        elif missing:
            out.steps.append(phrase("Add ", codes(missing), " to ", Code(var), "."))
        elif extra:
            out.steps.append(phrase("Keep only the columns asked for in ", Code(var), "."))
        return
    m = re.match(r"columns in a different order: .* != solution (\[.*\])$", text)
    if m:
        out.missing.append(phrase(ref, " has the right columns in another order."))
        out.steps.append(phrase("Put the columns of ", Code(var), " in this order: ",
                                codes(_names_list(m.group(1)), limit=12), "."))
        return
    m = re.match(r"no columns; the solution has (\[.*\])$", text)
    if m:
        names = codes(_names_list(m.group(1)))
        if typed:  # the type's line says it is not a table
            out.steps.append(phrase("Give ", Code(var), " the columns ", names, "."))
        else:
            out.missing.append(phrase(ref, " is not a table; a table with the columns ", names,
                                      " is expected."))
        return
    out.missing.append(phrase(ref, " should not be a table: a single value or a vector is "
                                   "expected."))


def _values(text: str, var: str, ref: Phrase, out: Reading) -> None:
    text = _TOL.sub("", text)
    m = re.match(r"(\d+) of (\d+) rows/elements differ(?: \(order ignored\))?; first at "
                 r"(row \d+)(?:, column '(.*?)'|, (position \d+))?: (.*)$", text)
    if m:
        found, _, expected = (cut(v, 60) for v in m.group(6).partition(" != solution "))
        at = phrase(m.group(3), ", column ", Code(m.group(4))) if m.group(4) else \
            phrase(m.group(3), f", {m.group(5)}" if m.group(5) else "")
        rows = "rows" if m.group(4) or found.startswith("[") else "values"
        if m.group(3) == "row 1" and rows == "values":
            at = phrase("the first value")
        differ = phrase(ref, f": {m.group(1)} of {m.group(2)} {rows} differ from the expected "
                             "result")
        if found == expected:  # whole rows, cut to the same start: the place says enough
            out.missing.append(phrase(differ, ", starting at ", at, "."))
        else:
            out.missing.append(phrase(differ, ". The first is at ", at, ": expected ",
                                      Code(expected), ", found ", Code(found), "."))
        out.steps.append(phrase("Check the calculation that makes ", Code(var), ", starting "
                                "with ", at, "."))
        return
    m = re.match(r"(\d+) rows/elements != solution (\d+)$", text)
    if m:
        out.missing.append(_rows_line(ref, m.group(1), m.group(2)))
        return
    m = re.match(r"value (.*) != solution (.*)$", text)
    if m:
        out.missing.append(phrase(ref, " is ", Code(cut(m.group(1), 60)), "; expected ",
                                  Code(cut(m.group(2), 60)), "."))
        out.steps.append(phrase("Check the calculation that makes ", Code(var), "."))
        return
    m = re.search(r"; (.+?):(sum|mean|min|max) (\S+) != solution (\S+)$", text)
    if m:
        out.missing.append(phrase(ref, f": the {m.group(2)} of column ", Code(m.group(1)),
                                  " is ", Code(m.group(3)), "; expected ", Code(m.group(4)), "."))
        out.steps.append(phrase("Check the calculation behind the column ", Code(m.group(1)),
                                " of ", Code(var), "."))
        return
    out.missing.append(phrase(ref, "'s values differ from the expected result."))
    out.steps.append(phrase("Check the calculation that makes ", Code(var), "."))


