"""Reading one uploaded ZIP safely, from memory or its file: its notebooks, what was refused.

Part of ``grader.notebooks.archive`` (which names students and files). Nothing is ever
extracted. The archive as a whole is refused (``ArchiveError``) when it is not a
ZIP, or when it looks like a zip bomb: more than ``max_members`` entries, or the
notebooks and ZIPs in it would expand past ``max_total_bytes`` (declared in the
central directory, and again counted while reading, since headers can lie).

One bad entry costs only itself: an unsafe path (absolute, a drive letter, ``..``
after normalisation, a NUL: zip-slip), a symbolic link, an encrypted entry, one
over the notebook size limit or expanding more than ``max_ratio`` times its
compressed size, one larger than its header says, damaged data, a broken nested
ZIP, or notebooks in a ZIP nested deeper than ``max_depth``. Each becomes an
``EntryProblem`` naming the entry as the archive names it (in strict mode, an
``ArchiveError``), and the other entries are read. Entries are read in chunks with
a cap, never trusting the declared size (the checks: ``grader.notebooks.zip_parts``).

Entry names marked UTF-8 that are not (some zip tools) are read as cp437, as
unmarked names are, with a note, rather than refusing the archive.

``zip_entries`` reads every notebook at once. A class of thousands is read one notebook
at a time instead (``ZipSource``): ``list`` walks the directories (a nested ZIP is read
to list it, then let go) with the same checks and problems, and ``read`` reads one
listed notebook, with the same caps and the same budget for the whole upload, so
that no more than one notebook's bytes (and one nested ZIP's) are held at once.

``count_notebooks`` says how many notebooks a ZIP holds from its central directory
alone (and those of the ZIPs in it), so that the Grade page can say how large a batch
is (``grader.service.sizing.batch_size``) before anything is read.
"""

from __future__ import annotations

import io
import logging
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, TypeVar

from grader.errors import ArchiveError
from grader.notebooks.load import DEFAULT_LIMITS as DEFAULT_NOTEBOOK_LIMITS
from grader.notebooks.load import NotebookLimits
from grader.notebooks.zip_parts import (
    DEFAULT_ARCHIVE_LIMITS,
    OPEN_ERRORS,
    READ_ERRORS,
    ArchiveLimits,
    Budget,
    EntryError,
    Exhausted,
    check_directory,
    check_entry,
    ignored,
    mb,
    open_zip,
    read_entry,
    safe_path,
    wanted,
)
from grader.safe_text import shown_name

__all__ = ["DEFAULT_ARCHIVE_LIMITS", "ArchiveLimits", "EntryProblem", "ZipEntry", "ZipEntryError",
           "ZipRef", "ZipSource", "count_notebooks", "mb", "shown_entry", "zip_entries"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class ZipEntry:
    """A notebook found in the archive."""

    path: str  # normalised, '/'-separated; nested ZIPs give 'inner.zip/x.ipynb'
    raw: str  # the entry's name as the archive gives it ('inner.zip/x.ipynb' when nested)
    data: bytes
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ZipRef:
    """A notebook listed in the archive's directories, not read yet (``ZipSource.read``)."""

    path: str  # as ``ZipEntry.path``
    raw: str  # as ``ZipEntry.raw``
    size: int  # as its directory declares it (reading never trusts it)
    notes: tuple[str, ...] = ()
    members: tuple[int, ...] = ()  # its index in each directory: nested ZIPs', then its own


@dataclass(frozen=True, slots=True)
class EntryProblem:
    """An entry that was not read; ``raw`` is its name as the archive gives it."""

    raw: str
    reason: str


class ZipEntryError(ArchiveError):
    """One listed entry cannot be read (``file``: the upload and the entry); the archive as a
    whole is fine, and its other entries are read."""


# (index in its directory, its info, raw name with the nested ZIP's, normalised path, notes)
_Walked = tuple[int, zipfile.ZipInfo, str, str, tuple[str, ...]]


def zip_entries(
    data: bytes,
    name: str,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
    notebook_limits: NotebookLimits = DEFAULT_NOTEBOOK_LIMITS,
    problems: list[EntryProblem] | None = None,
) -> tuple[list[ZipEntry], list[str]]:
    """The notebooks in the ZIP ``data`` (shown as ``name`` in errors), and the names of the
    other files that were skipped. Entries that cannot be used are appended to
    ``problems``; without a list (strict) the first one raises ``ArchiveError``. A
    corrupt or bomb-like archive always raises ``ArchiveError``."""
    reader = _Reader(name, limits, notebook_limits, problems)
    return reader.read(data, name, "", 0), reader.skipped


class _Reader:
    def __init__(self, name: str, limits: ArchiveLimits, notebook_limits: NotebookLimits,
                 problems: list[EntryProblem] | None) -> None:
        self.name, self.limits, self.notebook_limits = name, limits, notebook_limits
        self.problems, self.budget = problems, Budget(limits.max_total_bytes)
        self.skipped: list[str] = []

    def label(self, raw: str) -> str:
        return f"{self.name}/{shown_entry(raw)}"

    def problem(self, raw: str, reason: str, cause: Exception | None = None) -> None:
        """Record an entry that is not read; strict mode raises instead."""
        if self.problems is None:
            raise ArchiveError(self.label(raw), reason) from cause
        log.info("%s: not reading %r: %s", self.name, raw, reason)
        self.problems.append(EntryProblem(raw, reason))

    def walk(self, zf: zipfile.ZipFile, repaired: set[str], name: str, prefix: str
             ) -> Iterator[_Walked]:
        """The entries of one ZIP worth reading (notebooks, ZIPs), checked on what its
        directory declares; the others are skipped or recorded as problems. ``prefix``: ''
        for the upload, the nested ZIP's raw name and '/' in it; ``name`` labels errors of
        the ZIP as a whole."""
        infos = zf.infolist()
        check_directory(len(infos), [i for i in infos if wanted(i.filename)], name,
                        self.limits, self.budget)
        for index, info in enumerate(infos):
            raw = info.orig_filename
            full = f"{prefix}{raw}"
            if not wanted(raw):
                if raw and not raw.endswith(("/", "\\")):
                    self.skipped.append(full)
                continue
            try:
                path = safe_path(raw)
                if ignored(path):
                    continue
                check_entry(info, self.limits, self.notebook_limits)
            except EntryError as exc:
                self.problem(full, str(exc), exc)
                continue
            notes = (f"the archive marks the name {raw!r} as UTF-8 but it is not: read "
                     "as cp437",) if raw in repaired else ()
            yield index, info, full, f"{prefix}{path}", notes

    def read(self, data: bytes, name: str, prefix: str, depth: int) -> list[ZipEntry]:
        """The notebooks of one ZIP, read: the upload (``prefix`` '') or a ZIP in it."""
        zf, repaired = open_zip(data, name)
        entries: list[ZipEntry] = []
        with zf:
            for _, info, full, path, notes in self.walk(zf, repaired, name, prefix):
                if not path.lower().endswith(".zip"):
                    entries.extend(self._notebook(zf, info, full, path, notes))
                elif (inner := self._nested(zf, info, full, depth)) is not None:
                    entries.extend(self._inside(full, self.read, inner, self.label(full),
                                                f"{full}/", depth + 1))
        return entries

    def list(self, zf: zipfile.ZipFile, repaired: set[str], name: str, prefix: str,
             depth: int, trail: tuple[int, ...]) -> list[ZipRef]:
        """The notebooks of one ZIP, listed, not read (nested ZIPs are read to list them)."""
        refs: list[ZipRef] = []
        for index, info, full, path, notes in self.walk(zf, repaired, name, prefix):
            members = (*trail, index)
            if not path.lower().endswith(".zip"):
                refs.append(ZipRef(path, full, info.file_size, notes, members))
            elif (inner := self._nested(zf, info, full, depth)) is not None:
                refs.extend(self._inside(full, self._list_bytes, inner, self.label(full),
                                         f"{full}/", depth + 1, members))
        return refs

    def _list_bytes(self, data: bytes, name: str, prefix: str, depth: int,
                    trail: tuple[int, ...]) -> list[ZipRef]:
        zf, repaired = open_zip(data, name)
        with zf:
            return self.list(zf, repaired, name, prefix, depth, trail)

    def _notebook(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo, full: str, path: str,
                  notes: tuple[str, ...]) -> list[ZipEntry]:
        try:  # an ArchiveError here (a bomb found while reading) refuses the whole upload
            data = read_entry(zf, info, self.label(full), self.limits, self.budget,
                              self.notebook_limits.max_bytes)
        except EntryError as exc:
            self.problem(full, str(exc), exc)
            return []
        return [ZipEntry(path, full, data, notes)]

    def _nested(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo, full: str, depth: int
                ) -> bytes | None:
        """A nested ZIP's bytes, or None when it is not to be read (a problem says why)."""
        try:
            data = read_entry(zf, info, self.label(full), self.limits, self.budget,
                              self.budget.remaining)
        except EntryError as exc:
            self.problem(full, str(exc), exc)
            return None
        if depth >= self.limits.max_depth:
            self._too_deep(data, full)
            return None
        return data

    def _inside(self, full: str, then: Callable[..., list[_T]], *args: Any) -> list[_T]:
        """``then(*args)`` over the nested ZIP ``full``: a bad one costs only itself."""
        try:
            return then(*args)
        except Exhausted:
            raise
        except ArchiveError as exc:
            self.problem(full, exc.reason, exc)
            return []

    def _too_deep(self, data: bytes, full: str) -> None:
        """Name the notebooks of a ZIP nested too deep to be read (without reading them)."""
        levels = self.limits.max_depth
        why = (f"inside a ZIP nested more than {levels} level{'s' if levels != 1 else ''} "
               "deep: not read (unzip it and upload its notebooks)")
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as inner:
                names = [n for n in inner.namelist() if wanted(n)]
        except (*OPEN_ERRORS, UnicodeDecodeError) as exc:
            self.problem(full, f"a ZIP nested too deep, and not a valid one ({exc})", exc)
            return
        for inner_name in names:
            self.problem(f"{full}/{inner_name}", why)
        if not names:
            log.info("%s: %s is nested too deep and holds no notebook", self.name, full)


class ZipSource:
    """One uploaded ZIP, kept open: its notebooks listed (``list``), then read one at a time
    (``read``), with the checks, caps and budget of ``zip_entries``. ``data``: the ZIP's
    bytes, or its file (read as needed, never whole). Raises ``ArchiveError`` when it is
    not a ZIP, ``OSError`` when its file cannot be opened."""

    def __init__(self, data: bytes | Path, name: str,
                 limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
                 notebook_limits: NotebookLimits = DEFAULT_NOTEBOOK_LIMITS) -> None:
        self.name = name
        self._reader = _Reader(name, limits, notebook_limits, [])
        self._inner: tuple[tuple[int, ...], zipfile.ZipFile] | None = None
        self._file: BinaryIO | None = data.open("rb") if isinstance(data, Path) else None
        try:
            self._zf, self._repaired = open_zip(self._file or data, name)
        except BaseException:
            if self._file is not None:
                self._file.close()
            raise

    def list(self, problems: list[EntryProblem]) -> tuple[list[ZipRef], list[str]]:
        """The notebooks, listed in the archive's order, and the other files' names; each
        entry refused is appended to ``problems``. Raises ``ArchiveError`` for an archive
        refused whole (a zip bomb)."""
        self._reader.problems = problems
        return (self._reader.list(self._zf, self._repaired, self.name, "", 0, ()),
                self._reader.skipped)

    def read(self, ref: ZipRef) -> bytes:
        """A listed notebook's bytes. Raises ``ZipEntryError`` when that entry cannot be read,
        and ``ArchiveError`` when the upload expands past its budget (its headers lied:
        the whole upload is refused)."""
        label = self._reader.label(ref.raw)
        try:
            zf = self._zip_of(ref.members[:-1], label)
            return read_entry(zf, zf.infolist()[ref.members[-1]], label, self._reader.limits,
                              self._reader.budget, self._reader.notebook_limits.max_bytes)
        except EntryError as exc:
            raise ZipEntryError(label, str(exc)) from exc

    def _zip_of(self, trail: tuple[int, ...], label: str) -> zipfile.ZipFile:
        """The ZIP holding an entry: the upload, or a nested ZIP (read again, kept open for
        the entries after it; its bytes were counted in the budget when it was listed)."""
        if not trail:
            return self._zf
        if self._inner is not None and self._inner[0] == trail:
            return self._inner[1]
        self._close_inner()
        zf, limits = self._zf, self._reader.limits
        for index in trail:
            info = zf.infolist()[index]
            data = read_entry(zf, info, label, limits, Budget(limits.max_total_bytes),
                              limits.max_total_bytes)
            try:
                zf = open_zip(data, label)[0]
            except ArchiveError as exc:
                raise EntryError(exc.reason) from exc
        self._inner = (trail, zf)
        return zf

    def _close_inner(self) -> None:
        if self._inner is not None:
            self._inner[1].close()
            self._inner = None

    def close(self) -> None:
        self._close_inner()
        self._zf.close()
        if self._file is not None:
            self._file.close()

    def __enter__(self) -> ZipSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def count_notebooks(data: bytes, name: str,
                    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS) -> int:
    """How many notebooks the ZIP ``data`` holds (nested ZIPs up to ``max_depth``
    included), read from central directories; an archive that cannot be opened or is
    too large to count raises ``ArchiveError``."""

    def count(zf: zipfile.ZipFile, depth: int) -> int:
        infos = zf.infolist()
        if len(infos) > limits.max_members:
            raise ArchiveError(name, f"zip bomb suspected: {len(infos):,} entries (the limit "
                                     f"is {limits.max_members:,})")
        found = 0
        for info in infos:
            path = info.filename.replace("\\", "/")
            if not wanted(path) or ignored(path):
                continue
            if path.lower().endswith(".ipynb"):
                found += 1
            elif depth < limits.max_depth and info.file_size <= limits.max_total_bytes:
                try:
                    with zipfile.ZipFile(io.BytesIO(zf.read(info))) as inner:
                        found += count(inner, depth + 1)
                except READ_ERRORS:  # reading it for grading names the problem
                    continue
        return found

    zf, _ = open_zip(data, name)
    with zf:
        return count(zf, 0)


def shown_entry(raw: str) -> str:
    """An entry's name as shown in labels: '/' separators, unsafe characters escaped."""
    return shown_name(raw.replace("\\", "/"))
