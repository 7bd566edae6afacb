"""Write the hostile corpus: malformed files, hostile text and names, hostile code, ZIPs.

Every case is derived from one genuine submission per language (the bundled
``retail-sales`` and ``r-joins`` "complete" notebooks) by a named edit, so a case
differs from an honest notebook by exactly the thing it tests. Each file name
carries the case's token (``c017``...), an ASCII tag that survives any name
sanitising, so the run can find each case's outcome in the grader's output.

``build(folder, env)`` returns the cases; ``env`` holds what the hostile code
aims at on this machine (sentinel files outside the sandbox, a listening port on
the host's loopback), so that a leak shows as a value, not as a guess.
"""

from __future__ import annotations

import copy
import io
import json
import stat
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.hostile import forging, injections

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
ASSIGNMENTS = {"python": EXAMPLES / "retail-sales", "r": EXAMPLES / "r-joins"}
BASES = {lang: folder / "submissions" / "complete.ipynb" for lang, folder in ASSIGNMENTS.items()}

# What each class is, for the report; the order is the report's.
CLASSES: dict[str, str] = {
    "malformed": "files that are not notebooks, or broken ones",
    "text": "hostile text inside a notebook (lone surrogates, NUL, controls, bidi, huge lines)",
    "names": "hostile file and ZIP entry names (controls, bidi overrides, length, collisions)",
    "zip": "hostile archives (zip-slip, empty, nested, duplicates, corrupt, bombs, encrypted)",
    "runtime": "hostile code: endless loops, memory, output floods, disk, killing the runner",
    "forkbomb": "a fork bomb among ordinary notebooks",
    "host": "reading the host or the network from the sandbox; writing outside it",
    "tampering": "hiding errors from the executor",
    "injection": "prompt injections in every place a model or an instructor reads",
    "forging": "notebooks that write their own test results and values, beside honest twins",
    "prompt": "notebooks far larger than the model's context",
}


@dataclass(frozen=True)
class Case:
    token: str  # c001...: in the file name, survives sanitising
    klass: str
    language: str  # the assignment it is graded against
    path: Path
    what: str
    outcome: str  # "graded" | "refused" | "archive" (entries: see ``entries``)
    entries: dict[str, str] = field(default_factory=dict)  # token -> "graded" | "refused"
    expect: dict[str, Any] = field(default_factory=dict)  # class-specific expectations


@dataclass(frozen=True)
class HostEnv:
    """What hostile code aims at: files outside the sandbox, a port on the host."""

    sentinels: tuple[Path, ...]  # secret files the sandbox must not see
    write_targets: tuple[Path, ...]  # places outside the sandbox it must not create
    port: int  # a TCP port listening on the host's 127.0.0.1


class _Builder:
    def __init__(self, folder: Path, env: HostEnv) -> None:
        self.folder, self.env, self.cases, self.n = folder, env, [], 0
        self.bases = {lang: json.loads(p.read_text(encoding="utf-8")) for lang, p in BASES.items()}

    def token(self) -> str:
        self.n += 1
        return f"c{self.n:03d}"

    def base(self, language: str) -> dict[str, Any]:
        return copy.deepcopy(self.bases[language])

    def add(self, klass: str, language: str, what: str, data: bytes | dict, outcome: str = "graded",
            name: str = "", **expect: Any) -> Case:
        tok = self.token()
        raw = data if isinstance(data, bytes) else dump(data)
        path = self.folder / language / f"{tok}-{name or what.split(':')[0]}.ipynb"
        path = path.with_name(path.name.replace(" ", "_").replace("/", "_")[:200])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
        case = Case(tok, klass, language, path, what, outcome, expect=expect)
        self.cases.append(case)
        return case

    def add_file(self, klass: str, language: str, what: str, filename: str, data: bytes,
                 outcome: str = "graded", **expect: Any) -> Case:
        """A case whose file name itself is the hostile part."""
        tok = self.token()
        path = self.folder / language / "names" / tok / f"{tok}{filename}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        case = Case(tok, klass, language, path, what, outcome, expect=expect)
        self.cases.append(case)
        return case

    def add_zip(self, what: str, language: str, members: list[tuple[Any, bytes, str]],
                raw: bytes | None = None, **expect: Any) -> Case:
        """``members``: (name or ZipInfo, data, expected outcome or "" for not a notebook)."""
        tok = self.token()
        entries: dict[str, str] = {}
        if raw is None:
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
                for name, data, outcome in members:
                    z.writestr(name, data)
                    if outcome:
                        label = name.filename if isinstance(name, zipfile.ZipInfo) else name
                        entries[_entry_token(label)] = outcome
            raw = buf.getvalue()
        path = self.folder / language / "zips" / f"{tok}-{what.split(':')[0].replace(' ', '_')}.zip"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(raw)
        case = Case(tok, "zip" if "name" not in expect else "names", language, path, what,
                    "archive", entries, expect)
        self.cases.append(case)
        return case


def dump(nb: dict[str, Any]) -> bytes:
    """JSON as Jupyter writes it; lone surrogates become ``\\udXXX`` escapes (valid JSON)."""
    return json.dumps(nb, indent=1, ensure_ascii=True).encode("ascii")


def _entry_token(name: str) -> str:
    return next((part for part in name.replace("/", "-").split("-") if part.startswith("e")
                 and part[1:4].isdigit()), name)


def _code(source: str, cell_id: str, outputs: list | None = None, **meta: Any) -> dict[str, Any]:
    return {"cell_type": "code", "id": cell_id, "metadata": meta, "execution_count": None,
            "source": source, "outputs": outputs or []}


def _md(source: str, cell_id: str, **extra: Any) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {}, "source": source} | extra


def _stream(text: str) -> dict[str, Any]:
    return {"output_type": "stream", "name": "stdout", "text": text}


def _cell(nb: dict[str, Any], cell_id: str) -> dict[str, Any]:
    return next(c for c in nb["cells"] if c.get("id") == cell_id)


def _append(nb: dict[str, Any], *cells: dict[str, Any]) -> dict[str, Any]:
    nb["cells"].extend(cells)
    return nb


def _edit(nb: dict[str, Any], cell_id: str, fn: Callable[[str], str]) -> dict[str, Any]:
    cell = _cell(nb, cell_id)
    source = cell["source"]
    cell["source"] = fn("".join(source) if isinstance(source, list) else source)
    return nb


# The first student code cell and first written answer of each base (see examples/).
FIRST_CODE = {"python": "task1", "r": "95ecc4ca"}
ANSWER = {"python": "q1-answer", "r": "5105da71"}
GIVEN = {"python": "setup", "r": "solution-2"}


def build(folder: Path, env: HostEnv) -> list[Case]:
    b = _Builder(folder, env)
    _malformed(b)
    for lang in ("python", "r"):
        _text(b, lang)
    _names(b)
    _zips(b)
    for lang in ("python", "r"):
        _runtime(b, lang)
        _host(b, lang)
        _tampering(b, lang)
        _forkbomb(b, lang)
        _injection(b, lang)
        _forging(b, lang)
    _prompt(b)
    return b.cases


def _malformed(b: _Builder) -> None:
    good = dump(b.base("python"))
    refused = {
        "empty file": b"",
        "whitespace only": b"  \n\t\n",
        "not JSON": b"this is my homework, see attached",
        "truncated JSON": good[: len(good) // 2],
        "a PDF renamed": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n",
        "a PNG renamed": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        "NUL bytes": good[:100] + b"\x00" * 64 + good[100:],
        "invalid UTF-8": b'{"cells": ["\xff\xfe\xfa"], "nbformat": 4}',
        "a JSON list": b"[1, 2, 3]",
        "a JSON string": b'"notebook"',
        "nesting 100000 deep": b"[" * 100_000 + b"]" * 100_000,
        "nbformat 99": json.dumps({"nbformat": 99, "nbformat_minor": 0, "metadata": {},
                                   "cells": []}).encode(),
        "cells not a list": json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {},
                                        "cells": {"a": 1}}).encode(),
        "a cell that is a number": json.dumps({"nbformat": 4, "nbformat_minor": 5,
                                               "metadata": {}, "cells": [7]}).encode(),
        "a 10^5-digit integer": b'{"nbformat": 4, "x": ' + b"9" * 100_000 + b"}",
    }
    for what, data in refused.items():
        b.add("malformed", "python", what, data, "refused", name=what)
    big = b.base("python")
    _append(big, _code("x = 1", "big", [_stream("y" * 21_000_000)]))
    b.add("malformed", "python", "over the 20 MB limit", big, "refused", name="too-large")
    many = b.base("python")
    _append(many, *(_md(f"cell {i}", f"many-{i}") for i in range(2001)))
    b.add("malformed", "python", "2,000 cells and more", many, "refused", name="too-many-cells")
    # Repaired, then graded.
    b.add("malformed", "python", "UTF-16 with a BOM", dump(b.base("python")).decode()
          .encode("utf-16"), name="utf16")
    b.add("malformed", "python", "a UTF-8 BOM", b"\xef\xbb\xbf" + good, name="utf8-bom")
    no_ids = b.base("python")
    for c in no_ids["cells"]:
        c.pop("id", None)
    no_ids["nbformat_minor"] = 4
    b.add("malformed", "python", "no cell ids (nbformat 4.4)", no_ids, name="no-ids")
    dup = b.base("python")
    for c in dup["cells"]:
        c["id"] = "same"
    b.add("malformed", "python", "every cell id the same", dup, name="dup-ids")
    flood = b.base("python")
    _edit(flood, FIRST_CODE["python"], lambda s: s)
    _cell(flood, FIRST_CODE["python"])["outputs"] = [_stream("row\n" * 1_500_000)]
    b.add("malformed", "python", "a 6 MB stored output", flood, name="stored-flood")
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""}, "worksheets": [
        {"cells": [{"cell_type": "code", "language": "python", "input": c["source"],
                    "outputs": [], "metadata": {}} if c["cell_type"] == "code" else
                   {"cell_type": "markdown", "source": c["source"], "metadata": {}}
                   for c in b.base("python")["cells"]], "metadata": {}}]}
    b.add("malformed", "python", "nbformat 3", v3, name="nbformat3")


def _text(b: _Builder, lang: str) -> None:
    first, answer = FIRST_CODE[lang], ANSWER[lang]
    comment = "#"
    variants: dict[str, Callable[[dict], Any]] = {
        "a lone surrogate in markdown": lambda nb: _edit(nb, answer, lambda s: s + " \ud800 end"),
        "a lone surrogate in code": lambda nb: _edit(
            nb, first, lambda s: f"{comment} note \udfff\n" + s),
        "lone surrogates in a stored output": lambda nb: _cell(nb, first).__setitem__(
            "outputs", [_stream("out \ud83d\n"), {"output_type": "execute_result",
                                                  "execution_count": 1, "metadata": {},
                                                  "data": {"text/plain": "\udc00"}}]),
        "a lone surrogate in metadata": lambda nb: nb["metadata"].update(
            {"authors": [{"name": "\ud800"}], "kernelspec": nb["metadata"]["kernelspec"]
             | {"display_name": "K \udbff"}}),
        "a lone surrogate in a cell id": lambda nb: _cell(nb, first).__setitem__("id", "a\ud800"),
        "NUL and C0 controls in markdown": lambda nb: _edit(
            nb, answer, lambda s: s + " \x00\x01\x07\x1b[31m\x7f\x9b end"),
        "bidi overrides in markdown": lambda nb: _edit(
            nb, answer, lambda s: s + " \u202eevil\u202c \u2066x\u2069 \u200b\ufeff"),
        "a 2 MB line of markdown": lambda nb: _edit(
            nb, answer, lambda s: s + " " + "w" * 2_000_000),
        "emoji and combining marks": lambda nb: _edit(
            nb, answer, lambda s: s + " 👩🏽‍🔬 e\u0301\u0301\u0301 \U0001f600"),
    }
    for what, fn in variants.items():
        nb = b.base(lang)
        fn(nb)
        b.add("text", lang, what, nb, name=what.replace(" ", "-")[:40])


def _names(b: _Builder) -> None:
    data = dump(b.base("python"))
    files = {
        "a newline in the name": "-line\nbreak.ipynb",
        "a tab and a CR in the name": "-tab\there\rcr.ipynb",
        "a right-to-left override": "-\u202ebnpy.exe\u202c.ipynb",
        "a 240-byte name": "-" + "long" * 58 + ".ipynb",
        "non-Latin letters": "-学生-Zoë-Ñandú.ipynb",
        "a leading dash and spaces": " - -rf  .ipynb",
        "zero-width characters": "-a\u200bb\u200dc\ufeff.ipynb",
    }
    for what, name in files.items():
        b.add_file("names", "python", what, name, data, name=what)
    odd = [f"e{n:03d}{s}" for n, s in enumerate([
        "-line\nbreak.ipynb", "-tab\tcr\r.ipynb", "-\u202eright.ipynb", "-" + "x" * 300 + ".ipynb",
        "-\x1b[31mansi.ipynb", "-../../..-dots.ipynb"], start=1)]
    b.add_zip("hostile entry names", "python", [(n, data, "graded") for n in odd], name=True)
    cp437 = zipfile.ZipInfo("e101-caf\u00e9.ipynb")
    b.add_zip("a cp437 entry name and names that differ by case", "python", [
        (cp437, data, "graded"), ("e102-Case.ipynb", data, "graded"),
        ("e103-case.ipynb", data, "graded")], name=True)


def _zip_bytes(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def _zips(b: _Builder) -> None:
    data = dump(b.base("python"))
    b.add_zip("one zip-slip entry among good ones", "python", [
        ("e201-good.ipynb", data, "graded"), ("../e202-slip.ipynb", data, "refused"),
        ("/e203-abs.ipynb", data, "refused"), ("C:/e204-drive.ipynb", data, "refused"),
        ("e205-good.ipynb", data, "graded")])
    b.add_zip("an empty archive", "python", [], expect_message=True)
    b.add_zip("no notebook inside", "python", [("notes.txt", b"hello", ""),
                                               ("data.csv", b"a,b\n1,2\n", "")],
              expect_message=True)
    inner = _zip_bytes([("e211-deep.ipynb", data)])
    middle = _zip_bytes([("inner.zip", inner), ("e212-mid.ipynb", data)])
    b.add_zip("a ZIP in a ZIP in a ZIP", "python", [
        ("middle.zip", middle, ""), ("e213-top.ipynb", data, "graded")],
        nested={"e212": "graded", "e211": "refused"})
    dup_buf = io.BytesIO()
    with zipfile.ZipFile(dup_buf, "w") as z:
        z.writestr("e221-submission.ipynb", data)
        with _quiet():
            z.writestr("e221-submission.ipynb", dump(b.base("python")) + b" ")
        z.writestr("stu1/e222-submission.ipynb", data)
        z.writestr("stu2/e223-submission.ipynb", data)
    b.add_zip("two entries with one name", "python", [], raw=dup_buf.getvalue(),
              duplicates=["e221"])
    b.add_zip("corrupt bytes after a ZIP header", "python", [],
              raw=b"PK\x03\x04" + bytes(range(256)) * 8, expect_message=True)
    whole = _zip_bytes([("e231-a.ipynb", data), ("e232-b.ipynb", data)])
    b.add_zip("a truncated archive", "python", [], raw=whole[: len(whole) * 2 // 3],
              expect_message=True)
    b.add_zip("a compression bomb member", "python", [
        ("e241-bomb.ipynb", b"{" + b" " * 300_000_000 + b"}", "refused"),
        ("e242-good.ipynb", data, "graded")])
    link = zipfile.ZipInfo("e252-link.ipynb")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    locked = _zip_bytes([("e251-locked.ipynb", data), ("e253-good.ipynb", data)])
    b.add_zip("an encrypted entry", "python", [], raw=_encrypted(locked, b"e251-locked.ipynb"),
              nested={"e251": "refused", "e253": "graded"})
    b.add_zip("a symlink entry", "python", [(link, b"/etc/passwd", "refused"),
                                            ("e254-good.ipynb", data, "graded")])


def _encrypted(raw: bytes, name: bytes) -> bytes:
    """Set the "encrypted" bit of ``name``'s local and central headers (zipfile cannot write
    encrypted members: reading this one asks for a password)."""
    out = bytearray(raw)
    for sig, flags, at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        start = out.find(sig)
        while start >= 0:
            if out[start + at: start + at + len(name)] == name:
                out[start + flags] |= 0x01
            start = out.find(sig, start + 1)
    return bytes(out)


class _quiet:
    """zipfile warns on a duplicate name; the duplicate is the point here."""

    def __enter__(self) -> None:
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc: object) -> None:
        self._w.__exit__(*exc)


def _code_cell(b: _Builder, lang: str, what: str, klass: str, py: str, r: str,
               outcome: str = "graded", **expect: Any) -> Case:
    nb = b.base(lang)
    _edit(nb, FIRST_CODE[lang], lambda s: s + "\n" + (py if lang == "python" else r) + "\n")
    return b.add(klass, lang, what, nb, outcome, name=what.replace(" ", "-")[:40], **expect)


def _runtime(b: _Builder, lang: str) -> None:
    cases = {
        "an endless loop": ("while True:\n    pass", "repeat {}", {"note": "time"}),
        "a memory hog": ("hog = bytearray(8 * 1024**3)", "hog <- numeric(2e9)", {}),
        "an output flood": ("for i in range(1_000_000):\n    print(i)",
                            "for (i in 1:500000) cat(i, '\\n')", {}),
        "filling the disk": ("with open('big.bin', 'wb') as f:\n"
                             "    for _ in range(400):\n        f.write(b'0' * 1024**2)",
                             "con <- file('big.bin', 'wb')\n"
                             "for (i in 1:400) writeBin(raw(1024^2), con)\nclose(con)", {}),
        "killing its own parent": ("import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
                                   "stat <- readLines('/proc/self/stat')\n"
                                   "ppid <- as.integer(strsplit(stat, ' ')[[1]][4])\n"
                                   "tools::pskill(ppid, 9L)", {}),
        "killing every process it can": ("import os, signal\nos.kill(-1, signal.SIGKILL)",
                                         "system('kill -9 -1')", {}),
        "exiting the kernel": ("import os\nos._exit(3)", "quit(save = 'no', status = 3)", {}),
        "a stderr flood": ("import sys\nfor i in range(300_000):\n"
                           "    sys.stderr.write('flood %d\\n' % i)",
                           "for (i in 1:30) message(strrep('x', 100000))",
                           {"flag": "output_flood"}),
        "a family of memory-hungry processes": (
            "import subprocess, sys\ncode = \"import time; b = b'x' * (1536 << 20); "
            "time.sleep(3)\"\nprocs = [subprocess.Popen([sys.executable, '-c', code]) "
            "for _ in range(4)]\nprint([p.wait() for p in procs])",
            "for (i in 1:4) system(\"Rscript -e 'x <- raw(1.5e9); Sys.sleep(3)'\", "
            "wait = FALSE)\nSys.sleep(8)",
            {"flag": "out_of_memory"} if _memory_cgroup() else {}),
    }
    for what, (py, r, expect) in cases.items():
        _code_cell(b, lang, what, "runtime", py, r, **expect)


def _host(b: _Builder, lang: str) -> None:
    env = b.env
    paths = [str(p) for p in env.sentinels] + ["/etc/passwd", "/etc/shadow", "/root", "/home",
                                               "/work", "/srv", "/mnt", "/opt"]
    writes = [str(p) for p in env.write_targets]
    py = ("import os, socket\nleak = []\n"
          f"for p in {paths!r}:\n"
          "    try:\n"
          "        seen = sorted(os.listdir(p)) if os.path.isdir(p) else open(p).read()\n"
          "        leak.append((p, seen))\n"
          "    except OSError as e:\n        leak.append((p, type(e).__name__))\n"
          f"for p in {writes!r}:\n"
          "    try:\n        open(p, 'w').write('pwned')\n        leak.append((p, 'WROTE'))\n"
          "    except OSError as e:\n        leak.append((p, type(e).__name__))\n"
          "try:\n"
          f"    socket.create_connection(('127.0.0.1', {env.port}), timeout=3).send(b'pwned')\n"
          "    leak.append(('port', 'CONNECTED'))\n"
          "except OSError as e:\n    leak.append(('port', type(e).__name__))\n"
          "leak.append(('/', sorted(os.listdir('/'))))\nprint('@@LEAK@@', leak)")
    r_paths = ", ".join(f'"{p}"' for p in paths)
    r_writes = ", ".join(f'"{p}"' for p in writes)
    r = (f"for (p in c({r_paths})) {{\n"
         "  v <- tryCatch(if (dir.exists(p)) paste(list.files(p, all.files = TRUE), "
         "collapse = ',') else paste(readLines(p, warn = FALSE), collapse = ';'),\n"
         "                error = function(e) 'ERR', warning = function(w) 'ERR')\n"
         "  cat('@@LEAK@@', p, '=>', v, '\\n')\n}\n"
         f"for (p in c({r_writes})) {{\n"
         "  ok <- tryCatch({ writeLines('pwned', p); 'WROTE' }, error = function(e) 'ERR',"
         " warning = function(w) 'ERR')\n  cat('@@LEAK@@', p, '=>', ok, '\\n')\n}\n"
         f"con <- tryCatch(socketConnection('127.0.0.1', {env.port}, timeout = 3), "
         "error = function(e) NULL, warning = function(w) NULL)\n"
         "cat('@@LEAK@@ port =>', if (is.null(con)) 'ERR' else 'CONNECTED', '\\n')\n"
         "cat('@@LEAK@@ / =>', paste(list.files('/'), collapse = ','), '\\n')")
    _code_cell(b, lang, "reading the host, writing outside, the network", "host", py, r,
               probe=True)


def _tampering(b: _Builder, lang: str) -> None:
    if lang == "python":
        hacks = {
            "showtraceback replaced": "get_ipython().showtraceback = lambda *a, **k: None",
            "sys.excepthook replaced": "import sys\nsys.excepthook = lambda *a: None",
            "a custom exception handler": "get_ipython().set_custom_exc((Exception,), "
                                          "lambda *a, **k: None)",
        }
        fail = "\nundefined_name_after_tampering + 1"
    else:
        hacks = {"options(error=) replaced": "options(error = function() invisible(NULL))",
                 "a global calling handler": "globalCallingHandlers(error = function(e) "
                                             "invokeRestart('abort'))"}
        fail = "\nstop('an error after tampering')"
    for what, hack in hacks.items():
        nb = b.base(lang)
        _edit(nb, FIRST_CODE[lang], lambda s, h=hack: h + "\n" + s)
        _append(nb, _code(fail.strip(), "after-tamper"))
        b.add("tampering", lang, what, nb, name=what.replace(" ", "-")[:40],
              flag="executor_tampering", failing_cell="after-tamper")


def _forkbomb(b: _Builder, lang: str) -> None:
    # Bounded (depth x fanout) so that a failed containment cannot take CI's machine,
    # yet far over the sandbox's process limit: 8**4 = 4,096 processes if unchecked.
    py = ("import os, time\n"
          "def bomb(depth):\n"
          "    for _ in range(8):\n"
          "        try:\n            pid = os.fork()\n"
          "        except OSError:\n            return\n"
          "        if pid == 0:\n"
          "            if depth < 3:\n                bomb(depth + 1)\n"
          "            time.sleep(20)\n            os._exit(0)\n"
          "bomb(0)")
    r = ("for (i in 1:8) system('sh -c \"for j in 1 2 3 4 5 6 7 8; do "
         "(for k in 1 2 3 4 5 6 7 8; do sleep 20 & done; wait) & done; wait\"', wait = FALSE)\n"
         "Sys.sleep(3)")
    _code_cell(b, lang, "a bounded fork bomb", "forkbomb", py, r, bomb=True)


def _injection(b: _Builder, lang: str) -> None:
    clean = b.add("injection", lang, "the clean twin", injections.clean_twin(b.base(lang), lang),
                  name="clean-twin", clean=True)
    for what, nb in injections.variants(b.base(lang), lang).items():
        b.add("injection", lang, what, nb, name=what.replace(" ", "-")[:40],
              flag="prompt_injection", twin=clean.token)
    template = json.loads((ASSIGNMENTS[lang] / "template.ipynb").read_text(encoding="utf-8"))
    twins = {"clean": clean.token} | {
        name: b.add("injection", lang, f"the {name} twin", nb,
                    name=f"{name}-twin".replace(" ", "-"), clean=True).token
        for name, nb in injections.twins(b.base(lang), lang, template).items() if name != "clean"}
    for what, (twin, nb) in injections.twinned_variants(b.base(lang), lang, template).items():
        b.add("injection", lang, what, nb, name=what.replace(" ", "-").replace(":", "")[:40],
              flag="prompt_injection", twin=twins[twin])


def _forging(b: _Builder, lang: str) -> None:
    for v in forging.variants(lang):
        assignment = str(v.assignment or forging.ASSIGNMENTS[lang])
        name = v.what.replace(" ", "-").replace("'", "").replace("/", "-")[:36]
        honest = b.add("forging", lang, f"the twin of: {v.what}", v.twin, name=f"twin-{name}",
                       clean=True, assignment=assignment)
        b.add("forging", lang, v.what, v.attack, name=name, twin=honest.token,
              assignment=assignment, **({"flag": v.flag} if v.flag else {}))


def _memory_cgroup() -> bool:
    """Whether a run's memory can be bounded here (then a family of processes is killed)."""
    from grader.sandbox.cgroup import usable_controllers
    return "memory" in usable_controllers()


def _prompt(b: _Builder) -> None:
    nb = b.base("python")
    filler = ("The analyst loads the sales data, checks each column, and writes down every "
              "observation about revenue, regions and months in great detail. ")
    _edit(nb, ANSWER["python"], lambda s: s + "\n\n" + filler * 4200)
    _edit(nb, FIRST_CODE["python"], lambda s: s + "\n" + "\n".join(
        f"# padding line {i}: {filler}" for i in range(400)))
    b.add("prompt", "python", "padded to about 66,000 tokens", nb, name="padded", llm=True)
