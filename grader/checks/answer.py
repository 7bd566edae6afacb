"""``answer``: the student's written answer to a question, by level.

Facts: state ``not_found`` (the question is not in the notebook), ``unanswered``,
``answered``, ``too_short`` or ``no_level``; counts ``words``, ``asked`` (``min_words``),
``key_points``, ``level`` (the credit in percent, when a level holds), ``floor`` (too
short: the words needed for credit), ``set_aside`` (lines aimed at the grader); ``found``
and ``missing``: the key points it makes and misses; ``quoted``: the level's sentence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..check_types import CheckType, Field

if TYPE_CHECKING:
    from ..letters.reading import Context, Reading
    from ..rubrics.check_fields import Check
    from ..rubrics.schema import Criterion
    from ..types import CheckResult


def _evaluate(crit: Criterion, check: Check, scene: Any) -> CheckResult:
    from ..layers.structure import StructureLayer

    return StructureLayer.answer(scene.ctx, crit, check, scene.details)


def _letter(ch: CheckResult, ctx: Context) -> Reading:
    from ..letters.check_reading import other_reading
    from ..letters.level_reading import answer_extras
    from ..letters.reading import Reading
    from ..letters.text import Quote, cut, phrase, plural

    facts = ch.facts
    question = f"“{cut(ch.target, 80)}”"
    least = ctx.spec.min_words if ctx.spec is not None and ctx.spec.min_words > 1 else 0
    length = f"at least {least} words" if least else "a few sentences"
    if facts.state == "not_found":
        return Reading(missing=[phrase(f"The question {question} was not found in your "
                                       "notebook: its heading may have been removed or "
                                       "changed.")],
                       steps=[phrase(f"Keep the template's heading for {question} and write "
                                     f"your answer below it ({length}).")])
    if facts.state == "unanswered":
        return Reading(missing=[phrase(f"You have not answered {question} yet.")],
                       steps=[phrase(f"Write your answer below the question: {length}, in your "
                                     "own words, with examples from your work.")])
    if not facts.has("words"):
        return other_reading(ch, ctx)
    n = int(facts.count("words"))
    out = Reading(done=[phrase(f"You answered the question ({plural(n, 'word')}).")])
    for ev in ch.evidence[:1]:
        out.quotes.append(Quote(ctx.places.cell(ev.cell_id), cut(ev.text, 100), "text"))
    want = int(facts.count("asked"))
    if n < want:
        out.missing.append(phrase(f"Your answer has {plural(n, 'word')}; the question asks for "
                                  f"at least {want}."))
        out.steps.append(phrase(f"Develop your answer to at least {want} words: explain your "
                                "reasoning and point to specific results of your work."))
    answer_extras(ch, out, ctx)
    return out


def _validate(ch: Check, where: str, problems: list[str]) -> None:
    if not ch.question.strip():
        problems.append(f"{where}: an answer check needs `question`")
    if ch.depends_on:
        problems.append(f"{where}.depends_on: an answer check uses no other criterion's "
                        "values")


TYPE = CheckType(
    name="answer", kind="written", layer="L1", version=1, rank=110,
    summary="The student's written answer below a question of the template.",
    scores="by level (below): with no key points, 1 at `min_words` words of the student's "
    "own, 0.8 at half of them (\"brief\"), 0.5 at a quarter (\"very brief\"); 0 below that "
    "or when unanswered. Never a share of the word count",
    reads=(Field("question", "the question's text, wherever the template puts it",
                 required=True),
           Field("min_words", "words of the student's own a full answer has (default 1)"),
           Field("placeholders", "extra texts that do not count"),
           Field("key_points", "version 2: what a complete answer mentions"),
           Field("levels", "version 2: credit by key points and words")),
    target_field="question", target=lambda ch: ch.question,
    evaluate=_evaluate, letter=_letter, validate=_validate,
    produced_by=("rubric file", "editor", "old-system rubric", "nbgrader", "otter"),
    example="question=Question 4; min_words=25",
)
