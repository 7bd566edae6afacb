"""A class's uploads read one notebook at a time: thousands of notebooks, never all in memory.

``read_class`` gives what ``grader.notebooks.archive.expand_inputs`` and ``expand_uploads``
give (the same labels, student ids, notes and problems, made by the same helpers) without
keeping the notebooks: each ZIP is listed from its directories
(``grader.notebooks.zips.ZipSource``, read from disk for a path), then each notebook is
read, checked (``load_checked``, as grading will) and hashed, handed to ``keep`` (the
grade store keeps it) and let go. What is left is a ``NotebookRef`` per notebook: label,
content hash, size, student and notes, enough to start a batch; the largest thing held
at once is one notebook (and one nested ZIP). ``ClassUploads.read`` reads a notebook again
when it is graded where no store keeps it (the command line without ``--db``), and
refuses one whose bytes changed since they were read.

An upload found to expand past its budget while its notebooks are read (headers that
lied) is refused whole, as ``expand_uploads`` refuses it: its notebooks and entry
problems give way to one problem naming the upload.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from grader.errors import ArchiveError, NotebookError
from grader.notebooks.archive import (
    InputProblem,
    SubmissionFile,
    _empty,
    _loose,
    _renamed,
    _shared_ids,
    _shown_id,
    _unique,
    _upload_label,
)
from grader.notebooks.load import DEFAULT_LIMITS as DEFAULT_NOTEBOOK_LIMITS
from grader.notebooks.load import NotebookLimits, load_checked
from grader.notebooks.student_ids import student_ids
from grader.notebooks.zips import (
    DEFAULT_ARCHIVE_LIMITS,
    ArchiveLimits,
    EntryProblem,
    ZipEntryError,
    ZipRef,
    ZipSource,
    mb,
    shown_entry,
)
from grader.safe_text import record_name

__all__ = ["ClassUploads", "NotebookRef", "Upload", "read_class"]

log = logging.getLogger(__name__)

Upload = tuple[str, "bytes | Path"]  # (its name as given, its bytes or the file to read)
Keep = Callable[[str, bytes], None]  # (sha256, bytes) of each notebook that can be graded


@dataclass(frozen=True, slots=True)
class NotebookRef:
    """A notebook to grade, named and hashed; its bytes are read when it is graded. The
    fields are ``SubmissionFile``'s, with ``sha256`` and ``size`` in place of the bytes."""

    name: str
    sha256: str
    size: int
    student_id: str = ""
    display_name: str = ""
    archive: str = ""
    entry: str = ""
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Origin:
    upload: int  # index in ClassUploads._sources
    ref: ZipRef | None  # the entry of a ZIP; None: the upload is the notebook


class ClassUploads:
    """A class's uploads, open while its notebooks are graded: ``refs`` (in upload order)
    and ``problems`` (the files that cannot be graded, and why); ``read`` gives a
    notebook's bytes again. Close it (or use ``with``) to close the ZIPs."""

    def __init__(self, limits: ArchiveLimits, notebook_limits: NotebookLimits) -> None:
        self.limits, self.notebook_limits = limits, notebook_limits
        self.refs: list[NotebookRef] = []
        self.problems: list[InputProblem] = []
        self._sources: list[ZipSource | bytes | Path | None] = []  # by upload; None: refused
        self._origins: dict[str, _Origin] = {}

    def read(self, ref: NotebookRef) -> bytes:
        """``ref``'s bytes, read again from its upload. Raises ``ArchiveError`` (an
        ``InputError``) naming the notebook when it cannot be read or is not what was read
        before."""
        origin = self._origins.get(ref.name)
        if origin is None:
            raise ArchiveError(ref.name, "not one of this class's notebooks")
        data = self._bytes(origin, ref.name)
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise ArchiveError(ref.name, "its content changed since it was read; grade the "
                                         "upload again")
        return data

    def _bytes(self, origin: _Origin, label: str) -> bytes:
        source = self._sources[origin.upload]
        assert source is not None  # a refused upload gives no notebook
        if isinstance(source, ZipSource):
            assert origin.ref is not None
            return source.read(origin.ref)
        if isinstance(source, bytes):
            return source
        data = _read_file(source, label, self.notebook_limits.max_bytes)
        if isinstance(data, str):
            raise ArchiveError(label, data)
        return data

    def close(self) -> None:
        for source in self._sources:
            if isinstance(source, ZipSource):
                source.close()

    def __enter__(self) -> ClassUploads:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_class(
    uploads: Sequence[Upload],
    keep: Keep | None = None,
    limits: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
    notebook_limits: NotebookLimits = DEFAULT_NOTEBOOK_LIMITS,
    *,
    classroom_prefix: str | None = None,
) -> ClassUploads:
    """Every notebook of ``uploads`` (.ipynb and .zip, as bytes or paths), read one at a
    time: each one that can be graded is handed to ``keep`` and becomes a ``NotebookRef``;
    each that cannot is an ``InputProblem`` naming the upload and the entry."""
    cls = ClassUploads(limits, notebook_limits)
    try:
        _read(cls, uploads, keep, classroom_prefix)
    except BaseException:  # the ZIPs opened so far are closed (a store that fails, ...)
        cls.close()
        raise
    log.info("read %d notebooks, %d problems", len(cls.refs), len(cls.problems))
    return cls


def _read(cls: ClassUploads, uploads: Sequence[Upload], keep: Keep | None,
          classroom_prefix: str | None) -> None:
    """``read_class``'s work: list every upload, then read each notebook in turn."""
    notebook_limits = cls.notebook_limits
    found: list[tuple[SubmissionFile, _Origin]] = []
    owned: dict[int, list[InputProblem]] = {}  # problems of each ZIP, until it is read
    for index, (upload_name, data) in enumerate(uploads):
        source, listed, problems = _list_upload(cls, upload_name, data, classroom_prefix)
        cls._sources.append(source)
        found += [(sub, _Origin(index, ref)) for sub, ref in listed]
        owned[index] = problems
    subs = _unique([sub for sub, _ in found])
    valid: list[tuple[SubmissionFile, str, int]] = []
    refused: set[int] = set()  # uploads refused whole while being read
    for sub, (_, origin) in zip(subs, found, strict=True):
        if origin.upload in refused:
            continue
        try:
            data = cls._bytes(origin, sub.name)
        except ArchiveError as exc:
            if origin.ref is None or isinstance(exc, ZipEntryError):  # this notebook only
                owned[origin.upload].append(InputProblem(exc.file, exc.reason, sub.archive,
                                                         sub.entry))
            else:  # the upload expanded past its budget: its headers lied, refused whole
                refused.add(origin.upload)
                owned[origin.upload] = [InputProblem(exc.file, exc.reason, sub.archive)]
            continue
        checked = _checked(sub, data, notebook_limits)
        if isinstance(checked, InputProblem):
            owned[origin.upload].append(checked)
            continue
        sha256 = hashlib.sha256(data).hexdigest()
        if keep is not None:
            keep(sha256, data)
        valid.append((checked, sha256, len(data)))
        cls._origins[checked.name] = origin
    valid = [v for v in valid if cls._origins[v[0].name].upload not in refused]
    noted = _shared_ids([sub for sub, _, _ in valid])  # ids given by several notebooks
    for sub, (_, sha256, size) in zip(noted, valid, strict=True):
        for note in sub.notes:
            log.warning("%s: %s", sub.name, note)
        cls.refs.append(NotebookRef(sub.name, sha256, size, sub.student_id, sub.display_name,
                                    sub.archive, sub.entry, sub.notes))
    cls.problems = [p for index in sorted(owned) for p in owned[index]]


def _checked(sub: SubmissionFile, data: bytes, limits: NotebookLimits
             ) -> SubmissionFile | InputProblem:
    """``sub`` with a note on text that had to be replaced, or why it cannot be graded."""
    try:
        loaded = load_checked(data, sub.name, limits)
    except NotebookError as exc:
        return InputProblem(exc.file, exc.reason, sub.archive, sub.entry)
    text = loaded.repairs.describe()
    return replace(sub, notes=(*sub.notes, f"text: {text}")) if text else sub


_Listed = list[tuple[SubmissionFile, ZipRef | None]]


def _list_upload(cls: ClassUploads, upload_name: str, data: bytes | Path, prefix: str | None
                 ) -> tuple[ZipSource | bytes | Path | None, _Listed, list[InputProblem]]:
    """One upload: where its notebooks are read from (None: nowhere, it is refused), its
    notebooks, not read yet (their ``SubmissionFile`` without bytes), and its problems."""
    label = _upload_label(upload_name)
    given = record_name(upload_name)
    is_zip = upload_name.lower().endswith(".zip")
    if isinstance(data, Path):
        suffix = data.suffix.lower()
        if suffix not in (".ipynb", ".zip"):
            kind = "a folder" if data.is_dir() else "not a notebook (.ipynb) or a ZIP"
            return None, [], [InputProblem(label, kind, "", given)]
        cap = cls.limits.max_total_bytes if suffix == ".zip" else cls.notebook_limits.max_bytes
        if isinstance(why := _openable(data, cap), str):
            return None, [], [InputProblem(label, why, "", given)]
        is_zip = suffix == ".zip"
    elif not upload_name.lower().endswith((".zip", ".ipynb")):
        return None, [], [InputProblem(label, "not a notebook (.ipynb) or a ZIP", "", given)]
    if not is_zip:
        return data, [(_loose(upload_name, label, b""), None)], []
    entry_problems: list[EntryProblem] = []
    try:
        source = ZipSource(data, label, cls.limits, cls.notebook_limits)
        try:
            refs, skipped = source.list(entry_problems)
        except BaseException:
            source.close()
            raise
    except OSError as exc:
        return None, [], [InputProblem(label, f"cannot read it: {exc.strerror or exc}", "", given)]
    except ArchiveError as exc:
        return None, [], [InputProblem(exc.file, exc.reason, given)]
    problems = [InputProblem(f"{label}/{shown_entry(p.raw)}", p.reason, given,
                             record_name(p.raw)) for p in entry_problems]
    if not refs and not entry_problems:
        problems.append(InputProblem(label, _empty(skipped), given))
    subs = _from_refs(upload_name, label, refs, prefix)
    return source, list(zip(subs, refs, strict=True)), problems


def _from_refs(upload_name: str, label: str, refs: Sequence[ZipRef], prefix: str | None
               ) -> list[SubmissionFile]:
    """As ``archive._from_zip``, from entries listed but not read (no bytes)."""
    ids = student_ids([r.path for r in refs], prefix)
    out = []
    for r, (sid, name) in zip(refs, ids, strict=True):
        shown = shown_entry(r.raw)
        notes = (*r.notes, *_renamed(r.raw.replace("\\", "/"), shown))
        out.append(SubmissionFile(f"{label}/{shown}", b"", _shown_id(sid, r.path),
                                  _shown_id(name, r.path), record_name(upload_name),
                                  record_name(r.raw), notes))
    return out


def _openable(path: Path, cap: int) -> str | None:
    """Why ``path`` cannot be read (or is larger than ``cap``), or None."""
    try:
        with path.open("rb"):
            size = path.stat().st_size
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    return f"the file is larger than {mb(cap)}" if size > cap else None


def _read_file(path: Path, label: str, cap: int) -> bytes | str:
    """A notebook file's bytes (at most ``cap``), or why not."""
    try:
        with path.open("rb") as fh:
            data = fh.read(cap + 1)
    except OSError as exc:
        return f"cannot read it: {exc.strerror or exc}"
    return f"the file is larger than {mb(cap)}" if len(data) > cap else data
