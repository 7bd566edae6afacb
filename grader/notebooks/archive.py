"""Turn what an instructor uploads (notebooks and ZIPs) into submissions.

An upload is one or more ``.ipynb`` files and ``.zip`` archives (a Canvas
"Download Submissions" ZIP, a GitHub Classroom export, a folder zipped on a
laptop). Each notebook found becomes a ``SubmissionFile`` with a student id
guessed from where it was found (rules: ``grader.notebooks.student_ids``). A bad input
never stops the others: ``expand_inputs`` reports it as an ``InputProblem``
naming the upload and the entry, and goes on.

ZIPs are read in memory, never extracted (``grader.notebooks.zips``): an archive
that is not a ZIP or looks like a zip bomb is refused whole; an unsafe entry
(zip-slip), a link, an encrypted, oversized or damaged entry, or the notebooks
of a ZIP nested deeper than one level are refused one by one and the rest is
read. An archive without any notebook is a problem too, saying what it holds.
Folders named ``__MACOSX``, ``.ipynb_checkpoints`` or starting with ``.``, and
macOS and editor leftovers (``._x``, ``.#x``, ``~$x``) are ignored; files that
are neither notebooks nor ZIPs (data, scripts) are skipped.

Names are made safe once, here (``grader.safe_text``): a submission's ``name``
(its label: ``upload.zip/folder/x.ipynb``, or the file's name) and its student
id and display name show control, bidi and invisible characters as escapes and
are cut when very long, while ``archive`` and ``entry`` keep the names as they
were for the record. Labels are unique: two entries or uploads of one name get
``name (2).ipynb`` and a note saying so, and files that give one student id
are noted too (``SubmissionFile.notes``), as is text that had to be replaced
to make a notebook safe.
"""

from __future__ import annotations

import logging
import posixpath
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from grader.errors import ArchiveError, NotebookError
from grader.notebooks.load import DEFAULT_LIMITS as DEFAULT_NOTEBOOK_LIMITS
from grader.notebooks.load import NotebookLimits, load_checked
from grader.notebooks.student_ids import student_ids
from grader.notebooks.zips import (
    DEFAULT_ARCHIVE_LIMITS,
    ArchiveLimits,
    EntryProblem,
    ZipEntry,
    mb,
    shown_entry,
    zip_entries,
)
from grader.safe_text import SHOWN_LIMIT, record_name, shown_name, unshown

__all__ = [
    "DEFAULT_ARCHIVE_LIMITS",
    "ArchiveLimits",
    "InputProblem",
    "SubmissionFile",
    "expand_inputs",
    "expand_uploads",
    "read_zip",
]

log = logging.getLogger(__name__)

ID_LIMIT = 64  # characters of a student id or display name as shown (file stems fit too)


@dataclass(frozen=True)
class SubmissionFile:
    """A notebook to grade. ``name``, ``student_id`` and ``display_name`` are safe to show
    and to use as labels; ``archive`` and ``entry`` are the names as they were given."""

    name: str  # 'upload.zip/folder/x.ipynb', or the file's name (its path on the CLI)
    data: bytes
    student_id: str
    display_name: str
    archive: str = ""  # the ZIP it came from, as uploaded ('' for a notebook on its own)
    entry: str = ""  # its name in that ZIP, or the uploaded file's name, as given
    notes: tuple[str, ...] = ()  # what the instructor should know; it was read regardless


@dataclass(frozen=True)
class InputProblem:
    """An input (or an entry of one) that could not be used, and why. ``file`` is the
    label to show; ``archive`` and ``entry`` are the names as given (``entry`` is ''
    when the problem is the whole upload)."""

    file: str
    reason: str
    archive: str = ""
    entry: str = ""


def read_zip(
    data: bytes,
    name: str,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
    notebook_limits: NotebookLimits = DEFAULT_NOTEBOOK_LIMITS,
    *,
    classroom_prefix: str | None = None,
) -> list[SubmissionFile]:
    """The notebooks inside one ZIP, with student ids. Strict: any problem raises.

    Raises ``ArchiveError`` for a corrupt or unsafe archive, for an entry that
    cannot be read, and for an archive without notebooks. Notebook contents are
    not validated here; ``load_notebook`` does that when the submission is graded.
    """
    label = _upload_label(name)
    entries, skipped = zip_entries(data, label, limits, notebook_limits, None)
    if not entries:
        raise ArchiveError(label, _empty(skipped))
    return _unique(_from_zip(name, label, entries, classroom_prefix))


def expand_uploads(
    uploads: Iterable[tuple[str, bytes]],
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
    notebook_limits: NotebookLimits = DEFAULT_NOTEBOOK_LIMITS,
    *,
    classroom_prefix: str | None = None,
) -> tuple[list[SubmissionFile], list[InputProblem]]:
    """Like ``expand_inputs`` for (file name, bytes) pairs, e.g. from a browser upload."""
    found: list[SubmissionFile] = []
    problems: list[InputProblem] = []
    for upload_name, data in uploads:
        label = _upload_label(upload_name)
        if upload_name.lower().endswith(".zip"):
            entry_problems: list[EntryProblem] = []
            try:
                entries, skipped = zip_entries(data, label, limits, notebook_limits,
                                               entry_problems)
            except ArchiveError as exc:
                problems.append(InputProblem(exc.file, exc.reason, record_name(upload_name)))
                continue
            problems += [InputProblem(f"{label}/{shown_entry(p.raw)}", p.reason,
                                      record_name(upload_name), record_name(p.raw))
                         for p in entry_problems]
            if not entries and not entry_problems:
                problems.append(InputProblem(label, _empty(skipped), record_name(upload_name)))
            found += _from_zip(upload_name, label, entries, classroom_prefix)
        elif upload_name.lower().endswith(".ipynb"):
            found.append(_loose(upload_name, label, data))
        else:
            problems.append(InputProblem(label, "not a notebook (.ipynb) or a ZIP", "",
                                         record_name(upload_name)))
    files: list[SubmissionFile] = []
    for sub in _unique(found):
        try:
            loaded = load_checked(sub.data, sub.name, notebook_limits)
        except NotebookError as exc:
            problems.append(InputProblem(exc.file, exc.reason, sub.archive, sub.entry))
            continue
        text = loaded.repairs.describe()
        files.append(replace(sub, notes=(*sub.notes, f"text: {text}")) if text else sub)
    files = _shared_ids(files)
    for sub in files:
        for note in sub.notes:
            log.warning("%s: %s", sub.name, note)
    log.info("expanded %d submissions, %d problems", len(files), len(problems))
    return files, problems


def expand_inputs(
    paths: list[Path],
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
    notebook_limits: NotebookLimits = DEFAULT_NOTEBOOK_LIMITS,
    *,
    classroom_prefix: str | None = None,
) -> tuple[list[SubmissionFile], list[InputProblem]]:
    """Every valid notebook in ``paths`` (.ipynb files and .zip archives), and the problems.

    Each file is named by its path as given. Each notebook is checked with
    ``load_notebook``; one that fails becomes an ``InputProblem`` naming
    ``path/to/archive.zip/entry`` and the rest are still returned.
    """
    uploads: list[tuple[str, bytes]] = []
    problems: list[InputProblem] = []
    for path in paths:
        given = str(path)
        label = _upload_label(given)
        suffix = path.suffix.lower()
        if suffix not in (".ipynb", ".zip"):
            kind = "a folder" if path.is_dir() else "not a notebook (.ipynb) or a ZIP"
            problems.append(InputProblem(label, kind, "", record_name(given)))
            continue
        cap = limits.max_total_bytes if suffix == ".zip" else notebook_limits.max_bytes
        try:
            with path.open("rb") as fh:
                data = fh.read(cap + 1)
        except OSError as exc:
            problems.append(InputProblem(label, f"cannot read it: {exc.strerror or exc}", "",
                                         record_name(given)))
            continue
        if len(data) > cap:
            problems.append(InputProblem(label, f"the file is larger than {mb(cap)}", "",
                                         record_name(given)))
            continue
        uploads.append((given, data))
    files, more = expand_uploads(
        uploads, limits, notebook_limits, classroom_prefix=classroom_prefix
    )
    return files, problems + more


# --- names -----------------------------------------------------------------------------


def _upload_label(name: str) -> str:
    return shown_name(name, 2 * SHOWN_LIMIT)


def _empty(skipped: Sequence[str]) -> str:
    if not skipped:
        return "no notebook (.ipynb) in this archive: it is empty"
    shown = ", ".join(repr(shown_name(s, 60)) for s in skipped[:5])
    more = f" and {len(skipped) - 5} more" if len(skipped) > 5 else ""
    files = "file" if len(skipped) == 1 else "files"
    return f"no notebook (.ipynb) in this archive (it holds {len(skipped)} other {files}: " \
           f"{shown}{more})"


def _renamed(raw: str, shown: str) -> tuple[str, ...]:
    """Notes on a name that is not shown as it is (``raw``: as given)."""
    notes = []
    if escapes := unshown(raw):
        more = " ..." if len(escapes) > 6 else ""
        notes.append("its name holds control, bidi or invisible characters, shown as "
                     f"escapes: {' '.join(escapes[:6])}{more}")
    if shown.count("…") > raw.count("…"):
        notes.append(f"its name is {len(raw):,} characters long: shown cut, with a hash of "
                     "the whole")
    return tuple(notes)


def _loose(upload_name: str, label: str, data: bytes) -> SubmissionFile:
    base = PurePosixPath(upload_name.replace("\\", "/")).name
    ((sid, name),) = student_ids([base], None)
    sid, name = _shown_id(sid, base), _shown_id(name, base)
    return SubmissionFile(label, data, sid, name, "", record_name(upload_name),
                          _renamed(upload_name, label))


def _shown_id(value: str, fallback: str) -> str:
    return shown_name(value or PurePosixPath(fallback).stem or fallback, ID_LIMIT)


def _from_zip(upload_name: str, label: str, entries: Sequence[ZipEntry],
              classroom_prefix: str | None) -> list[SubmissionFile]:
    ids = student_ids([e.path for e in entries], classroom_prefix)
    out = []
    for e, (sid, name) in zip(entries, ids, strict=True):
        shown = shown_entry(e.raw)
        notes = (*e.notes, *_renamed(e.raw.replace("\\", "/"), shown))
        out.append(SubmissionFile(f"{label}/{shown}", e.data, _shown_id(sid, e.path),
                                  _shown_id(name, e.path), record_name(upload_name),
                                  record_name(e.raw), notes))
    return out


def _unique(files: Sequence[SubmissionFile]) -> list[SubmissionFile]:
    """``files`` with distinct names: a second 'x.ipynb' becomes 'x (2).ipynb', noted."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(files):
        groups[f.name].append(i)
    taken = set(groups)
    out = list(files)
    for name, members in groups.items():
        if len(members) < 2:
            continue
        stem, dot, ext = name.rpartition(".") if "." in name.rsplit("/", 1)[-1] else (name, "", "")
        names, n = [name], 1
        for _ in members[1:]:
            n += 1
            while (new := f"{stem} ({n}){dot}{ext}") in taken:
                n += 1
            taken.add(new)
            names.append(new)
        first = files[members[0]]
        if first.archive and all(files[i].archive == first.archive for i in members):
            what = f"the archive {first.archive!r} has {len(members)} entries named {first.entry!r}"
        else:
            what = f"{len(members)} uploads are named {name!r}"
        shown = ", ".join(repr(n.rsplit("/", 1)[-1]) for n in names)
        note = f"duplicate name: {what}; each is graded, shown as {shown}"
        for i, new in zip(members, names, strict=True):
            out[i] = replace(files[i], name=new, notes=(*files[i].notes, note))
    return out


def _shared_ids(files: list[SubmissionFile]) -> list[SubmissionFile]:
    """Note the files that give one student id (ignoring case): two grades for a student."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, f in enumerate(files):
        groups[f.student_id.casefold()].append(i)
    out = list(files)
    for members in groups.values():
        if len(members) < 2:
            continue
        common = _common_folder([files[i].name for i in members])
        for i in members:
            others = [files[j].name[common:] for j in members if j != i]
            shown = ", ".join(map(repr, others[:3])) + (" and more" if len(others) > 3 else "")
            note = (f"the same student id {files[i].student_id!r} is also given by {shown}: "
                    "one student, several grades; check which counts")
            out[i] = replace(out[i], notes=(*out[i].notes, note))
    return out


def _common_folder(names: list[str]) -> int:
    """The length of the folder part ('a.zip/') that all ``names`` share; 0 for none."""
    try:
        prefix = posixpath.commonpath([posixpath.dirname(n) for n in names])
    except ValueError:  # absolute and relative paths
        return 0
    return len(prefix) + 1 if prefix else 0
