"""Turn what an instructor uploads (notebooks and ZIPs) into submissions.

An upload is one or more ``.ipynb`` files and ``.zip`` archives (a Canvas
"Download Submissions" ZIP, a GitHub Classroom export, a folder zipped on a
laptop). Each notebook found becomes a ``SubmissionFile`` with a student id
guessed from its name. A bad input never stops the others: ``expand_inputs``
reports it as an ``InputProblem`` and goes on.

ZIPs are read in memory, never extracted, and are refused with
``ArchiveError(file, reason)`` when they are corrupt, when a member name is
unsafe (absolute, a drive letter, or ``..`` after normalisation: zip-slip), or
when they look like a zip bomb: more than ``max_members`` entries, more than
``max_total_bytes`` uncompressed (from the central directory, and again counted
while reading, since headers can lie), or a member over ``ratio_min_bytes`` that
expands more than ``max_ratio`` times its compressed size. Members are read in
chunks with a cap, never trusting the declared size. ZIPs inside a ZIP are read
one level deep. Folders and files named ``__MACOSX``, ``.ipynb_checkpoints`` or
starting with ``.`` are ignored, and members that are neither notebooks nor ZIPs
are skipped silently.

Student ids, first rule that applies wins:

1. Canvas: a file name (or an enclosing folder or nested ZIP name) like
   ``doejane_12345_67890_hw1.ipynb`` or ``doejane_LATE_12345_67890_hw1.ipynb``
   (name slug, optional LATE, Canvas user id, submission id, original name)
   gives student id ``12345`` and display name ``doejane``.
2. Folders: leading folders that every notebook of one archive shares are a
   wrapper and are dropped (only when the archive holds two or more notebooks).
   The first remaining folder is the student's; ``.zip`` and a GitHub download's
   ``-main``/``-master`` suffix are removed from its name. When two or more
   student folders share a prefix ending in ``-`` (GitHub Classroom:
   ``hw2-sales-octocat``, ``hw2-sales-student042``), the longest such prefix is
   stripped: ``octocat``. A lone folder with a ``-`` keeps the part after the
   last ``-`` (so a username containing ``-`` is cut; pass ``classroom_prefix``
   to say exactly what to strip). A folder without ``-`` is the id as it is.
3. Otherwise the file stem: ``student042.ipynb`` -> ``student042``.

The display name is the id except under rule 1.
"""

from __future__ import annotations

import io
import logging
import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from grader.errors import ArchiveError, NotebookError
from grader.notebook import DEFAULT_LIMITS as DEFAULT_NOTEBOOK_LIMITS
from grader.notebook import NotebookLimits, load_notebook_node

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

MB = 1_000_000
_CHUNK = 1 << 16
_IGNORED_PARTS = {"__MACOSX", ".ipynb_checkpoints"}
_CANVAS_RE = re.compile(r"^(?P<slug>[A-Za-z0-9-]+)(?:_LATE)?_(?P<uid>\d{3,})_\d{3,}_.+$")
_DRIVE_RE = re.compile(r"^[A-Za-z]:")
_BRANCH_RE = re.compile(r"-(?:main|master)$")
# Damaged or unsupported member data (ValueError: a bad offset; RuntimeError: a password).
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError)
_READ_ERRORS += (NotImplementedError, RuntimeError)


@dataclass(frozen=True)
class ArchiveLimits:
    """How much a ZIP may expand to before it is treated as a zip bomb."""

    max_total_bytes: int = 500 * MB
    max_ratio: float = 200.0
    max_members: int = 5000
    ratio_min_bytes: int = 1 * MB  # smaller members may compress as well as they like
    max_depth: int = 1  # ZIPs inside ZIPs, this many levels

    def __post_init__(self) -> None:
        if self.max_total_bytes <= 0 or self.max_ratio <= 0 or self.max_members <= 0:
            raise ValueError("ArchiveLimits: sizes, ratio and member count must be positive")


DEFAULT_ARCHIVE_LIMITS = ArchiveLimits()


@dataclass(frozen=True)
class SubmissionFile:
    name: str  # path inside the archive, or the file name
    data: bytes
    student_id: str
    display_name: str


@dataclass(frozen=True)
class InputProblem:
    """An input (or a member of one) that could not be used, and why."""

    file: str
    reason: str


@dataclass
class _Budget:
    remaining: int  # uncompressed bytes still allowed across the whole archive


class _MemberError(Exception):
    """One member cannot be read; the archive as a whole is fine."""


def read_zip(
    data: bytes,
    name: str,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
    notebook_limits: NotebookLimits = DEFAULT_NOTEBOOK_LIMITS,
    *,
    classroom_prefix: str | None = None,
) -> list[SubmissionFile]:
    """The notebooks inside one ZIP, with student ids. Strict: any problem raises.

    Raises ``ArchiveError`` for a corrupt or unsafe archive, and for a member that
    cannot be read. Notebook contents are not validated here; ``load_notebook``
    does that when the submission is graded.
    """
    entries = _zip_entries(data, name, limits, notebook_limits, problems=None)
    return _submissions(entries, classroom_prefix)


def expand_uploads(
    uploads: Iterable[tuple[str, bytes]],
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
    notebook_limits: NotebookLimits = DEFAULT_NOTEBOOK_LIMITS,
    *,
    classroom_prefix: str | None = None,
) -> tuple[list[SubmissionFile], list[InputProblem]]:
    """Like ``expand_inputs`` for (file name, bytes) pairs, e.g. from a browser upload."""
    files: list[SubmissionFile] = []
    problems: list[InputProblem] = []
    for upload_name, data in uploads:
        if upload_name.lower().endswith(".zip"):
            try:
                entries = _zip_entries(data, upload_name, limits, notebook_limits, problems)
            except ArchiveError as exc:
                problems.append(InputProblem(exc.file, exc.reason))
                continue
            prefix = f"{upload_name}/"
        elif upload_name.lower().endswith(".ipynb"):
            entries, prefix = [(Path(upload_name).name, data)], ""
        else:
            problems.append(InputProblem(upload_name, "not a notebook (.ipynb) or a ZIP"))
            continue
        for sub in _submissions(entries, classroom_prefix):
            try:
                load_notebook_node(sub.data, prefix + sub.name, notebook_limits)
            except NotebookError as exc:
                problems.append(InputProblem(exc.file, exc.reason))
                continue
            files.append(sub)
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

    Each notebook is checked with ``load_notebook_node``; one that fails becomes an
    ``InputProblem`` naming ``archive.zip/member`` and the rest are still returned.
    """
    uploads: list[tuple[str, bytes]] = []
    problems: list[InputProblem] = []
    for path in paths:
        suffix = path.suffix.lower()
        if suffix not in (".ipynb", ".zip"):
            kind = "a folder" if path.is_dir() else "not a notebook (.ipynb) or a ZIP"
            problems.append(InputProblem(path.name or str(path), kind))
            continue
        cap = limits.max_total_bytes if suffix == ".zip" else notebook_limits.max_bytes
        try:
            with path.open("rb") as fh:
                data = fh.read(cap + 1)
        except OSError as exc:
            problems.append(InputProblem(path.name, f"cannot read it: {exc.strerror or exc}"))
            continue
        if len(data) > cap:
            problems.append(InputProblem(path.name, f"the file is larger than {_mb(cap)}"))
            continue
        uploads.append((path.name, data))
    files, more = expand_uploads(
        uploads, limits, notebook_limits, classroom_prefix=classroom_prefix
    )
    return files, problems + more


# --- reading ZIPs ----------------------------------------------------------------------


def _mb(n: float) -> str:
    return f"{n / MB:.1f} MB"


def _zip_entries(
    data: bytes,
    name: str,
    limits: ArchiveLimits,
    notebook_limits: NotebookLimits,
    problems: list[InputProblem] | None,
    budget: _Budget | None = None,
    depth: int = 0,
) -> list[tuple[str, bytes]]:
    """(member path, bytes) for each notebook in the ZIP; nested ZIPs give 'inner.zip/x'."""
    budget = budget or _Budget(limits.max_total_bytes)
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise ArchiveError(name, f"not a valid ZIP archive ({exc})") from exc
    with zf:
        infos = zf.infolist()
        _check_directory(infos, name, limits, budget)
        paths = [_safe_name(info.filename, name) for info in infos]
        entries: list[tuple[str, bytes]] = []
        for info, path in zip(infos, paths, strict=True):
            parts = path.split("/")
            is_dir = info.filename.endswith(("/", "\\"))  # ZipInfo.is_dir() fails on ""
            if is_dir or _IGNORED_PARTS.intersection(parts) or parts[-1][:1] in ".":
                continue
            nested = path.lower().endswith(".zip")
            if not (nested or path.lower().endswith(".ipynb")):
                log.debug("%s: skipping %s (not a notebook)", name, path)
                continue
            if nested and depth >= limits.max_depth:
                log.info("%s: skipping %s (ZIPs nested too deep)", name, path)
                continue
            label = f"{name}/{path}"
            cap = budget.remaining if nested else notebook_limits.max_bytes
            try:  # an ArchiveError here (a bomb found while reading) refuses this archive
                member = _read_member(zf, info, label, limits, budget, cap)
            except _MemberError as exc:
                _report(problems, ArchiveError(label, str(exc)), exc)
                continue
            if not nested:
                entries.append((path, member))
                continue
            try:  # a bad nested ZIP costs only itself
                inner = _zip_entries(
                    member, label, limits, notebook_limits, problems, budget, depth + 1
                )
            except ArchiveError as exc:
                _report(problems, exc, exc)
                continue
            entries.extend((f"{path}/{p}", d) for p, d in inner)
    return entries


def _report(problems: list[InputProblem] | None, error: ArchiveError, cause: Exception) -> None:
    """Strict mode (no list) raises ``error``; otherwise it is recorded and reading goes on."""
    if problems is None:
        raise error from (error.__cause__ if cause is error else cause)
    problems.append(InputProblem(error.file, error.reason))


def _check_directory(
    infos: list[zipfile.ZipInfo], name: str, limits: ArchiveLimits, budget: _Budget
) -> None:
    """Zip-bomb checks on what the central directory declares."""
    count, total = len(infos), sum(i.file_size for i in infos)
    if count > limits.max_members:
        reason = f"{count:,} entries (the limit is {limits.max_members:,})"
        raise ArchiveError(name, f"zip bomb suspected: {reason}")
    if total > budget.remaining:
        reason = f"it would expand to {_mb(total)} (the limit is {_mb(limits.max_total_bytes)})"
        raise ArchiveError(name, f"zip bomb suspected: {reason}")
    for info in infos:
        _check_ratio(info.file_size, info, name, limits)


def _check_ratio(size: int, info: zipfile.ZipInfo, name: str, limits: ArchiveLimits) -> None:
    if size > limits.ratio_min_bytes and size > limits.max_ratio * max(info.compress_size, 1):
        ratio = size / max(info.compress_size, 1)
        raise ArchiveError(
            name,
            f"zip bomb suspected: {info.filename!r} expands {ratio:,.0f} times "
            f"(the limit is {limits.max_ratio:,.0f})",
        )


def _safe_name(raw: str, name: str) -> str:
    """The member's path with '/' separators, or ArchiveError for a zip-slip name."""
    path = raw.replace("\\", "/")
    unsafe = path.startswith("/") or _DRIVE_RE.match(path) or "\x00" in path
    normal = posixpath.normpath(path) if path else path
    if unsafe or normal == ".." or normal.startswith("../"):
        raise ArchiveError(name, f"unsafe member path {raw!r} (zip-slip): refusing the archive")
    return normal.rstrip("/") if normal != "." else ""


def _read_member(
    zf: zipfile.ZipFile,
    info: zipfile.ZipInfo,
    label: str,
    limits: ArchiveLimits,
    budget: _Budget,
    cap: int,
) -> bytes:
    """The member's bytes, read in chunks and stopped as soon as a limit is passed."""
    if info.flag_bits & 0x1:
        raise _MemberError("the member is encrypted")
    if info.file_size > cap:
        raise _MemberError(f"too large ({_mb(info.file_size)}; the limit is {_mb(cap)})")
    chunks: list[bytes] = []
    size = 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(_CHUNK):
                size += len(chunk)
                if size > info.file_size:
                    raise ArchiveError(label, "zip bomb suspected: larger than its header says")
                if size > budget.remaining:
                    over = _mb(limits.max_total_bytes)
                    raise ArchiveError(
                        label, f"zip bomb suspected: the archive expands past {over}"
                    )
                _check_ratio(size, info, label, limits)
                chunks.append(chunk)
    except _READ_ERRORS as exc:
        raise _MemberError(f"cannot read it from the ZIP ({exc})") from exc
    budget.remaining -= size
    return b"".join(chunks)


# --- student ids -----------------------------------------------------------------------


def _folder_id(part: str) -> str:
    return _BRANCH_RE.sub("", part[:-4] if part.lower().endswith(".zip") else part)


def _canvas(parts: list[str]) -> tuple[str, str] | None:
    match = next((m for m in map(_CANVAS_RE.match, reversed(parts)) if m), None)
    return (match["uid"], match["slug"]) if match else None


def _dash_prefix(names: list[str]) -> str:
    common = min(names, key=len)
    for n in names:
        while not n.startswith(common):
            common = common[:-1]
    prefix = common[: common.rfind("-") + 1]
    return prefix if all(len(n) > len(prefix) for n in names) else ""


def _submissions(
    entries: list[tuple[str, bytes]], classroom_prefix: str | None
) -> list[SubmissionFile]:
    """Attach a student id and display name to each entry (rules in the module docstring)."""
    split = [path.split("/") for path, _ in entries]
    folders = [parts[:-1] for parts in split]
    if len(entries) >= 2:
        while all(folders) and len({f[0] for f in folders}) == 1:
            if classroom_prefix and folders[0][0].startswith(classroom_prefix):
                break
            folders = [f[1:] for f in folders]
    tops = [_folder_id(f[0]) if f else "" for f in folders]
    distinct = sorted({t for t in tops if t})
    prefix = classroom_prefix or (_dash_prefix(distinct) if len(distinct) >= 2 else "")
    result = []
    for (path, data), parts, top in zip(entries, split, tops, strict=True):
        found = _canvas(parts)
        if found is None:
            if top and prefix and top.startswith(prefix) and len(top) > len(prefix):
                student = top[len(prefix) :]
            elif top and not classroom_prefix and len(distinct) == 1 and "-" in top.strip("-"):
                student = top.strip("-").rsplit("-", 1)[1]
            else:
                student = top or Path(parts[-1]).stem
            found = (student, student)
        result.append(SubmissionFile(path, data, found[0], found[1]))
    return result
