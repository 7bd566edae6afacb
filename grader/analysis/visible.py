"""What a reader sees of a text, and its words: the one word count of the grader.

``visible_text`` is the text as rendered: characters that draw nothing are removed
(zero-width spaces and joiners, U+200B..U+200F; word joiners and invisible operators,
U+2060..U+2064; the byte-order mark U+FEFF; soft hyphens; bidi controls; the Unicode
tag characters U+E0000..U+E007F; variation selectors; the combining grapheme joiner;
Hangul fillers and the blank braille pattern), then NFKC folds compatibility forms
(full-width letters, ligatures). HTML comments and elements styled invisible are not
seen either. Removing a character that draws nothing can only join what it split, so
a padded answer never counts more words than its visible text holds.

``words`` lists the words of the visible text, markdown markup aside (emphasis, code
marks, headings, quotes, HTML tags, images; a link counts by its text). Combining marks
belong to the letter they sit on (``Zalgo`` text and scripts written with vowel signs
count one word per word). Every word count goes through it: the answer checks' counts,
what is and is not an answer, and what the student's letter says was written.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["visible_text", "words"]

# Characters that draw nothing. Category Cf (format characters) is removed whole below;
# these are the invisible ones of other categories.
_INVISIBLE_OTHER = (
    "\u034f"  # combining grapheme joiner (Mn)
    "\u115f\u1160\u3164\uffa0"  # Hangul fillers (Lo)
    "\u2800"  # braille pattern blank (So)
    "\ufe00-\ufe0f"  # variation selectors (Mn)
    "\U000e0100-\U000e01ef"  # variation selectors supplement (Mn)
)
_INVISIBLE = re.compile(f"[{_INVISIBLE_OTHER}]")
_HIDDEN_HTML = re.compile(  # an HTML comment, or an element styled invisible, to its end
    r"<!--.*?(?:-->|\Z)"
    r"|<(\w+)\b[^<>]*?(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0"
    r"|opacity\s*:\s*0(?![.\d])|\shidden\b)[^<>]*>.*?(?:</\1\s*>|\Z)",
    re.IGNORECASE | re.DOTALL,
)
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)
# Markup that is not words: emphasis, code marks, headings, quotes, HTML tags, and
# images (their alt text is not an answer); a link counts by its text.
_MD_MARKUP = re.compile(r"(!\[[^\]]*\]\([^)]*\)|\*\*|__|[*_`#>]|\[([^\]]*)\]\([^)]*\)|<[^>]+>)")


def visible_text(text: str, html: bool = True) -> str:
    """``text`` as a reader sees it (see the module): invisible characters and (``html``:
    for markdown, not code) hidden HTML removed, NFKC applied. Line breaks are kept, so
    line numbers still hold."""
    if html:
        text = _HIDDEN_HTML.sub(lambda m: "\n" * m[0].count("\n"), text)
    if text.isascii():
        return text
    text = _INVISIBLE.sub("", text)
    text = "".join(c for c in text if unicodedata.category(c) != "Cf")
    return unicodedata.normalize("NFKC", text)


def _without_marks(text: str) -> str:
    """Combining marks removed, so they never split the word they belong to."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFC", text)
                   if not unicodedata.category(c).startswith("M"))


def words(text: str) -> list[str]:
    """The words a reader sees in ``text`` (see the module)."""
    plain = _MD_MARKUP.sub(lambda m: m.group(2) or " ", visible_text(text))
    return _WORD.findall(_without_marks(plain))
