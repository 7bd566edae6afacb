"""Partial credit of an old-system rubric: its rules become levels, its guidelines rows.

``partial_credit_rules`` name a section (``part4_date_operations``) and, for it, rules
that each give a ``multiplier`` of the section's points when a condition on the code
holds, tried in ``priority`` order. Each rule becomes one level of that section's
criterion (docs: a criterion's ``levels``): ``credit`` = the multiplier, ``says`` = the
explanation, ``when`` = ``code`` checks:

- ``regex``: one check of its ``pattern``;
- ``any_of``: one check, the patterns joined with ``|`` (each wrapped in ``(?:...)``);
- ``all_of``: one check per pattern, and one ``absent`` check per ``not_patterns`` entry;
- ``count_formats``: one check of a pattern matching the formats as quoted in the code
  (``"mdy"``, ``'dmy HM'``), ``min_count`` distinct ones at least. A ``max_count`` is what
  the order of the levels already says (three formats meet the level above first);
  where it is not, the report says so.

``not_patterns`` of any rule become ``absent`` checks. A rule whose pattern is not a
valid regular expression, whose condition type is unknown or whose section has no
criterion is not carried, and its row says why and what to do.

``grading_guidelines`` ("give 80% credit if they acknowledge the loss", grade ranges,
bonus points) become one row each: carried where a level or the answers' default
levels already give that credit, else what the instructor can do instead.
"""

from __future__ import annotations

import re
from typing import Any

from .import_items import OVERRIDE, RUBRICS_PAGE, ImportRow, value_text, words

__all__ = ["apply_credit", "guideline_rows", "rule_levels"]

_STOP = {"the", "and", "with", "for", "from", "that", "this", "into", "data", "part", "use",
         "uses", "used", "give", "credit", "student", "students", "if", "they", "are", "but"}


def _pattern(p: Any) -> str | None:
    if not isinstance(p, str) or not p:
        return None
    try:
        re.compile(p)
    except re.error:
        return None
    return p


def _when(rule: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """A rule's condition as ``code`` checks, or ([], why it cannot be)."""
    kind = rule.get("condition_type")
    patterns = rule.get("patterns") if isinstance(rule.get("patterns"), list) else []
    if kind == "regex":
        p = _pattern(rule.get("pattern"))
        if p is None:
            return [], f"its pattern {rule.get('pattern')!r} is not a regular expression"
        when = [{"type": "code", "pattern": p}]
    elif kind == "any_of":
        ok = [_pattern(p) for p in patterns]
        if not ok or None in ok:
            return [], "one of its patterns is not a regular expression"
        when = [{"type": "code", "pattern": "|".join(f"(?:{p})" for p in ok)}]
    elif kind == "all_of":
        ok = [_pattern(p) for p in patterns]
        if not ok or None in ok:
            return [], "one of its patterns is not a regular expression"
        when = [{"type": "code", "pattern": p} for p in ok]
    elif kind == "count_formats":
        formats = [f for f in rule.get("formats", []) if isinstance(f, str) and f]
        if not formats:
            return [], "it lists no formats"
        alts = "|".join(re.escape(f) for f in formats)
        when = [{"type": "code", "pattern": rf"(?<=[\"'])(?:{alts})\b",
                 "min_count": max(1, int(rule.get("min_count", 1) or 1)), "distinct": True}]
    else:
        return [], f"its condition type {kind!r} is not one the importer reads"
    nots = rule.get("not_patterns") if isinstance(rule.get("not_patterns"), list) else []
    for p in nots:
        if _pattern(p) is None:
            return [], f"its not-pattern {p!r} is not a regular expression"
        when.append({"type": "code", "pattern": p, "absent": True})
    return when, ""


def _said(when: list[dict[str, Any]]) -> str:
    out = []
    for ch in when:
        text = f"code {'lacks' if ch.get('absent') else 'matches'} /{ch['pattern']}/"
        if ch.get("min_count", 1) > 1:
            text += f" at least {ch['min_count']} times" + (" (distinct)" if ch.get(
                "distinct") else "")
        out.append(text)
    return " and ".join(out)


def rule_levels(key: str, rules: dict[str, Any], cid: str | None
                ) -> tuple[list[dict[str, Any]], list[ImportRow]]:
    """The levels of one section's rules, in priority order, and a row per rule."""
    where = f"partial_credit_rules.{key}"
    ordered = sorted(((k, r) for k, r in rules.items() if isinstance(r, dict)),
                     key=lambda kr: (not isinstance(kr[1].get("priority"), int | float),
                                     kr[1].get("priority", 0)))
    levels: list[dict[str, Any]] = []
    rows: list[ImportRow] = []
    for rkey, rule in ordered:
        raw = rule.get("multiplier", 1)
        credit = float(raw) if isinstance(raw, int | float) and not isinstance(raw, bool) \
            else 1.0
        says = str(rule.get("explanation") or words(rkey))
        item = f"partial credit {words(rkey)} ({credit:.0%}): {says}"
        when, why = _when(rule)
        if cid is None or not when:
            why = why or "no criterion of the imported rubric is this section"
            rows.append(ImportRow(item, f"{where}.{rkey}", False, "", (
                f"Not carried: {why}. Add the level by hand {RUBRICS_PAGE} if it counts; "
                f"{OVERRIDE}.")))
            continue
        todo = ""
        if not 0 <= credit <= 1:
            todo = (f"The old multiplier {credit:g} is outside 0..1: the level gives "
                    f"{min(max(credit, 0.0), 1.0):.0%}; change it {RUBRICS_PAGE} if needed.")
            credit = min(max(credit, 0.0), 1.0)
        max_count = rule.get("max_count")
        above = [lv for lv in levels if lv["when"][0].get("min_count", 0)
                 > (max_count if isinstance(max_count, int) else 10 ** 9)]
        if rule.get("condition_type") == "count_formats" and isinstance(max_count, int) \
                and max_count < len(rule.get("formats", [])) and not above:
            todo = (f"Its max_count {max_count} is not enforced: no level above it asks "
                    f"for more; add one {RUBRICS_PAGE} if it matters.")
        levels.append({"credit": credit, "when": when, "says": says})
        rows.append(ImportRow(item, f"{where}.{rkey}", True,
                              f"level {len(levels)} of {cid}: {credit:.0%} when {_said(when)}",
                              todo))
    return levels, rows


def apply_credit(data: dict[str, Any], crits: list[dict[str, Any]],
                 by_key: dict[str, str]) -> list[ImportRow]:
    """Give the criteria (dicts, changed in place) the levels of the file's
    ``partial_credit_rules``; ``by_key``: section key -> criterion id."""
    rules = data.get("partial_credit_rules")
    if not isinstance(rules, dict):
        return []
    by_id = {c["id"]: c for c in crits}
    by_part = {_part(k): cid for k, cid in by_key.items() if _part(k)}
    rows = []
    for key, rule_set in rules.items():
        if not isinstance(rule_set, dict):
            continue
        cid = by_key.get(key) or by_part.get(_part(key))
        levels, rule_rows = rule_levels(key, rule_set, cid)
        if cid is not None and levels:
            crit = by_id[cid]
            crit["levels"] = [*crit.get("levels", []), *levels]
            shown = ", ".join(f"{lv['credit']:.0%}" for lv in levels)
            rows.append(ImportRow(
                f"partial credit rules for {crit['title']} ({len(rule_set)} rules)",
                f"partial_credit_rules.{key}", True,
                f"{len(levels)} levels of {cid} ({shown}), first that holds wins; when none "
                "holds, its checks score it",
                f"Where a student's approach deserves other credit, override {cid} in Review."))
        else:
            rows.append(ImportRow(
                f"partial credit rules for {words(key)}", f"partial_credit_rules.{key}", False,
                "", f"Not carried: no criterion is this section. {OVERRIDE[0].upper()}"
                f"{OVERRIDE[1:]}."))
        rows += rule_rows
    return rows


def _part(key: str) -> str:
    m = re.match(r"part_?(\d+)", key)
    return m.group(1) if m else ""


def _percent(text: str) -> float | None:
    m = re.search(r"(\d+(?:\.\d+)?)\s*%", text)
    return float(m.group(1)) / 100 if m else None


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2 and w not in _STOP}


def _overlap(a: str, b: str) -> int:
    return len(_words(a) & _words(b))


def _related(text: str, crits: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The criterion whose title shares the most words with ``text`` (two at least)."""
    said = _words(text)
    best, most = None, 1
    for c in crits:
        title = {w for w in re.findall(r"[a-z]+", c["title"].lower()) if w not in _STOP}
        stems = sum(1 for w in said if any(t[:5] == w[:5] for t in title))
        if stems > most:
            best, most = c, stems
    return best


def _scenario(where: str, key: str, text: str, crits: list[dict[str, Any]]) -> ImportRow:
    item = f"{words(key)}: {text}"
    share = _percent(text)
    low = text.lower()
    if "brief" in low and share is not None and abs(share - 0.8) < 1e-9:
        return ImportRow(item, where, True, "the answer checks' default levels: a brief answer "
                         "(at least half the minimum words) earns 80%",
                         f"Nothing to do; to change it, give the answer check levels "
                         f"{RUBRICS_PAGE}.")
    if re.search(r"deduct|penalt|lose", low) and share is None:
        return ImportRow(item, where, False, "", "Not applied: a deduction in points is not "
                         f"part of scoring; {OVERRIDE}.")
    if share is not None:
        same = [(_overlap(text, lv["says"]), c, lv) for c in crits
                for lv in c.get("levels", []) if abs(lv["credit"] - share) < 1e-9]
        if same and (best := max(same, key=lambda s: s[0]))[0] >= 1:
            _, c, lv = best
            return ImportRow(item, where, True, f"the level of {c['id']} at {share:.0%}: "
                             f"{lv['says']}", "The condition after 'if' is for you to judge: "
                             f"where it does not hold, override {c['id']} in Review.")
    crit = _related(text, crits)
    if crit is not None and share is not None:
        have = ", ".join(f"{lv['credit']:.0%}" for lv in crit.get("levels", []))
        return ImportRow(item, where, False, "", (
            f"Not carried: its condition is for a person to read. {crit['id']} gives "
            + (f"{have} by its levels" if have else "credit by its checks")
            + f"; to give {share:.0%} here, add or change a level of {crit['id']} "
            f"{RUBRICS_PAGE}, or override it in Review."))
    return ImportRow(item, where, False, "", f"Not carried: for a person to judge; {OVERRIDE}.")


def guideline_rows(data: dict[str, Any], crits: list[dict[str, Any]]) -> list[ImportRow]:
    """One row per guideline of ``grading_guidelines``."""
    guide = data.get("grading_guidelines")
    if guide is None:
        return []
    if not isinstance(guide, dict):
        return [ImportRow("grading guidelines", "grading_guidelines", False, "",
                          f"Not carried: for a person to judge; {OVERRIDE}.")]
    rows = []
    for key, value in guide.items():
        where = f"grading_guidelines.{key}"
        name = key.lower()
        if isinstance(value, dict) and "partial" in name:
            rows += [_scenario(f"{where}.{k}", k, str(v), crits) for k, v in value.items()]
        elif "zero" in name:
            rows.append(ImportRow(f"zero credit when: {value_text(value)}", where, False, "", (
                "Already so in part: template-only work scores 0 (template code earns "
                "nothing) and code that fails loses its runs and output checks; for the "
                f"rest, {OVERRIDE}.")))
        elif "full" in name:
            rows.append(ImportRow(f"full credit when: {value_text(value)}", where, False, "", (
                "Nothing to do: full credit is every check passing (or a level at 100%).")))
        elif "grade" in name and ("range" in name or "scale" in name):
            rows.append(ImportRow(f"grade ranges: {value_text(value)}", where, False, "", (
                "Not imported: the grader gives points; map them to letter grades in your "
                "gradebook.")))
        elif "bonus" in name:
            rows.append(ImportRow(f"bonus points: {value_text(value)}", where, False, "", (
                f"Not imported: scores stop at the total; to reward extra work, {OVERRIDE}.")))
        elif isinstance(value, dict):
            rows += [_scenario(f"{where}.{k}", k, str(v), crits) for k, v in value.items()]
        else:
            rows.append(ImportRow(f"{words(key)}: {value_text(value)}", where, False, "",
                                  f"Not carried: for a person to judge; {OVERRIDE}."))
    return rows


