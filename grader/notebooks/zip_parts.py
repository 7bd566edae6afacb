"""The checks of one ZIP, entry by entry: what its directory declares, and its bytes read
with a cap. Part of ``grader.notebooks.zips`` (which says what is refused and why); kept
apart so that the reader stays about walking an archive.
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
from typing import BinaryIO

from grader.errors import ArchiveError
from grader.notebooks.load import NotebookLimits

log = logging.getLogger(__name__)

MB = 1_000_000
CHUNK = 1 << 16
_IGNORED_PARTS = {"__MACOSX", ".ipynb_checkpoints"}
_DRIVE_RE = re.compile(r"^[A-Za-z]:")
# Damaged or unsupported entry data (ValueError: a bad offset; RuntimeError: a password).
READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError)
READ_ERRORS += (NotImplementedError, RuntimeError)
OPEN_ERRORS = (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError)
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


class EntryError(Exception):
    """One entry cannot be used; the archive as a whole is fine."""


class Exhausted(ArchiveError):
    """The upload expanded past its budget while being read: its headers lied."""


@dataclass
class Budget:
    remaining: int  # uncompressed bytes still allowed across the whole upload


def mb(n: float) -> str:
    return f"{n / MB:.1f} MB"


def wanted(raw: str) -> bool:
    """Whether an entry is read at all: a notebook or a ZIP (by its name)."""
    return raw.lower().endswith((".ipynb", ".zip"))


def ignored(path: str) -> bool:
    """macOS and Jupyter leftovers, hidden folders (.git), editor files: not submissions."""
    *folders, file = path.split("/")
    return (bool(_IGNORED_PARTS.intersection(folders)) or any(f[:1] == "." for f in folders)
            or not file or file.startswith(("._", ".#", "~$")))


def open_zip(data: bytes | BinaryIO, name: str) -> tuple[zipfile.ZipFile, set[str]]:
    """The open archive (``data``: its bytes, or a seekable file read as needed), and the
    names that were marked UTF-8 but read as cp437 (the only case that reads a file whole)."""
    try:
        return zipfile.ZipFile(io.BytesIO(data) if isinstance(data, bytes) else data), set()
    except UnicodeDecodeError as exc:
        if not isinstance(data, bytes):
            try:
                data.seek(0)
                data = data.read()
            except OSError as again:
                raise ArchiveError(name, f"cannot read it ({again})") from again
        fixed, names = unmark_bad_utf8(data)
        if not names:
            raise ArchiveError(name, f"not a valid ZIP archive ({exc})") from exc
        log.warning("%s: %d entry names marked UTF-8 are not; read as cp437", name, len(names))
        try:
            return zipfile.ZipFile(io.BytesIO(fixed)), names
        except (*OPEN_ERRORS, UnicodeDecodeError) as again:
            raise ArchiveError(name, f"not a valid ZIP archive ({again})") from again
    except OPEN_ERRORS as exc:
        raise ArchiveError(name, f"not a valid ZIP archive ({exc})") from exc


def unmark_bad_utf8(data: bytes) -> tuple[bytes, set[str]]:
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


def check_directory(count: int, notebooks: list[zipfile.ZipInfo], name: str,
                     limits: ArchiveLimits, budget: Budget) -> None:
    """Zip-bomb checks on what the central directory declares for the whole archive."""
    if count > limits.max_members:
        reason = f"{count:,} entries (the limit is {limits.max_members:,})"
        raise ArchiveError(name, f"zip bomb suspected: {reason}")
    total = sum(i.file_size for i in notebooks)
    if total > budget.remaining:
        reason = f"it would expand to {mb(total)} (the limit is {mb(limits.max_total_bytes)})"
        raise ArchiveError(name, f"zip bomb suspected: {reason}")


def safe_path(raw: str) -> str:
    """The entry's path with '/' separators, or EntryError for a zip-slip name."""
    path = raw.replace("\\", "/")
    unsafe = path.startswith("/") or _DRIVE_RE.match(path) or "\x00" in path
    normal = posixpath.normpath(path) if path else path
    if unsafe or normal == ".." or normal.startswith("../"):
        raise EntryError(f"unsafe entry path {raw!r} (zip-slip): not read")
    return normal if normal != "." else ""


def ratio_error(size: int, info: zipfile.ZipInfo, limits: ArchiveLimits) -> str:
    if size > limits.ratio_min_bytes and size > limits.max_ratio * max(info.compress_size, 1):
        ratio = size / max(info.compress_size, 1)
        return (f"zip bomb suspected: {info.orig_filename!r} expands {ratio:,.0f} times "
                f"(the limit is {limits.max_ratio:,.0f}): not read")
    return ""


def check_entry(info: zipfile.ZipInfo, limits: ArchiveLimits,
                 notebook_limits: NotebookLimits) -> None:
    """What the directory says of one entry: a link, encrypted, too large, a bomb."""
    if stat.S_ISLNK(info.external_attr >> 16):
        raise EntryError("a symbolic link, not a file: not read")
    if info.flag_bits & 0x1:
        raise EntryError("the entry is encrypted: not read")
    if reason := ratio_error(info.file_size, info, limits):
        raise EntryError(reason)
    if not info.orig_filename.lower().endswith(".zip") and (
        info.file_size > notebook_limits.max_bytes
    ):
        cap = mb(notebook_limits.max_bytes)
        raise EntryError(f"too large ({mb(info.file_size)}; the limit is {cap})")


def read_entry(zf: zipfile.ZipFile, info: zipfile.ZipInfo, label: str,
                limits: ArchiveLimits, budget: Budget, cap: int) -> bytes:
    """The entry's bytes, read in chunks and stopped as soon as a limit is passed."""
    if info.file_size > cap:
        raise EntryError(f"too large ({mb(info.file_size)}; the limit is {mb(cap)})")
    chunks: list[bytes] = []
    size = 0
    try:
        with zf.open(info) as fh:
            while chunk := fh.read(CHUNK):
                size += len(chunk)
                if size > info.file_size:
                    raise EntryError("zip bomb suspected: larger than its header says")
                if size > budget.remaining:
                    over = mb(limits.max_total_bytes)
                    reason = f"zip bomb suspected: the archive expands past {over}"
                    raise Exhausted(label, reason)
                if reason := ratio_error(size, info, limits):
                    raise EntryError(reason)
                chunks.append(chunk)
    except READ_ERRORS as exc:
        raise EntryError(f"cannot read it from the ZIP ({exc})") from exc
    finally:
        budget.remaining -= size
    return b"".join(chunks)
