"""Reading one uploaded ZIP safely, in memory: the notebooks in it, and what was refused.

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
a cap, never trusting the declared size.

Entry names marked UTF-8 that are not (some zip tools) are read as cp437, as
unmarked names are, with a note, rather than refusing the archive.

``count_notebooks`` says how many notebooks a ZIP holds from its central directory
alone (and those of the ZIPs in it), so that a batch too large to grade unasked
(``grader.service.sizing.batch_size``) is refused before anything is read.
"""

from __future__ import annotations

import io
import logging
import posixpath
import re
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass

from grader.errors import ArchiveError
from grader.notebooks.load import DEFAULT_LIMITS as DEFAULT_NOTEBOOK_LIMITS
from grader.notebooks.load import NotebookLimits
from grader.safe_text import shown_name

__all__ = ["DEFAULT_ARCHIVE_LIMITS", "ArchiveLimits", "EntryProblem", "ZipEntry", "count_notebooks",
           "mb", "shown_entry", "zip_entries"]

log = logging.getLogger(__name__)

MB = 1_000_000
_CHUNK = 1 << 16
_IGNORED_PARTS = {"__MACOSX", ".ipynb_checkpoints"}
_DRIVE_RE = re.compile(r"^[A-Za-z]:")
# Damaged or unsupported entry data (ValueError: a bad offset; RuntimeError: a password).
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError)
_READ_ERRORS += (NotImplementedError, RuntimeError)
_OPEN_ERRORS = (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError)
_UTF8_FLAG = 0x800


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


@dataclass(frozen=True, slots=True)
class ZipEntry:
    """A notebook found in the archive."""

    path: str  # normalised, '/'-separated; nested ZIPs give 'inner.zip/x.ipynb'
    raw: str  # the entry's name as the archive gives it ('inner.zip/x.ipynb' when nested)
    data: bytes
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class EntryProblem:
    """An entry that was not read; ``raw`` is its name as the archive gives it."""

    raw: str
    reason: str


class _EntryError(Exception):
    """One entry cannot be used; the archive as a whole is fine."""


class _Exhausted(ArchiveError):
    """The upload expanded past its budget while being read: its headers lied."""


@dataclass
class _Budget:
    remaining: int  # uncompressed bytes still allowed across the whole upload


def mb(n: float) -> str:
    return f"{n / MB:.1f} MB"


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
        self.problems, self.budget = problems, _Budget(limits.max_total_bytes)
        self.skipped: list[str] = []

    def label(self, raw: str) -> str:
        return f"{self.name}/{shown_entry(raw)}"

    def problem(self, raw: str, reason: str, cause: Exception | None = None) -> None:
        """Record an entry that is not read; strict mode raises instead."""
        if self.problems is None:
            raise ArchiveError(self.label(raw), reason) from cause
        log.info("%s: not reading %r: %s", self.name, raw, reason)
        self.problems.append(EntryProblem(raw, reason))

    def read(self, data: bytes, name: str, prefix: str, depth: int) -> list[ZipEntry]:
        """The notebooks of one ZIP: the upload (``prefix`` '') or a ZIP in it (``prefix``
        its raw name and '/'); ``name`` labels errors of the ZIP as a whole."""
        zf, repaired = _open(data, name)
        entries: list[ZipEntry] = []
        with zf:
            infos = zf.infolist()
            wanted = [i for i in infos if _wanted(i.filename)]
            _check_directory(len(infos), wanted, name, self.limits, self.budget)
            for info in infos:
                raw = info.orig_filename
                full = f"{prefix}{raw}"
                if not _wanted(raw):
                    if raw and not raw.endswith(("/", "\\")):
                        self.skipped.append(full)
                    continue
                try:
                    path = _safe_path(raw)
                    if _ignored(path):
                        continue
                    _check_entry(info, self.limits, self.notebook_limits)
                except _EntryError as exc:
                    self.problem(full, str(exc), exc)
                    continue
                notes = (f"the archive marks the name {raw!r} as UTF-8 but it is not: read "
                         "as cp437",) if raw in repaired else ()
                entries.extend(self._entry(zf, info, full, f"{prefix}{path}", depth, notes))
        return entries

    def _entry(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo, full: str, path: str,
               depth: int, notes: tuple[str, ...]) -> list[ZipEntry]:
        nested = path.lower().endswith(".zip")
        cap = self.budget.remaining if nested else self.notebook_limits.max_bytes
        try:  # an ArchiveError here (a bomb found while reading) refuses the whole upload
            data = _read_entry(zf, info, self.label(full), self.limits, self.budget, cap)
        except _EntryError as exc:
            self.problem(full, str(exc), exc)
            return []
        if not nested:
            return [ZipEntry(path, full, data, notes)]
        if depth >= self.limits.max_depth:
            return self._too_deep(data, full)
        try:  # a bad nested ZIP costs only itself
            return self.read(data, self.label(full), f"{full}/", depth + 1)
        except _Exhausted:
            raise
        except ArchiveError as exc:
            self.problem(full, exc.reason, exc)
            return []

    def _too_deep(self, data: bytes, full: str) -> list[ZipEntry]:
        """Name the notebooks of a ZIP nested too deep to be read (without reading them)."""
        levels = self.limits.max_depth
        why = (f"inside a ZIP nested more than {levels} level{'s' if levels != 1 else ''} "
               "deep: not read (unzip it and upload its notebooks)")
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as inner:
                names = [n for n in inner.namelist() if _wanted(n)]
        except (*_OPEN_ERRORS, UnicodeDecodeError) as exc:
            self.problem(full, f"a ZIP nested too deep, and not a valid one ({exc})", exc)
            return []
        for inner_name in names:
            self.problem(f"{full}/{inner_name}", why)
        if not names:
            log.info("%s: %s is nested too deep and holds no notebook", self.name, full)
        return []


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
            if not _wanted(path) or _ignored(path):
                continue
            if path.lower().endswith(".ipynb"):
                found += 1
            elif depth < limits.max_depth and info.file_size <= limits.max_total_bytes:
                try:
                    with zipfile.ZipFile(io.BytesIO(zf.read(info))) as inner:
                        found += count(inner, depth + 1)
                except _READ_ERRORS:  # reading it for grading names the problem
                    continue
        return found

    zf, _ = _open(data, name)
    with zf:
        return count(zf, 0)


def shown_entry(raw: str) -> str:
    """An entry's name as shown in labels: '/' separators, unsafe characters escaped."""
    return shown_name(raw.replace("\\", "/"))


def _wanted(raw: str) -> bool:
    """Whether an entry is read at all: a notebook or a ZIP (by its name)."""
    return raw.lower().endswith((".ipynb", ".zip"))


def _ignored(path: str) -> bool:
    """macOS and Jupyter leftovers, hidden folders (.git), editor files: not submissions."""
    *folders, file = path.split("/")
    return (bool(_IGNORED_PARTS.intersection(folders)) or any(f[:1] == "." for f in folders)
            or not file or file.startswith(("._", ".#", "~$")))


def _open(data: bytes, name: str) -> tuple[zipfile.ZipFile, set[str]]:
    """The open archive, and the names that were marked UTF-8 but read as cp437."""
    try:
        return zipfile.ZipFile(io.BytesIO(data)), set()
    except UnicodeDecodeError as exc:
        fixed, names = _unmark_bad_utf8(data)
        if not names:
            raise ArchiveError(name, f"not a valid ZIP archive ({exc})") from exc
        log.warning("%s: %d entry names marked UTF-8 are not; read as cp437", name, len(names))
        try:
            return zipfile.ZipFile(io.BytesIO(fixed)), names
        except (*_OPEN_ERRORS, UnicodeDecodeError) as again:
            raise ArchiveError(name, f"not a valid ZIP archive ({again})") from again
    except _OPEN_ERRORS as exc:
        raise ArchiveError(name, f"not a valid ZIP archive ({exc})") from exc


def _unmark_bad_utf8(data: bytes) -> tuple[bytes, set[str]]:
    """``data`` with the UTF-8 flag cleared on entries whose names are not UTF-8 (central
    directory and local header), and those names as cp437 reads them. Plain ZIPs only
    (ZIP64 and damaged directories are left as they are: nothing is returned)."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 65535))
    if end < 0 or end + 22 > len(data):
        return data, set()
    cd_size, cd_offset = struct.unpack_from("<II", data, end + 12)
    start = end - cd_size  # where the directory is, whatever was prepended to the archive
    shift = start - cd_offset
    if 0xFFFFFFFF in (cd_size, cd_offset) or start < 0 or shift < 0:
        return data, set()
    out, names, pos = bytearray(data), set(), start
    while pos + 46 <= end and data[pos : pos + 4] == b"PK\x01\x02":
        flags, = struct.unpack_from("<H", data, pos + 8)
        n_name, n_extra, n_comment = struct.unpack_from("<HHH", data, pos + 28)
        local, = struct.unpack_from("<I", data, pos + 42)
        raw = data[pos + 46 : pos + 46 + n_name]
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            if flags & _UTF8_FLAG:
                struct.pack_into("<H", out, pos + 8, flags & ~_UTF8_FLAG)
                head = local + shift
                if data[head : head + 4] == b"PK\x03\x04":
                    local_flags, = struct.unpack_from("<H", data, head + 6)
                    struct.pack_into("<H", out, head + 6, local_flags & ~_UTF8_FLAG)
                names.add(raw.decode("cp437"))
        pos += 46 + n_name + n_extra + n_comment
    return bytes(out), names


def _check_directory(count: int, wanted: list[zipfile.ZipInfo], name: str,
                     limits: ArchiveLimits, budget: _Budget) -> None:
    """Zip-bomb checks on what the central directory declares for the whole archive."""
    if count > limits.max_members:
        reason = f"{count:,} entries (the limit is {limits.max_members:,})"
        raise ArchiveError(name, f"zip bomb suspected: {reason}")
    total = sum(i.file_size for i in wanted)
    if total > budget.remaining:
        reason = f"it would expand to {mb(total)} (the limit is {mb(limits.max_total_bytes)})"
        raise ArchiveError(name, f"zip bomb suspected: {reason}")


def _safe_path(raw: str) -> str:
    """The entry's path with '/' separators, or _EntryError for a zip-slip name."""
    path = raw.replace("\\", "/")
    unsafe = path.startswith("/") or _DRIVE_RE.match(path) or "\x00" in path
    normal = posixpath.normpath(path) if path else path
    if unsafe or normal == ".." or normal.startswith("../"):
        raise _EntryError(f"unsafe entry path {raw!r} (zip-slip): not read")
    return normal if normal != "." else ""


def _ratio_error(size: int, info: zipfile.ZipInfo, limits: ArchiveLimits) -> str:
    if size > limits.ratio_min_bytes and size > limits.max_ratio * max(info.compress_size, 1):
        ratio = size / max(info.compress_size, 1)
        return (f"zip bomb suspected: {info.orig_filename!r} expands {ratio:,.0f} times "
                f"(the limit is {limits.max_ratio:,.0f}): not read")
    return ""


def _check_entry(info: zipfile.ZipInfo, limits: ArchiveLimits,
                 notebook_limits: NotebookLimits) -> None:
    """What the directory says of one entry: a link, encrypted, too large, a bomb."""
    if stat.S_ISLNK(info.external_attr >> 16):
        raise _EntryError("a symbolic link, not a file: not read")
    if info.flag_bits & 0x1:
        raise _EntryError("the entry is encrypted: not read")
    if reason := _ratio_error(info.file_size, info, limits):
        raise _EntryError(reason)
    if not info.orig_filename.lower().endswith(".zip") and (
        info.file_size > notebook_limits.max_bytes
    ):
        cap = mb(notebook_limits.max_bytes)
        raise _EntryError(f"too large ({mb(info.file_size)}; the limit is {cap})")


def _read_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, label: str,
                limits: ArchiveLimits, budget: _Budget, cap: int) -> bytes:
    """The entry's bytes, read in chunks and stopped as soon as a limit is passed."""
    if info.file_size > cap:
        raise _EntryError(f"too large ({mb(info.file_size)}; the limit is {mb(cap)})")
    chunks: list[bytes] = []
    size = 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(_CHUNK):
                size += len(chunk)
                if size > info.file_size:
                    raise _EntryError("zip bomb suspected: larger than its header says")
                if size > budget.remaining:
                    over = mb(limits.max_total_bytes)
                    reason = f"zip bomb suspected: the archive expands past {over}"
                    raise _Exhausted(label, reason)
                if reason := _ratio_error(size, info, limits):
                    raise _EntryError(reason)
                chunks.append(chunk)
    except _READ_ERRORS as exc:
        raise _EntryError(f"cannot read it from the ZIP ({exc})") from exc
    finally:
        budget.remaining -= size
    return b"".join(chunks)
