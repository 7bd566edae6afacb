"""What a notebook's refusal says: words an instructor can act on, then the technical detail.

``grader.notebooks.load`` refuses bad files with these. The words come first (what the
file is, what to do about it); the parser's own message follows in the fixed form
`` (detail: ...)``, which ``words_and_detail`` takes apart again, so that a page shows the
words and folds the detail away, and nothing of it is lost. "not JSON" stays in the words
for the student's letter, which says it in its own plain terms
(``grader.letters.build.plain_problem``).
"""

from __future__ import annotations

import json
import re

__all__ = ["CLEAR_OUTPUTS", "CLEAR_STEPS", "NOT_JSON_DAMAGED", "NOT_JSON_START", "not_json_words",
           "with_detail", "words_and_detail"]

CLEAR_STEPS = ("clear them (in Jupyter: Edit > Clear All Outputs, or Kernel > Restart & "
               "Clear Output), save, and upload it again")
CLEAR_OUTPUTS = f"a notebook this large is almost always its outputs (plots, printed tables): " \
    f"{CLEAR_STEPS}"
NOT_JSON_START = ("not a readable notebook (not JSON): the file does not begin as a notebook "
                  "does; it may be a script, a text or a web page saved under a notebook's "
                  "name. Open it in Jupyter and save it as a notebook (.ipynb)")
NOT_JSON_DAMAGED = ("not a readable notebook (not JSON): the file is damaged or was not "
                    "saved completely. Open it in Jupyter and save it again, or download it "
                    "again from where it was handed in")
_DETAIL = re.compile(r"^(?P<words>.*?) \(detail: (?P<detail>.*)\)$", re.S)


def with_detail(words: str, detail: str) -> str:
    """``words`` for the instructor, then the technical ``detail`` (a parser's message)."""
    return f"{words} (detail: {detail})"


def words_and_detail(reason: str) -> tuple[str, str]:
    """A refusal's words and its technical detail ("" when it has none), for a page that
    shows the words and folds the detail away."""
    m = _DETAIL.match(reason)
    return (m["words"], m["detail"]) if m else (reason, "")


def not_json_words(exc: json.JSONDecodeError) -> str:
    """What a JSON parse error means for a notebook: a file that is no notebook at all
    (nothing readable at its very start), or a notebook damaged further on."""
    return NOT_JSON_START if exc.pos == len(exc.doc) - len(exc.doc.lstrip()) else \
        NOT_JSON_DAMAGED
