"""An imported rubric, fitted to the assignment's own solution and template.

An old rubric says what the old grader looked for, and some of it the instructor's own
solution does not do: a variable the template already assigns (the student only fills
in the ``mutate()`` below it), a function the solution does without (``mdy_hm()`` for
``mdy()``), a question worded otherwise in the notebook, an answer shorter than the old
minimum. Graded as imported, the key would lose points, and so would every student who
did the same. ``fit_import`` reads the solution with layer 1 (no run, no model) and:

- drops each ``assigns`` / ``calls`` entry, ``code`` check and ``ran`` / ``documented``
  check the solution does not pass (the criterion's other checks keep their shares);
  a criterion left with no check gets a ``runs`` check;
- drops each level the solution meets with less than full credit (the key would lose
  points by it);
- points an ``answer`` check whose question the notebook does not hold at the template's
  heading that best shares its words, and lowers a ``min_words`` the solution's own
  answer does not reach to that answer's length;

and says each change in a report row ("the solution does not pass this: dropped").
Checks that need a run (runs, output, value, test, printed, plot) are left to the
assignment's self-check.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import logging
import re
import tomllib
from pathlib import Path
from typing import Any

from ..analysis.answers import find_answer
from ..analysis.facts import analyse
from ..analysis.template import match_template
from ..assignment import Assignment
from ..layers.base import AssignmentContext, GradeOptions, SubmissionContext
from ..layers.structure import StructureLayer
from ..notebooks.load import load_notebook
from ..rubrics.import_items import RUBRICS_PAGE, ImportReport, ImportRow
from ..rubrics.schema import rubric_from_dict, rubric_to_dict
from ..types import Notebook

log = logging.getLogger(__name__)

__all__ = ["fit_import", "fit_to_folder"]

STATIC = ("assigns", "calls", "code", "ran", "documented")
_STOP = {"the", "and", "of", "a", "an", "in", "on", "for", "to", "from", "with", "your",
         "based", "what", "how", "why", "question", "analysis"}


def _words(text: str) -> set[str]:
    return {w[:6] for w in re.findall(r"[a-z]+", text.lower()) if w not in _STOP and len(w) > 2}


class _Probe:
    """Each static check of a rubric (each entry of an assigns/calls check apart) as a
    criterion of its own, graded once on the solution."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.criteria: list[dict[str, Any]] = []
        self.passed: dict[str, bool] = {}

    def add(self, check: dict[str, Any], kind: str = "code") -> str:
        pid = f"p{len(self.criteria)}"
        probe = {k: v for k, v in check.items() if k != "weight"}
        self.criteria.append({"id": pid, "title": pid, "kind": kind, "points": 1.0,
                              "checks": [{**probe, "weight": 1.0}]})
        return pid

    def run(self, template: Notebook, solution: Notebook) -> None:
        if not self.criteria:
            return
        rubric = rubric_from_dict({"schema_version": 2, "title": "probe", "language":
                                   self.language, "total_points": float(len(self.criteria)),
                                   "criteria": self.criteria}, "<probe>")
        a = Assignment("import", Path("."), rubric, Path("rubric.json"),
                       Path("template.ipynb"), Path("solution.ipynb"))
        actx = AssignmentContext(a, template, solution, None)
        match = match_template(template, solution, rubric.all_placeholders, solution)
        ctx = SubmissionContext(actx, solution, None, match,
                                GradeOptions(execute=False, use_llm=False))
        result = StructureLayer().run(ctx)
        for r in result.checks:
            self.passed[r.criterion_id] = r.status == "ok" and r.score >= 1 - 1e-9


def _origin(rows: list[ImportRow], cid: str) -> str:
    return next((r.source for r in rows if r.imported_as.startswith(f"criterion {cid} ")),
                "the solution")


def _headings(template: Notebook) -> list[str]:
    out = []
    for cell in template.cells:
        if cell.kind != "markdown":
            continue
        for line in cell.source.splitlines():
            m = re.match(r"\s*(?:#{1,6}\s*|\*\*|__)(.+?)(?:\*\*|__)?\s*:?\s*$", line)
            text = (m.group(1) if m else "").strip(" *_:#")
            if text and len(text.split()) <= 12 and re.search(r"[A-Za-z]", text):
                out.append(text)
    return list(dict.fromkeys(out))


def _best_heading(question: str, description: str, template: Notebook,
                  taken: set[str]) -> str:
    mine, said = _words(question), _words(description)
    best, score = "", 0
    for h in _headings(template):
        if h in taken:
            continue
        hw = _words(h)
        s = 2 * len(hw & mine) + len(hw & said)
        if s > score or (s == score and s and len(h) < len(best)):
            best, score = h, s
    return best


def fit_to_folder(report: ImportReport, folder: Path) -> ImportReport:
    """``fit_import`` to the template and solution of an assignment folder (named by its
    assignment.toml, else template.ipynb and solution.ipynb); NotebookError when one
    cannot be read."""
    names = {"template": "template.ipynb", "solution": "solution.ipynb"}
    with contextlib.suppress(OSError, tomllib.TOMLDecodeError):
        names.update({k: v for k, v in tomllib.loads(
            (folder / "assignment.toml").read_text(encoding="utf-8")).items()
            if k in names and isinstance(v, str)})
    return fit_import(report, load_notebook(folder / names["template"]),
                      load_notebook(folder / names["solution"]))


def fit_import(report: ImportReport, template: Notebook, solution: Notebook) -> ImportReport:
    """``report`` with its rubric fitted to the solution (see the module doc); the
    report unchanged when the solution cannot be read."""
    try:
        return _fit(report, template, solution)
    except Exception:  # the import stands as it is; the self-check says the rest
        log.exception("could not fit the imported rubric to the solution")
        return report


def _fit(report: ImportReport, template: Notebook, solution: Notebook) -> ImportReport:
    data = rubric_to_dict(report.rubric)
    rows = list(report.rows)
    lang = report.rubric.language
    probe = _Probe(lang)
    # 1. every static check, entry by entry
    plan: list[tuple[dict[str, Any], dict[str, Any], list[tuple[str, str]]]] = []
    for crit in data["criteria"]:
        for ch in crit.get("checks", []):
            if ch["type"] in ("assigns", "calls"):
                field = "names" if ch["type"] == "assigns" else "functions"
                plan.append((crit, ch, [(e, probe.add({"type": ch["type"], field: [e]}))
                                        for e in ch[field]]))
            elif ch["type"] in STATIC:
                plan.append((crit, ch, [("", probe.add(ch))]))
        for lv in crit.get("levels", []):
            lv["_probes"] = [probe.add(w, crit["kind"]) for w in lv.get("when", [])
                             if w["type"] in STATIC]
            lv["_static"] = len(lv["_probes"]) == len(lv.get("when", []))
    probe.run(template, solution)
    dropped: dict[str, list[str]] = {}
    dropped_names: dict[str, list[str]] = {}
    template_names = {sym.name for cell in template.code_cells
                      for sym in analyse(cell.source, lang).assigned}
    for crit, ch, entries in plan:
        failed = [e for e, pid in entries if not probe.passed.get(pid, True)]
        if not failed:
            continue
        if ch["type"] in ("assigns", "calls"):
            field = "names" if ch["type"] == "assigns" else "functions"
            kept = [e for e in ch[field] if e not in failed]
            ch["weight"] *= len(kept) / len(ch[field])
            ch[field] = kept
            dropped.setdefault(crit["id"], []).append(
                f"{ch['type']} {', '.join(failed)}")
            if ch["type"] == "assigns":
                dropped_names.setdefault(crit["id"], []).extend(failed)
        else:
            ch["_dropped"] = True
            dropped.setdefault(crit["id"], []).append(f"{ch['type']} {_shown(ch)}")
    # 2. the levels the key meets with less than full credit
    level_rows: list[ImportRow] = []
    for crit in data["criteria"]:
        levels = crit.get("levels", [])
        while levels:
            first = _first_held(levels, probe.passed)
            if first is None or first["credit"] >= 1 - 1e-9:
                break
            levels.remove(first)
            level_rows.append(ImportRow(
                f"the level {first['says']!r} ({first['credit']:.0%}) of {crit['id']}",
                _origin(rows, crit["id"]), False, "",
                "The solution meets this level and would lose points by it: dropped. Add it "
                f"back {RUBRICS_PAGE} with a condition the solution does not meet."))
        for lv in levels:
            lv.pop("_probes", None)
            lv.pop("_static", None)
        if not levels:
            crit.pop("levels", None)
    # 3. the checks left, their shares renormalised
    for crit in data["criteria"]:
        checks = [ch for ch in crit.get("checks", []) if not ch.get("_dropped")
                  and not (ch["type"] in ("assigns", "calls")
                           and not ch["names" if ch["type"] == "assigns" else "functions"])]
        if crit["id"] in dropped:
            gone = "; ".join(dropped[crit["id"]])
            total = sum(ch["weight"] for ch in checks)
            if not checks:
                checks = [{"type": "runs", "weight": 1.0}]
                todo = ("None of its checks holds on the solution, so it became a runs check: "
                        f"add checks the solution passes {RUBRICS_PAGE}.")
            else:
                for ch in checks:
                    ch["weight"] = ch["weight"] / total if total else 1.0 / len(checks)
                todo = (f"Its other checks keep their shares. If the students must do it "
                        f"anyway, add it back {RUBRICS_PAGE} in a form the solution passes.")
            given = [n for n in dropped_names.get(crit["id"], []) if n in template_names]
            why = (f" The template already assigns {', '.join(given)}: students complete its "
                   "statement, so no assignment of theirs is there to find." if given else "")
            rows.append(ImportRow(f"{crit['id']}: {gone}", _origin(rows, crit["id"]), False, "",
                                  f"The solution does not pass this: dropped.{why} {todo}"))
        if checks:
            checks[-1]["weight"] = 1.0 - sum(ch["weight"] for ch in checks[:-1])
        crit["checks"] = checks
    rows += level_rows
    rows += _answers(data, rows, template, solution)
    rubric = rubric_from_dict(data, report.rubric.title)
    return dataclasses.replace(report, rubric=rubric, rows=tuple(rows))


def _first_held(levels: list[dict[str, Any]], passed: dict[str, bool]
                ) -> dict[str, Any] | None:
    """The level that scores the solution; None when none holds or when a level before
    it has a check that needs a run (what it gives cannot be known here)."""
    for lv in levels:
        if not lv["_static"]:
            return None
        if all(passed.get(p, False) for p in lv["_probes"]):
            return lv
    return None


def _shown(ch: dict[str, Any]) -> str:
    return ch.get("pattern") or ch["type"]


def _answers(data: dict[str, Any], rows: list[ImportRow], template: Notebook,
             solution: Notebook) -> list[ImportRow]:
    """Questions the notebook words otherwise, and minimums the key's answers miss."""
    out: list[ImportRow] = []
    answers = [(c, ch) for c in data["criteria"] for ch in c["checks"] if ch["type"] == "answer"]
    placeholders = tuple(data.get("placeholders", ()))
    rubric = rubric_from_dict(copy.deepcopy(data), "<fit>")
    match = match_template(template, solution, rubric.all_placeholders + placeholders,
                           solution)

    def answer(question: str, others: list[str]) -> Any:
        return find_answer(match, question, rubric.all_placeholders, others, template=template)

    questions = [ch["question"] for _, ch in answers]
    taken = set(questions)
    for crit, ch in answers:
        others = [q for q in questions if q != ch["question"]]
        found = answer(ch["question"], others)
        if not found.located:
            heading = _best_heading(ch["question"], crit.get("description", "") or
                                    crit["title"], template, taken)
            moved = answer(heading, others) if heading else None
            if moved is not None and moved.located:
                out.append(ImportRow(
                    f"question {ch['question']!r} of {crit['id']}", _origin(rows, crit["id"]),
                    True, f"answer check of the notebook's heading {heading!r}",
                    f"The notebook has no {ch['question']!r}; its heading {heading!r} shares "
                    f"the most words with the old question: change it {RUBRICS_PAGE} if "
                    "another heading is meant."))
                taken.add(heading)
                questions[questions.index(ch["question"])] = heading
                ch["question"], found = heading, moved
            else:
                out.append(ImportRow(
                    f"question {ch['question']!r} of {crit['id']}", _origin(rows, crit["id"]),
                    False, "", "The solution does not pass this: the notebook holds no such "
                    f"question. Give the answer check the notebook's heading {RUBRICS_PAGE}."))
                continue
        if found.answered and found.word_count < ch.get("min_words", 1):
            out.append(ImportRow(
                f"at least {ch['min_words']} words for {ch['question']!r} ({crit['id']})",
                _origin(rows, crit["id"]), True, f"at least {found.word_count} words",
                f"The solution's own answer has {found.word_count} words, under the old "
                f"minimum of {ch['min_words']}: the minimum became {found.word_count} so that "
                f"the key earns full marks. Raise it {RUBRICS_PAGE} if students must write "
                "more than the key."))
            ch["min_words"] = found.word_count
    return out
