"""Whether a model's note on a criterion is worth reading: well-formed, and in agreement
with the criterion's checks.

A small model asked for JSON fills every field, and what it puts there is often not a
sentence ("); ", "1.0", "met") or says the opposite of the evidence ("not met" on a
criterion the checks gave full marks). The deterministic checks are the authority; a
model's note is shown only where it is made of sentences and its judgement agrees with
them. One rule for every reader: the pages (``grader.views.advisory``) and the student's
letter (``grader.letters``) both ask here. (It lives with the rubric language because the
verdicts are the rubric's: a criterion met, partly met, not met; and it is the lowest
room both of them may import.)

The rules:

- The checks' verdict on a criterion is "met" from ``MET`` of its points up, "not met" at
  ``NOT_MET`` or below, "partial" between.
- A code note (L3) agrees when the model's verdict is the checks' verdict. A written
  note (L4) agrees when the model's score (0..1) is within ``SCORE_BAND`` of the share
  of the points the checks gave. A note without a verdict, or with a verdict or score
  that is not one, is not a judgement: it neither agrees nor disagrees (``None``).
- A text field is well-formed when it reads as a sentence: not a label, number or JSON,
  at least three words of letters, mostly letters, not one word repeated.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from ..safe_text import scrub
from ..types import CriterionResult

__all__ = ["MET", "NOT_MET", "SCORE_BAND", "TEXT_FIELDS", "VERDICTS", "NoteCheck",
           "check_note", "checks_share", "checks_verdict", "sentence"]

VERDICTS = ("met", "partial", "not met")
MET, NOT_MET = 0.75, 0.25  # the checks' share from which a criterion is met / at most not met
SCORE_BAND = 0.25  # how far a written judgement may sit from the checks' share and agree
SENTENCE_LIMIT = 300  # characters of a note kept
# The fields of a note that are prose, per kind of criterion (the layer that wrote it).
TEXT_FIELDS = {"code": ("issue", "suggestion"), "written": ("strength", "improve", "next_step")}

_JUNK = {"none", "n/a", "na", "null", "true", "false", "positive", "negative", "neutral",
         "met", "not met", "partial", "good", "ok", "yes", "no", "nothing", "unknown"}
_WORD = re.compile(r"[^\W\d_]{2,}")


def sentence(text: str, limit: int = SENTENCE_LIMIT) -> str:
    """``text`` on one line when it reads as a sentence, else "" (labels, numbers, JSON,
    punctuation, a word repeated). Longer than ``limit`` characters: cut at a word."""
    flat = " ".join(scrub(str(text)).split())
    if flat.lower().strip(" .!") in _JUNK or flat[:1] in "{[\"')]}" or '":' in flat:
        return ""
    words = _WORD.findall(flat)
    if len(words) < 3 or len(flat) < 15 or len({w.lower() for w in words}) < 3:
        return ""
    visible = [c for c in flat if not c.isspace()]
    if sum(c.isalpha() for c in visible) < 0.6 * len(visible):
        return ""  # mostly digits and punctuation: "0.5, 0.5; 1.0 / ok ok"
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space >= limit * 2 // 3 else head).rstrip(" ,;:") + "…"


def checks_share(crit: CriterionResult) -> float:
    """The share of the criterion's points the checks gave (0 when it has no points)."""
    return crit.points / crit.max_points if crit.max_points else 0.0


def checks_verdict(share: float) -> str:
    """The checks' verdict for a share of the points: met, partial or not met."""
    return "met" if share >= MET else "not met" if share <= NOT_MET else "partial"


def _score(text: str) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) and 0.0 <= value <= 1.0 else None


@dataclass(frozen=True, slots=True)
class NoteCheck:
    """One criterion's model note, judged. ``agrees``: None when the note holds no
    judgement to compare; ``sentences``: its text fields that are well-formed."""

    criterion: str
    kind: str
    judgement: str  # the model's verdict, or its score as written; "" when none
    expected: str  # what the checks say, in the same terms
    agrees: bool | None
    sentences: dict[str, str] = field(default_factory=dict)

    @property
    def judged(self) -> bool:
        return self.agrees is not None

    @property
    def shown(self) -> bool:
        """Whether the note may be shown: it agrees with the checks and says something."""
        return bool(self.agrees) and bool(self.sentences)


def check_note(crit: CriterionResult) -> NoteCheck | None:
    """The criterion's model note judged against its checks; None when it has none."""
    notes = crit.model_notes
    if not notes:
        return None
    share = checks_share(crit)
    kind = "code" if crit.kind == "code" else "written"
    sentences = {k: s for k in TEXT_FIELDS[kind] if (s := sentence(notes.get(k, "")))}
    if kind == "code":
        verdict = str(notes.get("verdict", "")).strip().lower()
        expected = checks_verdict(share)
        agrees = (verdict == expected) if verdict in VERDICTS else None
        return NoteCheck(crit.id, kind, verdict, expected, agrees, sentences)
    score = _score(notes.get("score", ""))
    agrees = None if score is None else abs(score - share) <= SCORE_BAND + 1e-9
    return NoteCheck(crit.id, kind, "" if score is None else f"{score:.2f}", f"{share:.2f}",
                     agrees, sentences)
