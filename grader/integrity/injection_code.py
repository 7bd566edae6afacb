"""A code cell's comments, string literals and code, apart (``injection`` scans each as
a place of its own): ``#`` starts a comment to the end of its line, in Python and in R;
a quote starts a string (a triple quote in Python), which a backslash cannot end and
which, in Python, ends with its line unless triple-quoted.
"""

from __future__ import annotations

import re

__all__ = ["Split", "split_code"]

Split = tuple[list[tuple[int, str]], list[tuple[int, str]], str]  # comments, strings, code
_CODE_STOP = re.compile("[#'\"]")


def _string_body(quote: str, triple: bool, python: bool) -> re.Pattern[str]:
    """A string literal's body up to its closing quote: a backslash escapes the next
    character; a one-quote Python string also ends with its line."""
    stop = quote + "\\\\" + ("\\n" if python and not triple else "")
    more = f"|{quote}(?!{quote}{quote})" if triple else ""
    return re.compile(rf"(?:[^{stop}]+|\\[\s\S]?{more})*")


_STRING_BODY = {(q, k, py): _string_body(q, k == 3, py)
                for q in "'\"" for k, py in ((1, True), (3, True), (1, False))}


def split_code(src: str, language: str, by_char: bool = False) -> Split:
    """(line, text) of each comment and string literal, and the code with both blanked
    (``by_char``: the same, one character at a time, as it was first written)."""
    if by_char:
        return _split_code_by_char(src, language)
    comments: list[tuple[int, str]] = []
    strings: list[tuple[int, str]] = []
    code: list[str] = []
    i, n, line = 0, len(src), 1
    while i < n:
        ch = src[i]
        if ch == "#":
            end = src.find("\n", i)
            end = n if end < 0 else end
            comments.append((line, src[i:end].lstrip("#")))
            i = end
        elif ch in "'\"":
            quote = ch * 3 if language == "python" and src.startswith(ch * 3, i) else ch
            body = _STRING_BODY[ch, len(quote), language == "python"].match(src, i + len(quote))
            j = body.end()  # type: ignore[union-attr]  # (it matches the empty string)
            content = src[i + len(quote) : j]
            strings.append((line, content))
            line += content.count("\n")
            code.append(" " + "\n" * content.count("\n"))
            i = j + len(quote) if src.startswith(quote, j) else j
        else:  # code up to the next comment or string
            j = m.start() if (m := _CODE_STOP.search(src, i)) else n
            line += src.count("\n", i, j)
            code.append(src[i:j])
            i = j
    return comments, strings, "".join(code)


def _split_code_by_char(src: str, language: str) -> Split:
    """``split_code`` as it was, one character at a time (the reference)."""
    comments: list[tuple[int, str]] = []
    strings: list[tuple[int, str]] = []
    code: list[str] = []
    i, n, line = 0, len(src), 1
    while i < n:
        ch = src[i]
        if ch == "#":
            end = src.find("\n", i)
            end = n if end < 0 else end
            comments.append((line, src[i:end].lstrip("#")))
            i = end
        elif ch in "'\"":
            quote = ch * 3 if language == "python" and src.startswith(ch * 3, i) else ch
            j = i + len(quote)
            while j < n and not src.startswith(quote, j):
                if src[j] == "\n" and len(quote) == 1 and language == "python":
                    break  # an unterminated string ends with its line
                j += 2 if src[j] == "\\" else 1
            content = src[i + len(quote) : min(j, n)]
            strings.append((line, content))
            line += content.count("\n")
            code.append(" " + "\n" * content.count("\n"))
            i = j + len(quote) if src.startswith(quote, j) else min(j, n)
        else:
            line += ch == "\n"
            code.append(ch)
            i += 1
    return comments, strings, "".join(code)
