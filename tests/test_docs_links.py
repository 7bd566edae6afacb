"""Every relative link of the README and the docs leads somewhere: the file exists, and an
anchor into a Markdown file names one of its headings (as GitHub makes them). Links to
the web are not followed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "bench" / "README.md",
                ROOT / "examples" / "README.md"])
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INLINE_CODE = re.compile(r"`[^`\n]*`")


def prose(text: str) -> list[str]:
    """The lines outside fenced code blocks, inline code blanked out."""
    lines, fenced = [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in prose(path.read_text(encoding="utf-8")):
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    found = []
    for line in prose(path.read_text(encoding="utf-8")):
        found += LINK.findall(INLINE_CODE.sub("", line))
    return found


def broken(path: Path) -> list[str]:
    bad = []
    for target in links(path):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{target}: no heading #{anchor} in {dest.name}")
    return bad


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_somewhere(path: Path) -> None:
    assert broken(path) == []


def test_the_checker_finds_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A `code` heading: here\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md#a-code-heading-here) ![gone](gone.png) [bad](there.md#nope)\n"
                    "`[in code](gone.md)`\n```\n[fenced](gone.md)\n```\n[web](https://x.org/y)\n",
                    encoding="utf-8")
    assert broken(page) == ["gone.png: no such file",
                            "there.md#nope: no heading #nope in there.md"]


def test_the_readme_starts_a_newcomer_in_few_lines() -> None:
    """The README is the way in (issue 34, item 6): what it is, two commands, a tour and
    links; the rest lives in docs/."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 130
    for heading in ("## Quick start", "## A five-minute tour", "## Guides and references",
                    "## What is where", "## Adding a check type"):
        assert heading in text
