"""Layer 1: structure and completeness, from the notebook's text alone.

Scores the rubric's ``assigns``, ``calls`` and ``answer`` checks on what the
student wrote (see ``grader.analysis.template``): names and calls come from the syntax
tree of the student's own lines, answers from the text under each question, wherever
the template asked it (``grader.analysis.answers``; the blocks of text aimed at the
grader, ``SubmissionContext.flagged``, never count). A code cell that holds only prose
is the student's text, not code: it is neither read for names nor flagged as code that
does not parse.
Also flags a notebook with no work of the student's, edited test or template
cells, and variables of output checks that are assigned literal values only
(hard-coded results instead of computation).
"""

from __future__ import annotations

import dataclasses
import re

from .. import check_types
from ..analysis.answers import find_answer
from ..analysis.facts import CodeFacts, Symbol, analyse, assigned, called, strip_comments
from ..analysis.template import CellOrigin
from ..check_types import L1Scene
from ..rubrics.check_fields import Check, alternatives
from ..rubrics.schema import Criterion
from ..types import CheckResult, Evidence, Facts, Flag, LayerResult
from .answer_levels import answer_level, printed_numbers
from .base import Layer, SubmissionContext
from .revealed import revealed_flag

# A line that leaves its statement open: `feedback <-`, `mutate(`, `df %>%`, ...
_OPEN_END = re.compile(r"(<<-|<-|=|\(|\[|\{|,|%[^%\s]*%|\|>|\+|-|\*|/|\\)\s*$")
# A Python function header the template gives (``def f(x):``) with the body left to the
# student: the function is the student's once the body is.
_DEF_HEADER = re.compile(r"^\s*(?:async\s+)?def\s+\w+\s*\(.*:\s*$")


def _evidence(sym: Symbol, cell_id: str) -> Evidence:
    return Evidence(cell_id, sym.line, sym.text)


def student_facts(origin: CellOrigin, language: str) -> CodeFacts:
    """Facts of the whole cell, keeping only symbols the student wrote.

    The cell is analysed whole (statements span lines); a symbol counts when
    its line is the student's, or when the template began the statement on
    that line and left it open (``feedback <-``, ``mutate(``, a function's
    ``def f(x):``) and the student completed it on the lines below.
    """
    facts = analyse(origin.cell.source, language)
    lines = strip_comments(origin.cell.source, language).splitlines()
    own = origin.student_lines

    def credited(sym: Symbol) -> bool:
        if sym.line in own:
            return True
        if sym.line > len(lines) or not (_OPEN_END.search(lines[sym.line - 1])
                                         or _DEF_HEADER.match(lines[sym.line - 1])):
            return False
        nxt = next((i for i in range(sym.line + 1, len(lines) + 1) if lines[i - 1].strip()),
                   None)
        return nxt is not None and nxt in own

    assigned_ = tuple(s for s in facts.assigned if credited(s))
    names = {s.name for s in assigned_}
    return dataclasses.replace(
        facts, assigned=assigned_, calls=tuple(s for s in facts.calls if credited(s)),
        literal_assigned=frozenset(n for n in facts.literal_assigned if n in names))


class StructureLayer(Layer):
    name = "L1"

    def run(self, ctx: SubmissionContext) -> LayerResult:
        rubric = ctx.assignment.rubric
        lang = ctx.submission.language
        facts: list[tuple[str, CodeFacts]] = []
        for origin in ctx.match.student_code_cells:
            facts.append((origin.cell.id, student_facts(origin, lang)))
        result = LayerResult(self.name)
        scene = L1Scene(ctx, facts, result.details)
        for crit in rubric.criteria:
            for check in crit.evaluated:
                kind = check_types.of(check.type)
                if kind.layer == self.name:
                    result.checks.append(kind.evaluate(crit, check, scene))
        result.flags.extend(ctx.match.flags)
        actx = ctx.assignment
        if (shown := revealed_flag(ctx.match, actx.solution, actx.template)) is not None:
            result.flags.append(shown)
        hardcoded = self._hardcoded(ctx, facts)
        result.flags.extend(hardcoded.values())
        result.details["hardcoded"] = sorted(hardcoded)  # scoring zeroes their output checks
        # A name and a date filled in at the top is not work: no code of the
        # student's own and no question answered is the template handed back.
        answered = any(c.check == "answer" and c.score > 0 for c in result.checks)
        if not ctx.match.student_code_lines and not answered:
            result.flags.append(
                Flag(
                    "template_only",
                    "no code or text of the student's own: the notebook is the template",
                )
            )
        syntax = [(cid, f.syntax_error) for cid, f in facts if f.syntax_error]
        if syntax:  # one flag, with the count (a notebook of another language: every cell)
            cid, err = syntax[0]
            many = f" in {len(syntax)} cells (first, cell {cid}: {err})" if len(syntax) > 1 \
                else f": {err}"
            result.flags.append(Flag("syntax_error", f"code does not parse{many}", tuple(
                Evidence(c, None, e or "") for c, e in syntax)))
        result.details["student_code_lines"] = ctx.match.student_code_lines
        result.details["student_cells"] = [o.cell.id for o in ctx.match.origins if o.is_students]
        return result

    @staticmethod
    def names(crit: Criterion, check: Check, facts: list[tuple[str, CodeFacts]]) -> CheckResult:
        wanted = check.names if check.type == "assigns" else check.functions
        find = assigned if check.type == "assigns" else called
        order = {cid: i for i, (cid, _) in enumerate(facts)}
        found, missing, evidence = [], [], []
        for entry in wanted:  # an entry is a name or an any-of group ("read_csv | read.csv")
            hits = [(cid, s) for name in alternatives(entry) for cid, f in facts
                    for s in find(f, name)]
            if hits:
                found.append(entry)
                cid, sym = min(hits, key=lambda hit: order[hit[0]])
                evidence.append(_evidence(sym, cid))
            else:
                missing.append(entry)
        verb = "assigned" if check.type == "assigns" else "called"
        msg = f"{len(found)} of {len(wanted)} {verb}"
        if missing:
            msg += f"; not {verb} in the student's code: {', '.join(missing)}"
        facts = Facts("missing" if missing else "found", expected=tuple(wanted),
                      found=tuple(found), missing=tuple(missing))
        return CheckResult(crit.id, check.type, check.target, len(found) / len(wanted),
                           check.weight, "L1", msg, tuple(evidence), facts=facts)

    @staticmethod
    def answer(ctx: SubmissionContext, crit: Criterion, check: Check,
                details: dict) -> CheckResult:
        placeholders = ctx.assignment.rubric.all_placeholders + check.placeholders
        ans = find_answer(ctx.match, check.question, placeholders,
                          ctx.assignment.rubric.questions, template=ctx.assignment.template,
                          excluded=ctx.flagged)
        if not ans.located:
            score, msg = 0.0, f"question {check.question!r} not found in the notebook"
            facts = Facts("not_found", expected=(check.question,))
        elif not ans.answered:
            score, msg = 0.0, "unanswered (only template or placeholder text)"
            facts = Facts("unanswered", expected=(check.question,))
        else:
            score, msg, found, facts = answer_level(check, ans.text, ans.word_count,
                                                    printed_numbers(ctx.match))
            if check.key_points:  # what a judging model's key points are checked against
                details.setdefault("key_points", {})[f"{crit.id}:{check.question}"] = {
                    "found": found, "words": ans.word_count}
        if ans.set_aside:
            msg += (f"; {ans.set_aside} line{'s' if ans.set_aside > 1 else ''} of text aimed "
                    "at the grader not counted")
            facts = dataclasses.replace(facts, counts=(*facts.counts,
                                                       ("set_aside", ans.set_aside)))
        return CheckResult(crit.id, "answer", check.question, score, check.weight, "L1", msg,
                           ans.evidence, facts=facts)

    @staticmethod
    def _hardcoded(ctx: SubmissionContext, facts: list[tuple[str, CodeFacts]]) -> dict[str, Flag]:
        flags: dict[str, Flag] = {}
        given = _solution_literals(ctx)
        for var in ctx.assignment.rubric.output_variables():
            if var in given:  # the key writes it as a literal too: a value to type, not compute
                continue
            assigns = [(cid, s, f) for cid, f in facts for s in assigned(f, var)]
            if assigns and all(var in f.literal_assigned for _, _, f in assigns):
                cid, sym, _ = assigns[-1]
                flags[var] = Flag(
                    "hardcoded_output",
                    f"{var} is assigned literal values instead of being computed",
                    (Evidence(cid, sym.line, sym.text),),
                )
        return flags


def _solution_literals(ctx: SubmissionContext) -> frozenset[str]:
    """Variables whose last assignment in the instructor's solution is a literal
    (``threshold = 0.05``, ``regions <- c("North", "South")``): typing them in is the
    task, not hard-coding a result. Read once per assignment."""
    actx = ctx.assignment
    with actx.lock:
        found = actx.cache.get("solution_literals")
        if found is None:
            lang = actx.solution.language
            literal: dict[str, bool] = {}
            for cell in actx.solution.code_cells:
                facts = analyse(cell.source, lang)
                for name in {s.name for s in facts.assigned}:
                    literal[name] = name in facts.literal_assigned
            found = actx.cache["solution_literals"] = frozenset(
                n for n, is_literal in literal.items() if is_literal)
        return found
