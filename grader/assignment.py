"""Assignment folders: assignment.toml names the rubric, template, solution and data.

See docs/rubric-format.md. Loading checks that every named file exists and
reports every problem at once, naming the folder's assignment.toml.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import RubricError
from .rubrics.schema import Rubric, _as_tuple, load_rubric


@dataclass(frozen=True, slots=True)
class Assignment:
    """An assignment folder: its rubric and the files named by assignment.toml."""

    name: str
    root: Path
    rubric: Rubric
    rubric_path: Path
    template: Path
    solution: Path
    data: tuple[Path, ...] = ()
    submissions: Path | None = None
    title: str = ""

    @property
    def language(self) -> str:
        return self.rubric.language

    def data_files(self) -> list[Path]:
        out: list[Path] = []
        for p in self.data:
            out.extend(sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p])
        return out



def load_assignment(root: Path) -> Assignment:
    """Read ROOT/assignment.toml and the rubric it names; every file must exist."""
    root = root.resolve()
    manifest = root / "assignment.toml"
    if not manifest.exists():
        raise RubricError(
            str(root), ["no assignment.toml in this folder (see docs/rubric-format.md)"]
        )
    try:
        data = tomllib.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RubricError(str(manifest), [f"cannot read: {exc}"]) from exc
    problems: list[str] = []
    for key in sorted(
        set(data) - {"title", "rubric", "template", "solution", "data", "submissions"}
    ):
        problems.append(f"unknown key {key!r}")
    paths: dict[str, Path] = {}
    for key in ("rubric", "template", "solution"):
        if not isinstance(data.get(key), str):
            problems.append(f"`{key}` must name a file")
            continue
        paths[key] = (root / data[key]).resolve()
        if not paths[key].is_file():
            problems.append(f"{key} file {data[key]!r} does not exist")
    data_paths = []
    for d in _as_tuple(data.get("data", []), "data", problems):
        p = (root / d).resolve()
        if not p.exists():
            problems.append(f"data {d!r} does not exist")
        data_paths.append(p)
    subs = data.get("submissions")
    if problems:
        raise RubricError(str(manifest), problems)
    rubric = load_rubric(paths["rubric"])
    return Assignment(
        name=root.name,
        root=root,
        rubric=rubric,
        rubric_path=paths["rubric"],
        template=paths["template"],
        solution=paths["solution"],
        data=tuple(data_paths),
        submissions=(root / subs).resolve() if isinstance(subs, str) else None,
        title=str(data.get("title") or rubric.title),
    )
