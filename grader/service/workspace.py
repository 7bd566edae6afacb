"""The instructor's assignments: the bundled examples and the ones made in the app.

A ``Workspace`` lists assignment folders from two places: the bundled examples
(``examples/*/assignment.toml``, read-only: they ship with the grader) and the
assignments an instructor created from uploads (``$GRADER_DATA_DIR/assignments``).
Creating one validates everything first (the notebooks parse, the rubric is
valid for them, names are safe) and only then writes the folder, in one rename,
so a bad upload never leaves half an assignment behind. The folder's name is a
short, readable form of the title (``short_name``: "Lesson 7: Strings and dates
(R) - Fall 2026" -> "lesson-7-strings-and-dates"), made unique with -2, -3, ...;
an old-system rubric imported on the way takes the title the instructor typed.

The rubric in force is the folder's rubric until someone saves an edited one:
edited rubrics are stored as new versions in the grade store and the newest
saved one is put in force (``save_rubric``), so old grades keep the version they
were graded with and the bundled folders are never rewritten.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import nbformat

from inference import data_dir

from ..assignment import Assignment, load_assignment
from ..errors import InputError, NotebookError, RubricError
from ..notebooks.load import load_notebook
from ..packages.files import PACKAGE_FILES, declare
from ..rubrics.import_formats import detect
from ..rubrics.import_nbgrader import import_nbgrader, is_nbgrader
from ..rubrics.import_otter_assign import import_otter_assign, is_otter_assign
from ..rubrics.import_seed import ImportReport, import_seed_rubric
from ..rubrics.schema import Rubric, dumps, loads, rubric_from_dict
from ..store.database import RubricVersionRow, Store
from ..types import Notebook
from .import_fit import fit_import
from .selfcheck import CheckState, SelfChecks
from .shelf import archived_names, retired_names

log = logging.getLogger(__name__)

BUNDLED_DIR = Path(__file__).resolve().parents[2] / "examples"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
SHORT_NAME_LIMIT = 32  # characters of a folder name made from a title
# Where a title breaks into phrases ("Lesson 7: Strings and dates - Fall 2026").
_PHRASE_BREAK = re.compile(r"\s+[-\u2013\u2014|/]\s+|[:;,|\u2013\u2014]")
_NO_END = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "of", "on", "or", "the",
           "to", "with"}  # a name cut at a word boundary does not end on these


@dataclass(frozen=True, slots=True)
class Upload:
    """A file as the browser sent it: its name and bytes."""

    name: str
    data: bytes


@dataclass(frozen=True, slots=True)
class AssignmentEntry:
    name: str
    title: str
    language: str
    root: Path
    bundled: bool
    problem: str = ""  # why the folder cannot be loaded ("" when it can)


@dataclass(frozen=True, slots=True)
class RubricFromUpload:
    rubric: Rubric
    imported: bool  # converted from the old system's format
    dropped: tuple[str, ...] = ()  # what the import could not carry over
    report: ImportReport | None = None  # item by item (imported rubrics only)


def slug(text: str) -> str:
    ascii_ = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9_]+", "-", ascii_.strip().lower()).strip("-_")[:64]


def _cut(words: list[str], limit: int) -> list[str]:
    """The leading words that fit ``limit`` characters joined by '-'; a word alone
    longer than that is cut."""
    out: list[str] = []
    for w in words:
        if len("-".join([*out, w])) > limit:
            break
        out.append(w)
    return out or [words[0][:limit]]


def short_name(title: str, taken: Collection[str] = (), limit: int = SHORT_NAME_LIMIT,
               fallback: str = "assignment") -> str:
    """A short, readable folder name for ``title``: lower-case words joined by '-', at
    most ``limit`` characters, cut between words. A title too long for that loses its
    parentheses ("(R)") and then its last phrases ("- Fall 2026"); a name in
    ``taken`` gets -2, -3, ..."""
    whole = slug(title)
    if len(whole) <= limit:
        base = whole
    else:
        bare = re.sub(r"\([^)]*\)|\[[^]]*\]", " ", title)
        phrases = [p for p in (slug(x) for x in _PHRASE_BREAK.split(bare)) if p] \
            or [p for p in (slug(x) for x in _PHRASE_BREAK.split(title)) if p]
        out: list[str] = []
        for phrase in phrases:
            if len("-".join([*out, phrase])) <= limit:
                out.append(phrase)
                continue
            if len("-".join(out)) < limit // 2:  # too little of the title: go on by words
                out = _cut("-".join([*out, phrase]).split("-"), limit)
                while len(out) > 1 and out[-1] in _NO_END:
                    out.pop()
            break
        base = "-".join(out).strip("-_")
    if not re.search("[a-z]", base):  # "7" alone (the rest was not Latin) says little
        base = f"{fallback}-{base}".strip("-")[:limit].rstrip("-_")
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base[: limit - len(str(n)) - 1].rstrip('-_')}-{n}"
    return name


def read_rubric_upload(upload: Upload, language: str,
                       fit_to: tuple[Notebook, Notebook] | None = None) -> RubricFromUpload:
    """A rubric from an uploaded JSON file: ours (schema v1), or the old system's
    format, imported (what it cannot carry is listed) and, given the assignment's
    ``(template, solution)``, fitted to its solution (``import_fit``). Errors name the
    file."""
    try:
        data = json.loads(upload.data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RubricError(upload.name, [f"not a JSON file: {exc}"]) from exc
    if isinstance(data, dict) and "criteria" in data:
        return RubricFromUpload(rubric_from_dict(data, upload.name), imported=False)
    if detect(data):
        report = import_seed_rubric(data, language, upload.name)
        return from_import(fit_import(report, *fit_to) if fit_to is not None else report)
    raise RubricError(upload.name, ["neither a rubric (no `criteria`, see docs/rubric-format.md) "
                                    "nor an old-system rubric (no category with points)"])


def notebooks_of(assignment: Assignment) -> tuple[Notebook, Notebook] | None:
    """The assignment's (template, solution), to fit an imported rubric to; None when
    either cannot be read (the import then stands as it is)."""
    try:
        return load_notebook(assignment.template), load_notebook(assignment.solution)
    except (NotebookError, OSError):
        return None


def nbgrader_upload(upload: Upload) -> tuple[Upload, Upload, ImportReport] | None:
    """The template, solution and rubric report of an uploaded nbgrader source notebook
    or otter master notebook; None when the upload is neither (an ordinary template).
    Errors name the file."""
    try:
        nb = nbformat.reads(upload.data.decode("utf-8"), as_version=4)
    except (UnicodeDecodeError, ValueError):
        return None  # not a notebook: the template's own check says so
    if is_nbgrader(nb):
        imported = import_nbgrader(nb, upload.name)
    elif is_otter_assign(nb):
        imported = import_otter_assign(nb, upload.name)
    else:
        return None
    return (Upload(upload.name, nbformat.writes(imported.template).encode()),
            Upload("solution.ipynb", nbformat.writes(imported.solution).encode()),
            imported.report)


def from_import(report: ImportReport) -> RubricFromUpload:
    return RubricFromUpload(report.rubric, True, tuple(report.dropped), report)


def made_from(template: Upload | None, solution: Upload | None, rubric: Upload | None,
              data: list[Upload] | None = None) -> str:
    """The files an assignment is created from, in words ("template a.ipynb, solution
    b.ipynb, rubric c.json, data: d.csv"); a template alone is an nbgrader or otter
    source notebook."""
    if template is not None and solution is None and rubric is None:
        parts = [f"the source notebook {template.name} (template, solution and rubric)"]
    else:
        parts = [f"{what} {up.name}" for what, up in (("template", template),
                 ("solution", solution), ("rubric", rubric)) if up is not None]
    names = [up.name for up in data or []]
    parts.append(f"data: {', '.join(names)}" if names else "no data files")
    return ", ".join(parts)


def _safe_file_name(name: str, what: str) -> str:
    base = Path(name.replace("\\", "/")).name
    if not base or base.startswith(".") or base in ("assignment.toml",):
        raise InputError(name, f"unusable as the {what}'s file name")
    return base


class Workspace:
    def __init__(self, store: Store, user_dir: Path | None = None,
                 bundled_dir: Path = BUNDLED_DIR) -> None:
        self.store = store
        self.user_dir = user_dir if user_dir is not None else data_dir() / "assignments"
        self.bundled_dir = bundled_dir
        self.checks = SelfChecks()  # each assignment grades its own solution and template

    # -- listing and loading ----------------------------------------------------
    def _folders(self) -> list[tuple[Path, bool]]:
        found = []
        for base, bundled in ((self.bundled_dir, True), (self.user_dir, False)):
            if base.is_dir():
                found += [(p.parent, bundled) for p in sorted(base.glob("*/assignment.toml"))]
        return found

    def entries(self, archived: bool = False) -> list[AssignmentEntry]:
        """Every assignment folder not archived (``archived``: the archived ones instead,
        ``grader.service.shelf``); one that cannot be loaded is listed with the reason."""
        out = []
        hidden = archived_names(self.user_dir)
        for root, bundled in self._folders():
            if (root.name in hidden) != archived:
                continue
            try:
                a = load_assignment(root)
            except InputError as exc:
                out.append(AssignmentEntry(root.name, root.name, "?", root, bundled, str(exc)))
                continue
            out.append(AssignmentEntry(a.name, a.title, a.language, a.root, bundled))
        return out

    def root(self, name: str) -> Path:
        for root, _ in self._folders():
            if root.name == name:
                return root
        raise InputError(name, "no such assignment (bundled examples and created ones)")

    def load(self, name: str) -> Assignment:
        """The assignment with the rubric in force; registers it (and the folder's rubric
        as a version) in the store."""
        a = load_assignment(self.root(name))
        aid = self.store.upsert_assignment(a.name, a.title, a.language, a.root)
        self.store.add_rubric_version(aid, a.rubric.version, dumps(a.rubric))
        active = self.store.active_rubric(aid)
        if active is None or active.version == a.rubric.version:
            return a
        return dataclasses.replace(a, rubric=loads(active.rubric_json, f"{name} rubric "
                                                                        f"{active.version}"))

    def self_check(self, name: str) -> CheckState:
        """The self-check of the assignment as it is now (rubric in force included),
        started in the background on the first ask (``grader.service.selfcheck``)."""
        return self.checks.get(self.load(name))

    def assignment_id(self, name: str) -> int:
        a = self.load(name)
        aid = self.store.assignment_id(a.name)
        assert aid is not None  # load() registered it
        return aid

    def example_submissions(self, name: str) -> list[Path]:
        """The notebooks a bundled example ships as sample submissions."""
        a = load_assignment(self.root(name))
        if a.submissions is None or not a.submissions.is_dir():
            return []
        return sorted(a.submissions.glob("*.ipynb"))

    # -- rubric versions --------------------------------------------------------
    def save_rubric(self, name: str, rubric: Rubric, note: str = "") -> RubricVersionRow:
        """Store ``rubric`` as a version of the assignment and put it in force."""
        a = self.load(name)
        if rubric.language != a.language:
            raise RubricError(name, [f"the rubric is for {rubric.language}, the assignment is "
                                     f"{a.language}"])
        aid = self.assignment_id(name)
        rv = self.store.add_rubric_version(aid, rubric.version, dumps(rubric))
        self.store.set_active_rubric(aid, rv, note)
        log.info("assignment %s: rubric %s in force (%s)", name, rubric.version, note or "-")
        return next(r for r in self.store.rubric_versions(aid) if r.id == rv)

    def rubric_history(self, name: str) -> list[RubricVersionRow]:
        return self.store.rubric_versions(self.assignment_id(name))

    # -- creating ---------------------------------------------------------------
    def create(self, title: str, template: Upload | None, solution: Upload | None,
               rubric: Upload | None, data: list[Upload] | None = None,
               name: str = "") -> tuple[Assignment, RubricFromUpload]:
        """A new assignment folder from uploads; every problem is reported at once and
        nothing is written unless all is well. Without a ``name`` the folder is named
        ``short_name(title)``, made unique; the name is the returned assignment's
        ``name``. A rubric imported from the old system takes ``title`` as its title;
        without a ``title`` the assignment takes the rubric's."""
        title = title.strip()
        taken = {r.name for r, _ in self._folders()} | retired_names(self.user_dir)
        problems: list[str] = []
        from_nbgrader = None
        if template is not None and solution is None and rubric is None:
            from_nbgrader = nbgrader_upload(template)  # one source notebook holds all three
            if from_nbgrader is not None:
                template, solution = from_nbgrader[:2]
        if name and not _NAME.match(name):
            problems.append(f"name {name!r}: use lower-case letters, digits, '-' or '_'")
        elif name in taken:
            problems.append(f"an assignment named {name!r} exists already")
        notebooks = {}
        for what, up in (("template", template), ("solution", solution)):
            if up is None:
                problems.append(f"no {what} notebook uploaded")
                continue
            try:
                notebooks[what] = load_notebook(up.data, up.name)
            except NotebookError as exc:
                problems.append(f"{what}: {exc}")
        parsed: RubricFromUpload | None = None
        if from_nbgrader is not None:
            parsed = from_import(from_nbgrader[2].retitled(title, "as you typed it"))
            title = title or parsed.rubric.title
        elif rubric is None:
            problems.append("no rubric uploaded: a rubric JSON (docs/rubric-format.md) or an "
                            "old-system rubric file to import")
        else:
            language = notebooks["solution"].language if "solution" in notebooks else "python"
            pair = (notebooks["template"], notebooks["solution"]) \
                if len(notebooks) == 2 else None
            try:
                parsed = read_rubric_upload(rubric, language, pair)
            except RubricError as exc:
                problems.extend(f"rubric {exc.file}: {p}" for p in exc.problems)
            if parsed is not None and parsed.report is not None:
                parsed = from_import(parsed.report.retitled(title))
            elif parsed is not None and title and title != parsed.rubric.title:
                # the title typed at creation names the assignment everywhere
                parsed = dataclasses.replace(
                    parsed, rubric=dataclasses.replace(parsed.rubric, title=title))
            title = title or (parsed.rubric.title if parsed is not None else "")
        # a requirements.txt (requirements.R, install.R, r-packages.txt) among the files is
        # the assignment's packages, never data
        package_files = {up.name: up.data for up in data or [] if up.name in PACKAGE_FILES}
        data = [up for up in data or [] if up.name not in PACKAGE_FILES]
        data_names = []
        for up in data:
            try:
                data_names.append(_safe_file_name(up.name, "data"))
            except InputError as exc:
                problems.append(str(exc))
        if len(set(data_names)) != len(data_names):
            problems.append("two data files have the same name")
        if parsed is not None and "solution" in notebooks \
                and notebooks["solution"].language != parsed.rubric.language:
            problems.append(f"the rubric is for {parsed.rubric.language} but the solution is "
                            f"{notebooks['solution'].language}")
        if problems or parsed is None or template is None or solution is None:
            raise RubricError(title or name or "new assignment", problems)
        name = name or short_name(title, taken)
        self.user_dir.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=self.user_dir))
        try:
            (tmp / "template.ipynb").write_bytes(template.data)
            (tmp / "solution.ipynb").write_bytes(solution.data)
            (tmp / "rubric.json").write_text(dumps(parsed.rubric), encoding="utf-8")
            (tmp / "data").mkdir()
            for up, base in zip(data, data_names, strict=True):
                (tmp / "data" / base).write_bytes(up.data)
            (tmp / "assignment.toml").write_text(
                f"title = {json.dumps(title or name)}\nrubric = \"rubric.json\"\n"
                "template = \"template.ipynb\"\nsolution = \"solution.ipynb\"\n"
                "data = [\"data\"]\n" + declare(tmp, package_files), encoding="utf-8")
            try:
                load_assignment(tmp)  # the folder as written must load
            except RubricError as exc:  # named by its title, not by the folder being made
                raise RubricError(title or name, exc.problems) from None
            tmp.rename(self.user_dir / name)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        log.info("created assignment %s (%s)", name, parsed.rubric.language)
        return self.load(name), parsed
