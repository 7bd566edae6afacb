"""``plot_labels``: the student's plot says what it shows: x and y axis labels and a title.

Read from the student's own code under the check's ``question`` (every cell when none
is given), comments aside: matplotlib (``plt.xlabel``, ``ax.set_xlabel``,
``ax.set(xlabel=...)``, ``plt.title``, ``ax.set_title``, ``fig.suptitle``), pandas and
seaborn (``df.plot(..., xlabel=..., title=...)``, ``g.set_axis_labels(x, y)``), plotly
(``labels=``/``title=``, ``xaxis_title=``), R's ggplot2 (``labs(x=, y=, title=)``,
``xlab()``, ``ylab()``, ``ggtitle()``) and base graphics (``plot(..., xlab=, ylab=,
main=)``, ``title(main=...)``). A label given as an empty text does not count.

Scores 1 with both axis labels and a title, 0.5 with both axis labels and no title,
0 otherwise. Facts: state ``labelled``, ``untitled``, ``unlabelled`` or ``no_plot_code``
(no plotting call in the student's own code there); ``found``/``missing``: of ``x label``,
``y label``, ``title``; ``expected``: for each missing part, the call that adds it in the
notebook's language.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..check_types import CheckType, Field

if TYPE_CHECKING:
    from ..letters.reading import Context, Reading
    from ..rubrics.check_fields import Check
    from ..rubrics.schema import Criterion
    from ..types import CheckResult

PARTS = ("x label", "y label", "title")
_TEXT = r"""(?!\s*(?:""|''|NULL\b|None\b))"""  # an argument that is not an empty text
_KW = r"\s*=" + _TEXT
SAYS = {  # part -> how the code says it (Python, R)
    "x label": (rf"\b(?:xlabel|set_xlabel)\s*\({_TEXT}|\bxlabel{_KW}|\bxaxis_title{_KW}"
                rf"|\bset_axis_labels\s*\({_TEXT}|\blabels{_KW}\s*\{{[^}}]*['\"]x['\"]",
                rf"\bxlab\s*\({_TEXT}|\blabs\s*\([^)]*\bx{_KW}|\bxlab{_KW}"),
    "y label": (rf"\b(?:ylabel|set_ylabel)\s*\({_TEXT}|\bylabel{_KW}|\byaxis_title{_KW}"
                rf"|\bset_axis_labels\s*\([^,)]+,{_TEXT}|\blabels{_KW}\s*\{{[^}}]*['\"]y['\"]",
                rf"\bylab\s*\({_TEXT}|\blabs\s*\([^)]*\by{_KW}|\bylab{_KW}"),
    "title": (rf"\b(?:title|set_title|suptitle)\s*\({_TEXT}|\btitle{_KW}",
              rf"\bggtitle\s*\({_TEXT}|\blabs\s*\([^)]*\btitle{_KW}|\bmain{_KW}"
              rf"|\btitle\s*\({_TEXT}"),
}
PLOTTING = (r"\b(?:plt|ax|axes|fig|sns|px|go)\.\w+\s*\(|\.plot\s*\(|\.plot\.\w+\s*\("
            r"|\b(?:plot|scatter|hist|bar|barh|boxplot|lineplot|scatterplot|histplot)\s*\(",
            r"\bggplot\s*\(|\b(?:plot|hist|barplot|boxplot|lines|points|title)\s*\(")
ADD = {"python": {"x label": "plt.xlabel(...)", "y label": "plt.ylabel(...)",
                  "title": "plt.title(...)"},
       "r": {"x label": "labs(x = ...)", "y label": "labs(y = ...)",
             "title": "labs(title = ...)"}}


def _evaluate(crit: Criterion, check: Check, scene: Any) -> CheckResult:
    from ..analysis.facts import live_code, strip_comments
    from ..layers.outputs_read import questions, scope
    from ..types import CheckResult, Evidence, Facts

    ctx = scene.ctx
    lang = "r" if ctx.submission.language == "r" else "python"
    where = f" under {check.question!r}" if check.question else ""

    def result(score: float, message: str, facts: Facts,
               evidence: tuple[Evidence, ...] = ()) -> CheckResult:
        return CheckResult(crit.id, check.type, check.target, score, check.weight, "L1",
                           message, evidence, "ok", check.hidden, facts=facts)

    cells = scope(ctx.match, check.question, questions(ctx.assignment.rubric))
    if cells is None:
        return result(0.0, f"the notebook does not ask {check.question!r}: nothing to read",
                      Facts("no_plot_code"))
    lines = []  # (cell id, 1-based line, text) of the student's own lines, comments removed
    for o in cells:
        code = strip_comments(live_code(o.cell.source, lang), lang).splitlines()
        lines += [(o.cell.id, n, code[n - 1]) for n in sorted(o.student_lines) if n <= len(code)]
    side = 1 if lang == "r" else 0
    drawing = [(cid, n, t) for cid, n, t in lines if re.search(PLOTTING[side], t)]
    if not drawing:
        return result(0.0, f"no plotting call in the student's own code{where}",
                      Facts("no_plot_code", expected=tuple(ADD[lang].values())))
    found: dict[str, tuple[str, int, str]] = {}
    for part in PARTS:
        hit = next(((cid, n, t) for cid, n, t in lines if re.search(SAYS[part][side], t)),
                   None)
        if hit is not None:
            found[part] = hit
    missing = tuple(p for p in PARTS if p not in found)
    axes = "x label" in found and "y label" in found
    score = 1.0 if axes and "title" in found else 0.5 if axes else 0.0
    state = "labelled" if score == 1 else "untitled" if axes else "unlabelled"
    message = (f"the plot{where} has {', '.join(found) or 'no label'}"
               + (f"; missing: {', '.join(missing)}" if missing else ""))
    evidence = tuple(Evidence(cid, n, t.strip()) for cid, n, t in
                     dict.fromkeys(found.values())) or (Evidence(*drawing[0][:2],
                                                                  drawing[0][2].strip()),)
    return result(score, message, Facts(state, found=tuple(found), missing=missing,
                                        expected=tuple(ADD[lang][p] for p in missing)),
                  evidence[:3])


def _letter(ch: CheckResult, ctx: Context) -> Reading:
    from ..letters.reading import Reading
    from ..letters.text import Code, phrase

    facts = ch.facts
    if ch.score >= 1:
        return Reading(done=[phrase("Your plot has axis labels and a title.")])
    if facts.state == "no_plot_code":
        return Reading(missing=[phrase("No plot of your own was found here yet.")],
                       steps=[phrase("Draw the plot this part asks for, with a label on each "
                                     "axis and a title.")])
    out = Reading()
    if facts.found:
        out.done.append(phrase(f"Your plot has {_and(facts.found)}."))
    out.missing.append(phrase(f"Your plot has no {_and(facts.missing)}: a reader cannot tell "
                              "what it shows."))
    for call in facts.expected:
        out.steps.append(phrase("Add it with ", Code(call), "."))
    return out


def _and(items: tuple[str, ...]) -> str:
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else items[0]


TYPE = CheckType(
    name="plot_labels", kind="code", layer="L1", rank=85,
    summary="The student's plot has x and y axis labels and a title (read from their code).",
    scores="1 with both axis labels and a title, 0.5 with both axis labels and no title, "
    "else 0",
    reads=(Field("question", "only the cells under this question (default: every cell)"),
           Field("depends_on", "criteria whose values this one uses")),
    target_field="question", target=lambda ch: ch.question or "the plot's labels",
    evaluate=_evaluate, letter=_letter,
    example="question=Question 3",
)
