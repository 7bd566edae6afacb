"""No text or file name from a student crashes a batch: lone surrogates, NUL and other
controls anywhere in a notebook, hostile file and ZIP entry names, odd archives.

The end-to-end tests run the real CLI (``--json --db --out``) over the bundled
retail-sales assignment and check every writer: stdout, SQLite, the export files.
"""

from __future__ import annotations

import copy
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
import unicodedata
import zipfile
from pathlib import Path
from typing import Any

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_notebook

from grader.exports.formats import feedback_stems, feedback_zip, write_exports
from grader.notebooks.archive import expand_inputs, expand_uploads
from grader.notebooks.load import load_checked
from grader.safe_text import (
    STEM_LIMIT,
    clean_text,
    file_stem,
    record_name,
    scrub,
    shown_name,
    utf8,
)
from grader.store.database import Store
from grader.store.serialize import report_from_json, report_to_json
from grader.types import CheckResult, CriterionResult, Evidence, Flag, GradeReport

ROOT = Path(__file__).resolve().parents[1]
RETAIL = ROOT / "examples" / "retail-sales"
SUBS = RETAIL / "submissions"
UNSAFE = {"Cc", "Cf", "Cs", "Co", "Zl", "Zp"}
HOSTILE_NAMES = [
    "line\nbreak.ipynb", "tab\there\rcr.ipynb", "stu\u202egpj.ipynb", "a\u200bb\u200dc\ufeff.ipynb",
    "\u2066x\u2069\u2028y.ipynb", "\x1b[31mansi.ipynb", "x" * 300 + ".ipynb", "学生-Zoë.ipynb",
    "CON.ipynb", "..-dots.ipynb",
]


def unsafe_chars(text: str) -> list[str]:
    return [ch for ch in text if unicodedata.category(ch) in UNSAFE]


def dumps(nb: Any) -> bytes:
    """JSON as Jupyter writes it, lone surrogates as \\udXXX escapes (valid JSON)."""
    return json.dumps(nb, indent=1, ensure_ascii=True).encode("ascii")


def surrogates_everywhere(nb: dict[str, Any]) -> dict[str, Any]:
    """``nb`` with lone surrogates, NUL and C0 controls in every kind of place."""
    nb = copy.deepcopy(nb)
    md = next(c for c in nb["cells"] if c["cell_type"] == "markdown")
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    md["source"] = "".join(md["source"]) + "\n\nanswer \ud800 with\ttab\x00 and \x07bell"
    md["id"] = "md\ud800"
    md["metadata"]["tags\udfff"] = ["t\udc00"]
    code["source"] = "# note \udfff\n" + "".join(code["source"])
    code["outputs"] = [
        {"output_type": "stream", "name": "stdout", "text": "out \ud83d\n\x1b[31mred\x1b[0m\n"},
        {"output_type": "execute_result", "execution_count": 1, "metadata": {"\ud800": 1},
         "data": {"text/plain": "\udc00 value", "text/html": "<b>\ud800</b>"}},
        {"output_type": "error", "ename": "Err\ud800", "evalue": "bad \x00",
         "traceback": ["tb \udfff"]},
    ]
    spec = nb["metadata"]["kernelspec"]
    nb["metadata"]["kernelspec"] = spec | {"display_name": "K \udbff", "name": spec["name"]}
    nb["metadata"]["authors"] = [{"name": "\ud800"}]
    nb["metadata"]["\ud801key"] = "v\x01"
    return nb


def retail(stem: str = "complete") -> dict[str, Any]:
    return json.loads((SUBS / f"{stem}.ipynb").read_text(encoding="utf-8"))


def zip_bytes(members: list[tuple[str | zipfile.ZipInfo, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def small_notebook(source: str = "x = 1") -> bytes:
    return nbformat.writes(new_notebook(cells=[new_code_cell(source, id="c1")])).encode()


# --- the one sanitiser -----------------------------------------------------------------


def test_clean_text_replaces_surrogates_and_controls_and_keeps_layout() -> None:
    text, surrogates, controls = clean_text("a\ud800b\x00c\x07\td\ne\rf\x0cg\x1b[0m\udfff")
    assert text == "a\ufffdb\ufffdc\ufffd\td\ne\rf\x0cg\x1b[0m\ufffd"
    assert (surrogates, controls) == (2, 2)
    assert clean_text("plain\ttext\n") == ("plain\ttext\n", 0, 0)


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_shown_names_are_safe_short_and_say_what_was_there(name: str) -> None:
    shown = shown_name(name)
    assert not unsafe_chars(shown)
    assert len(shown) <= 160
    assert shown == shown_name(shown)  # showing twice changes nothing
    for ch in unsafe_chars(name):
        assert (f"\\u{ord(ch):04x}" in shown) or (f"\\x{ord(ch):02x}" in shown) or (
            ch in "\n\t\r" and repr(ch)[1:-1] in shown)


def test_long_names_stay_distinct_and_surrogateescape_bytes_are_shown_as_bytes() -> None:
    a, b = "x" * 300 + "a.ipynb", "x" * 300 + "b.ipynb"
    assert shown_name(a) != shown_name(b)
    assert shown_name(a).endswith("a.ipynb")
    raw = os.fsdecode(b"student\xff.ipynb")  # how Linux hands us a non-UTF-8 file name
    assert shown_name(raw) == record_name(raw) == "student\\xff.ipynb"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=()), max_size=400))
def test_any_text_becomes_safe_names_and_bytes(text: str) -> None:
    shown = shown_name(text)
    assert not unsafe_chars(shown)
    assert len(shown) <= 160
    stem = file_stem(text)
    assert re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]*", stem)
    assert len(stem.encode()) <= STEM_LIMIT
    assert stem.split(".")[0].upper() not in {"CON", "PRN", "AUX", "NUL", "COM1", "LPT1"}
    assert utf8(text).decode("utf-8") == scrub(text)
    record_name(text).encode("utf-8")


# --- notebooks: made safe once, where the text enters ------------------------------------


def test_surrogates_everywhere_in_a_notebook_are_replaced_and_recorded() -> None:
    loaded = load_checked(dumps(surrogates_everywhere(retail())), "hostile.ipynb")
    nb, node = loaded.notebook, loaded.node
    nbformat.writes(node).encode("utf-8")  # the node the kernel gets encodes
    text = json.dumps([c.source + c.output_text for c in nb.cells], ensure_ascii=False)
    assert not re.search("[\ud800-\udfff\x00-\x08]", text)
    md = next(c for c in nb.cells if "answer" in c.source and "\ufffd" in c.source)
    assert "answer \ufffd with\ttab\ufffd and \ufffdbell" in md.source  # tabs, newlines kept
    code = next(c for c in nb.cells if c.source.startswith("# note \ufffd"))
    assert "\x1b" not in code.output_text
    assert "red" in code.output_text
    assert "\ufffd value" in code.output_text
    assert nb.kernel_name == "python3"
    assert node.metadata["kernelspec"]["display_name"] == "K \ufffd"
    repairs = loaded.repairs
    assert repairs.surrogates == 14
    assert repairs.controls == 4
    assert "the notebook metadata" in repairs.places
    assert len(repairs.cells) == 2
    flag = loaded.flag()
    assert flag is not None
    assert flag.code == "text_replaced"
    assert "lone UTF-16 surrogates" in flag.message
    assert "U+FFFD" in flag.message
    assert {e.cell_id for e in flag.evidence} == {md.id, code.id}
    assert load_checked(dumps(retail()), "clean.ipynb").flag() is None


def test_nbformat3_cells_are_cleaned_and_counted_in_order() -> None:
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": "n\ud800"},
          "worksheets": [{"cells": [
              {"cell_type": "code", "input": "x = 1", "language": "python", "outputs": []},
              {"cell_type": "markdown", "source": "a \udfff"}]}]}
    loaded = load_checked(dumps(v3), "old.ipynb")
    assert loaded.notebook.cells[1].source == "a \ufffd"
    assert loaded.repairs.cells == (1,)
    assert loaded.repairs.count == 2


def test_a_hostile_name_given_to_the_loader_is_shown_escaped() -> None:
    nb = load_checked(small_notebook(), "stu\u202egpj\n.ipynb").notebook
    assert nb.name == "stu\\u202egpj\\n.ipynb"


# --- every writer survives what gets through ---------------------------------------------


def hostile_report(name: str, text: str = "value \ud800\x00") -> GradeReport:
    evidence = (Evidence("c\udfff", 1, text),)
    check = CheckResult("load", "assigns", "orders\ud800", 0.5, 1.0, "L1", f"found {text}",
                        evidence)
    crit = CriterionResult("load", "Load", "code", 4, 2.0, checks=[check],
                           model_notes={"strength": f"nice {text}"})
    return GradeReport(f"{name}.ipynb", "sha", "demo", "v1", "graded", 2.0, 4,
                       student_id=name, display_name=name, criteria=[crit],
                       flags=[Flag("stale_outputs", f"msg {text}", evidence)])


def test_the_store_keeps_a_report_with_surrogates_as_replacement_characters() -> None:
    report = hostile_report("student\ud800042")
    assert "\ud800" not in report_to_json(report)
    assert report_from_json(report_to_json(report)).criteria[0].checks[0].message == (
        "found value \ufffd\x00")
    with Store(":memory:") as s:
        a = s.upsert_assignment("hw1", "Homework 1", "python", "/srv/hw1")
        rv = s.add_rubric_version(a, "v1", "{}")
        sub = s.add_submission(a, "sha", report.file, report.student_id, report.display_name)
        stored = s.get_report(s.save_grade(sub, rv, report))
        assert stored.student_id == "student\ufffd042"
        assert stored.criteria[0].checks[0].evidence[0].text == "value \ufffd\x00"
        assert s.find_grade(a, "sha", "v1", report.student_id) is not None


def test_exports_survive_surrogates_and_hostile_names(tmp_path: Path) -> None:
    names = [*(n.removesuffix(".ipynb") for n in HOSTILE_NAMES), "Student042", "student042",
             "y" * 300 + "1", "y" * 300 + "2", "\ud800"]
    reports = [hostile_report(n) for n in names]
    written = write_exports(reports, tmp_path, "HW \ud800 1")
    feedback = [p for p in written if p.parent.name == "feedback"]
    assert len(feedback) == 3 * len(reports)  # a PDF, Markdown and HTML letter each
    for p in written:
        assert len(p.name.encode()) <= 100
        assert not unsafe_chars(p.name)
        data = p.read_bytes()
        if p.suffix == ".pdf":
            assert data.startswith(b"%PDF-")
        else:
            assert data.decode("utf-8")  # valid UTF-8, nothing lost to a crash
    stems = feedback_stems(reports)
    assert len({s.casefold() for s in stems}) == len(stems)
    with zipfile.ZipFile(io.BytesIO(feedback_zip(reports, "HW \ud800 1"))) as z:
        assert sorted(z.namelist()) == sorted(f"feedback/{s}.{ext}" for s in stems
                                              for ext in ("pdf", "md", "html"))
        assert "\ufffd" in z.read(f"feedback/{stems[0]}.html").decode("utf-8")
    rows = json.loads((tmp_path / "grades.json").read_text(encoding="utf-8"))
    assert rows[-1]["student_id"] == "\ufffd"


# --- archives and names ------------------------------------------------------------------


def patched(data: bytes, old: bytes, new: bytes) -> bytes:
    assert len(old) == len(new)
    assert data.count(old) == 2
    return data.replace(old, new)


def test_hostile_entry_names_are_graded_with_safe_unique_labels() -> None:
    nb = small_notebook()
    members: list[tuple[str | zipfile.ZipInfo, bytes]] = [(f"e{i:02d}-{n}", nb)
                                                          for i, n in enumerate(HOSTILE_NAMES)]
    members += [("Student042.ipynb", nb), ("student042.ipynb", nb), ("caf_.ipynb", nb)]
    data = patched(zip_bytes(members), b"caf_.ipynb", b"caf\x82.ipynb")  # cp437, no flag
    files, problems = expand_uploads([("class \u202ehw.zip", data)])
    assert problems == []
    assert len(files) == len(members) == len({f.name for f in files})
    for f in files:
        assert not unsafe_chars(f.name + f.student_id + f.display_name)
        assert f.name.startswith("class \\u202ehw.zip/")
        assert f.archive == "class \u202ehw.zip"
    by_entry = {f.entry: f for f in files}
    assert set(by_entry) >= {f"e{i:02d}-{n}" for i, n in enumerate(HOSTILE_NAMES)}
    assert "café.ipynb" in by_entry
    rtl = by_entry["e02-stu\u202egpj.ipynb"]
    assert rtl.name.endswith("e02-stu\\u202egpj.ipynb")
    assert any("\\u202e" in n for n in rtl.notes)
    long = by_entry["e06-" + "x" * 300 + ".ipynb"]
    assert any("300" in n or "cut" in n for n in long.notes)
    assert len(long.name) < 300
    twins = [f for f in files if f.student_id.casefold() == "student042"]
    assert len(twins) == 2
    assert all("same student id" in " ".join(f.notes) for f in twins)


def test_entry_names_wrongly_marked_utf8_are_read_as_cp437_with_a_note() -> None:
    data = zip_bytes([("caf\u00e9.ipynb", small_notebook()), ("ok.ipynb", small_notebook())])
    data = patched(data, b"caf\xc3\xa9", b"caf\xe9!")
    files, problems = expand_uploads([("tools.zip", data)])
    assert problems == []
    assert [f.entry for f in files] == ["cafΘ!.ipynb", "ok.ipynb"]
    assert "marks the name" in files[0].notes[0]
    assert not files[1].notes


def test_duplicate_entries_are_both_graded_distinctly_and_named() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("sub/submission.ipynb", small_notebook("a = 1"))
        with pytest.warns(UserWarning, match="Duplicate name"):
            z.writestr("sub/submission.ipynb", small_notebook("b = 2"))
    files, problems = expand_uploads([("dups.zip", buf.getvalue())])
    assert problems == []
    assert [f.name for f in files] == ["dups.zip/sub/submission.ipynb",
                                       "dups.zip/sub/submission (2).ipynb"]
    assert [f.entry for f in files] == ["sub/submission.ipynb"] * 2
    for f in files:
        assert any("duplicate name" in n and "'dups.zip'" in n for n in f.notes)


def test_every_archive_outcome_names_the_archive_and_the_entry() -> None:
    nb = small_notebook()
    inner = zip_bytes([("deep.ipynb", nb)])
    data = zip_bytes([
        ("good.ipynb", nb), ("../slip.ipynb", nb), ("/abs.ipynb", nb),
        ("middle.zip", zip_bytes([("inner.zip", inner), ("mid.ipynb", nb)])),
        ("big.ipynb", b"{" + b" " * 5_000_000 + b"}"), ("data.csv", b"a,b\n"),
    ])
    link = zipfile.ZipInfo("link.ipynb")
    link.external_attr = 0o120777 << 16
    locked = patched(zip_bytes([("locked.ipynb", nb)]), b"\x00\x00\x08\x00", b"\x01\x00\x08\x00")
    uploads = [("class.zip", data), ("empty.zip", zip_bytes([])), ("links.zip",
               zip_bytes([(link, b"/etc/passwd"), ("ok.ipynb", nb)])), ("locked.zip", locked),
               ("data-only.zip", zip_bytes([("notes.txt", b"hi")]))]
    files, problems = expand_uploads(uploads)
    assert [f.name for f in files] == ["class.zip/good.ipynb", "class.zip/middle.zip/mid.ipynb",
                                       "links.zip/ok.ipynb"]
    got = {(p.archive, p.entry): p.reason for p in problems}
    assert set(got) == {
        ("class.zip", "../slip.ipynb"), ("class.zip", "/abs.ipynb"),
        ("class.zip", "middle.zip/inner.zip/deep.ipynb"), ("class.zip", "big.ipynb"),
        ("empty.zip", ""), ("links.zip", "link.ipynb"), ("locked.zip", "locked.ipynb"),
        ("data-only.zip", ""),
    }
    assert "zip-slip" in got[("class.zip", "../slip.ipynb")]
    assert "nested more than 1 level" in got[("class.zip", "middle.zip/inner.zip/deep.ipynb")]
    assert "zip bomb suspected" in got[("class.zip", "big.ipynb")]
    assert got[("empty.zip", "")] == "no notebook (.ipynb) in this archive: it is empty"
    assert "'notes.txt'" in got[("data-only.zip", "")]
    assert "symbolic link" in got[("links.zip", "link.ipynb")]
    assert "encrypted" in got[("locked.zip", "locked.ipynb")]
    assert all(p.file.startswith(p.archive) for p in problems)


def test_a_loose_notebook_with_a_hostile_name(tmp_path: Path) -> None:
    raw = os.fsdecode(b"stu\xe2\x80\xaedent\n042\xff.ipynb")  # U+202E, a newline, a bad byte
    path = tmp_path / raw
    path.write_bytes(small_notebook())
    files, problems = expand_inputs([path, tmp_path / "missing.ipynb"])
    (f,) = files
    assert f.name == f"{tmp_path}/stu\\u202edent\\n042\\xff.ipynb"
    assert f.student_id == "stu\\u202edent\\n042\\xff"
    assert f.entry == f"{tmp_path}/stu\u202edent\n042\\xff.ipynb"
    assert f.entry.encode("utf-8")
    assert f.archive == ""
    (p,) = problems
    assert p.file == str(tmp_path / "missing.ipynb")
    assert "cannot read it" in p.reason
    uploaded, _ = expand_uploads([("stu\u202egpj.ipynb", small_notebook())])
    assert (uploaded[0].name, uploaded[0].entry) == ("stu\\u202egpj.ipynb", "stu\u202egpj.ipynb")


# --- the command line, end to end ----------------------------------------------------------


def run_cli(*args: str | bytes) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def hostile_batch(tmp_path: Path) -> list[Path]:
    surr = tmp_path / "student041.ipynb"
    surr.write_bytes(dumps(surrogates_everywhere(retail())))
    name = os.fsdecode(b"stu\xe2\x80\xaedent\n042\t\xff" + b"y" * 200 + b".ipynb")
    hostile = tmp_path / name
    hostile.write_bytes((SUBS / "complete.ipynb").read_bytes())
    plain = tmp_path / "student043.ipynb"
    plain.write_bytes((SUBS / "partial.ipynb").read_bytes())
    return [surr, hostile, plain]


def check_batch(tmp_path: Path, proc: subprocess.CompletedProcess[str], paths: list[Path]) -> None:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    rows = json.loads(proc.stdout)
    assert len(rows) == 3
    assert all(r["status"] == "graded" for r in rows)
    for r in rows:
        assert not unsafe_chars(r["file"])
        assert not unsafe_chars(r["student_id"])
    by_entry = {r["entry"]: r for r in rows}
    hostile = by_entry[record_name(str(paths[1]))]  # the original name, kept for the record
    assert "\u202e" in hostile["entry"]
    assert "\n" in hostile["entry"]
    assert "\\u202e" in hostile["file"]
    assert "\\n" in hostile["file"]
    assert "\\xff" in hostile["file"]
    assert any("control, bidi" in n for n in hostile["notes"])
    surr = by_entry[str(paths[0])]
    assert any("lone UTF-16 surrogate" in n for n in surr["notes"])
    with sqlite3.connect(tmp_path / "grades.db") as c:
        stored = [r[0] for r in c.execute("SELECT s.file FROM grades g JOIN submissions s "
                                          "ON s.id = g.submission_id")]
    c.close()
    assert sorted(stored) == sorted(r["file"] for r in rows)
    out = tmp_path / "out"
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"canvas.csv", "grades.csv", "grades.json"}
    letters = [p for p in files if p.parent.name == "feedback"]
    assert len(letters) == 9  # a PDF, a Markdown and an HTML letter for each of three
    assert len({p.name.casefold() for p in files}) == len(files)
    for p in files:
        assert len(p.name.encode()) <= 100
        assert not unsafe_chars(p.name)
    exported = json.loads((out / "grades.json").read_text(encoding="utf-8"))
    assert sorted(e["file"] for e in exported) == sorted(r["file"] for r in rows)


def test_cli_grades_a_hostile_batch_and_every_writer_survives(tmp_path: Path) -> None:
    paths = hostile_batch(tmp_path)
    proc = run_cli("grade", str(RETAIL), *map(os.fsencode, paths), "--json", "--no-llm",
                   "--no-exec", "--out", str(tmp_path / "out"), "--db", str(tmp_path / "grades.db"))
    check_batch(tmp_path, proc, paths)


@pytest.mark.slow
def test_cli_executes_a_hostile_batch(tmp_path: Path) -> None:
    """The cleaned notebook is what the kernel gets: a surrogate in code runs as U+FFFD."""
    paths = hostile_batch(tmp_path)
    proc = run_cli("grade", str(RETAIL), *map(os.fsencode, paths), "--json", "--no-llm",
                   "--out", str(tmp_path / "out"), "--db", str(tmp_path / "grades.db"),
                   "--workers", "1")
    check_batch(tmp_path, proc, paths)
    rows = json.loads(proc.stdout)
    assert not any("stored outputs" in n for r in rows for n in r["notes"]), proc.stderr


def test_cli_names_archives_entries_and_paths_in_every_outcome(tmp_path: Path) -> None:
    nb = (SUBS / "complete.ipynb").read_bytes()
    bundle = tmp_path / "class.zip"
    bundle.write_bytes(zip_bytes([("student042/hw.ipynb", nb), ("../evil.ipynb", nb),
                                  ("deep.zip", zip_bytes([("inner.zip", zip_bytes([
                                      ("student044.ipynb", nb)]))]))]))
    empty = tmp_path / "empty.zip"
    empty.write_bytes(zip_bytes([]))
    missing = tmp_path / "nowhere" / "student045.ipynb"
    proc = run_cli("grade", str(RETAIL), str(bundle), str(empty), str(missing), "--json",
                   "--no-llm", "--no-exec")
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    rows = {(r["archive"], r["entry"]): r for r in json.loads(proc.stdout)}
    assert rows[(str(bundle), "student042/hw.ipynb")]["status"] == "graded"
    assert rows[(str(bundle), "student042/hw.ipynb")]["file"] == f"{bundle}/student042/hw.ipynb"
    assert "zip-slip" in rows[(str(bundle), "../evil.ipynb")]["error"]
    assert "nested" in rows[(str(bundle), "deep.zip/inner.zip/student044.ipynb")]["error"]
    assert "no notebook" in rows[(str(empty), "")]["error"]
    assert rows[("", str(missing))]["file"] == str(missing)
    assert f"{missing}: cannot read it" in proc.stderr


def test_cli_path_errors_name_the_path(tmp_path: Path) -> None:
    blocker = tmp_path / "taken"
    blocker.write_text("a file where --out wants a folder")
    proc = run_cli("grade", str(RETAIL), str(SUBS / "complete.ipynb"), "--no-llm", "--no-exec",
                   "--out", str(blocker / "out"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"error: {blocker / 'out'}" in proc.stderr
    out = tmp_path / "exports"
    (out / "feedback").parent.mkdir()
    (out / "feedback").write_text("a file where the feedback folder goes")
    proc = run_cli("grade", str(RETAIL), str(SUBS / "complete.ipynb"), "--no-llm", "--no-exec",
                   "--json", "--out", str(out))
    assert proc.returncode == 2
    assert [r["status"] for r in json.loads(proc.stdout)] == ["graded"]  # grades not lost
    assert f"cannot write the exports: {out / 'feedback'}: File exists" in proc.stderr
    dest = tmp_path / "no" / "such" / "r.json"
    seed = ROOT.parent / "shared/course-r/strings-dates/rubric.seed-format.json"
    proc = run_cli("import-rubric", str(seed), str(dest))
    assert proc.returncode == 2
    assert f"error: {dest}: No such file or directory" in proc.stderr
