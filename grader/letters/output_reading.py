"""An ``output`` check read for the student: a variable against the expected result.

The check's facts (``grader.layers.outputs`` and ``grader.layers.compare``) hold one
``Part`` per aspect (type, shape, columns, rows, values); each becomes what matches, what
differs said plainly (a size, the columns missing or extra, a value expected and the
one found) and the next step. A variable typed in rather than computed is named.
"""

from __future__ import annotations

from ..pyast import literal_eval
from ..types import CheckResult, Part
from .reading import Context, Reading
from .text import Code, Phrase, Quote, codes, cut, join_and, phrase, plural

_KINDS = {"DataFrame": "data frame", "data.frame": "data frame", "tbl_df": "data frame",
          "tbl": "data frame", "grouped_df": "grouped data frame", "Series": "Series",
          "list": "list", "tuple": "tuple", "dict": "dictionary", "int": "number",
          "float": "number", "numeric": "number", "integer": "number", "double": "number",
          "str": "text value", "character": "text value", "bool": "logical value",
          "logical": "logical value", "ndarray": "array"}
UNCHECKED = ("not_checked", "no_key", "uninspectable")  # the instructor looks at these


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


def read_output(ch: CheckResult, ctx: Context) -> Reading:
    var = ch.target
    facts = ch.facts
    hardcoded = facts.has("hardcoded")
    out = Reading()
    where = ctx.places.assigned(var, ctx.evidence, ctx.task)
    ref = phrase(Code(var), f" ({where})" if where else "")
    aspects = {part.name: part for part in facts.parts}
    if not aspects:
        return _output_plain(ch, facts.state, ref, ctx)
    bad = {a: part for a, part in aspects.items() if not part.ok}
    if any(part.how in UNCHECKED for part in bad.values()):
        return Reading(unchecked=True)
    if any(part.how == "undefined" for part in bad.values()):
        return _output_plain(ch, "undefined", ref, ctx)
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
    for aspect, part in bad.items():
        before = len(out.missing)
        _aspect(aspect, part, var, ref, out, ctx, set(bad))
        if len(out.missing) > before:
            ref = phrase(Code(var))  # the place is named once
    return out


def _output_plain(ch: CheckResult, state: str, ref: Phrase, ctx: Context) -> Reading:
    var = ch.target
    if state in UNCHECKED:
        return Reading(unchecked=True)
    if state in ("undefined", "no_own_code") and var in ctx.unassigned:
        return Reading()  # the criterion's assigns check already says it is not created
    if state == "undefined" and ch.evidence:
        return _stopped(ch, ref, ctx)
    if state == "undefined":
        where = ctx.places.assigned(var, ctx.evidence, ctx.task)
        make = phrase("Complete the code that creates ", Code(var), f" in {where}") if where \
            else phrase("Create ", Code(var), ctx.part())
        return Reading(missing=[phrase(ref, " does not exist after your notebook runs.")],
                       steps=[phrase(make, ", then restart and run the whole notebook to check "
                                     "that it is there.")])
    if state == "no_own_code":
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
    cause = rest[0] if ch.facts.has("first_cause") and rest else None
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


def _aspect(aspect: str, part: Part, var: str, ref: Phrase, out: Reading, ctx: Context,
            failed: set[str]) -> None:
    """One failed aspect of an output check; ``failed`` names all of them (a row count
    that the shape already gave is not said twice)."""
    if aspect == "type" and part.how == "differ":
        want = _kind(part.want)
        out.missing.append(phrase(ref, f" is a {_kind(part.got)}; a {want} is expected."))
        out.steps.append(phrase("Make ", Code(var), f" a {want}."))
    elif aspect == "shape" and part.how == "differ":
        got, want = _dims(part.got), _dims(part.want)
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
            shown = [_size(d) if d else s for d, s in ((got, part.got), (want, part.want))]
            out.missing.append(phrase(ref, f" has {shown[0]}; {shown[1]} are expected."))
    elif aspect == "rows" and part.how == "differ":
        if "shape" not in failed:
            out.missing.append(_rows_line(ref, part.got, part.want))
    elif aspect == "columns":
        _columns(part, var, ref, out, "type" in failed)
    elif aspect == "values":
        if not ({"shape", "rows"} & failed and part.how == "count"):
            _values(part, var, ref, out)
    else:
        out.missing.append(phrase(ref, " does not match the expected result."))


def _columns(part: Part, var: str, ref: Phrase, out: Reading, typed: bool) -> None:
    """``typed``: the type check failed too (and said so)."""
    if part.how == "differ":
        missing, extra = list(part.missing), list(part.extra)
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
    if part.how == "order":
        out.missing.append(phrase(ref, " has the right columns in another order."))
        out.steps.append(phrase("Put the columns of ", Code(var), " in this order: ",
                                codes(list(part.missing), limit=12), "."))
        return
    if part.how == "none":
        names = codes(list(part.missing))
        if typed:  # the type's line says it is not a table
            out.steps.append(phrase("Give ", Code(var), " the columns ", names, "."))
        else:
            out.missing.append(phrase(ref, " is not a table; a table with the columns ", names,
                                      " is expected."))
        return
    out.missing.append(phrase(ref, " should not be a table: a single value or a vector is "
                                   "expected."))


def _values(part: Part, var: str, ref: Phrase, out: Reading) -> None:
    if part.how == "differ":
        found, expected = cut(part.got, 60), cut(part.want, 60)
        at = phrase(part.at, ", column ", Code(part.column)) if part.column else \
            phrase(part.at, f", {part.position}" if part.position else "")
        rows = "rows" if part.column or found.startswith("[") else "values"
        if part.at == "row 1" and rows == "values":
            at = phrase("the first value")
        differ = phrase(ref, f": {int(part.count('differ'))} of {int(part.count('of'))} {rows} "
                             "differ from the expected result")
        if found == expected:  # whole rows, cut to the same start: the place says enough
            out.missing.append(phrase(differ, ", starting at ", at, "."))
        else:
            out.missing.append(phrase(differ, ". The first is at ", at, ": expected ",
                                      Code(expected), ", found ", Code(found), "."))
        out.steps.append(phrase("Check the calculation that makes ", Code(var), ", starting "
                                "with ", at, "."))
        return
    if part.how == "count":
        out.missing.append(_rows_line(ref, part.got, part.want))
        return
    if part.how == "value":
        out.missing.append(phrase(ref, " is ", Code(cut(part.got, 60)), "; expected ",
                                  Code(cut(part.want, 60)), "."))
        out.steps.append(phrase("Check the calculation that makes ", Code(var), "."))
        return
    if part.how == "summary":
        out.missing.append(phrase(ref, f": the {part.stat} of column ", Code(part.column),
                                  " is ", Code(part.got), "; expected ", Code(part.want), "."))
        out.steps.append(phrase("Check the calculation behind the column ", Code(part.column),
                                " of ", Code(var), "."))
        return
    out.missing.append(phrase(ref, "'s values differ from the expected result."))
    out.steps.append(phrase("Check the calculation that makes ", Code(var), "."))
