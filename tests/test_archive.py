"""grader.notebooks.archive: uploads and ZIPs into submissions, safely, with student ids."""

from __future__ import annotations

import io
import struct
import zipfile
from pathlib import Path

import nbformat
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from nbformat.v4 import new_code_cell, new_notebook

from grader.errors import ArchiveError
from grader.notebooks.archive import (
    ArchiveLimits,
    InputProblem,
    SubmissionFile,
    expand_inputs,
    expand_uploads,
    read_zip,
)


def notebook(source: str = "x = 1") -> bytes:
    return nbformat.writes(new_notebook(cells=[new_code_cell(source, id="c1")])).encode()


def make_zip(members: dict[str, bytes], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(zipfile.ZipInfo(name), data, compress_type=compression)
    return buf.getvalue()


def ids(files: list[SubmissionFile]) -> list[tuple[str, str, str]]:
    return [(f.name, f.student_id, f.display_name) for f in files]


def test_nested_per_student_folders() -> None:
    data = make_zip(
        {
            "student042/hw1.ipynb": notebook("a = 1"),
            "student043/work/hw1.ipynb": notebook("b = 2"),
            "student043/work/": b"",
        }
    )
    files = read_zip(data, "upload.zip")
    assert ids(files) == [
        ("upload.zip/student042/hw1.ipynb", "student042", "student042"),
        ("upload.zip/student043/work/hw1.ipynb", "student043", "student043"),
    ]
    assert files[0].data == notebook("a = 1")
    assert (files[1].archive, files[1].entry) == ("upload.zip", "student043/work/hw1.ipynb")


def test_shared_wrapper_folder_is_not_a_student() -> None:
    data = make_zip(
        {
            "hw1 submissions/student042.ipynb": notebook(),
            "hw1 submissions/student043.ipynb": notebook(),
        }
    )
    assert [f.student_id for f in read_zip(data, "upload.zip")] == ["student042", "student043"]


def test_canvas_names() -> None:
    data = make_zip(
        {
            "submissions/doejane_12345_67890_Assignment-1.ipynb": notebook(),
            "submissions/roejohn_LATE_23456_78901_hw1.ipynb": notebook(),
            "student042.ipynb": notebook(),
            "smithalex_34567_89012_project.zip": make_zip({"src/analysis.ipynb": notebook()}),
        }
    )
    assert ids(read_zip(data, "canvas.zip")) == [
        ("canvas.zip/submissions/doejane_12345_67890_Assignment-1.ipynb", "12345", "doejane"),
        ("canvas.zip/submissions/roejohn_LATE_23456_78901_hw1.ipynb", "23456", "roejohn"),
        ("canvas.zip/student042.ipynb", "student042", "student042"),
        ("canvas.zip/smithalex_34567_89012_project.zip/src/analysis.ipynb", "34567",
         "smithalex"),
    ]


def test_github_classroom_folders() -> None:
    data = make_zip(
        {
            "classroom-export/hw2-sales-octocat/analysis.ipynb": notebook(),
            "classroom-export/hw2-sales-octodog/notebooks/analysis.ipynb": notebook(),
            "classroom-export/hw2-sales-student042-main/analysis.ipynb": notebook(),
        }
    )
    assert [f.student_id for f in read_zip(data, "export.zip")] == [
        "octocat",
        "octodog",
        "student042",
    ]


def test_github_single_repo_and_explicit_prefix() -> None:
    lone = make_zip({"hw2-sales-octocat-main/analysis.ipynb": notebook()})
    assert [f.student_id for f in read_zip(lone, "repo.zip")] == ["octocat"]
    two = make_zip(
        {
            "hw2-sales-octo-cat/part1.ipynb": notebook(),
            "hw2-sales-octo-cat/part2.ipynb": notebook(),
        }
    )
    assert [f.student_id for f in read_zip(two, "r.zip")] == ["part1", "part2"]
    files = read_zip(two, "r.zip", classroom_prefix="hw2-sales-")
    assert [f.student_id for f in files] == ["octo-cat", "octo-cat"]


def test_skipped_and_ignored_members() -> None:
    data = make_zip(
        {
            "student042/hw1.ipynb": notebook(),
            "student042/data.csv": b"a,b\n1,2\n",
            "README.md": b"# readme",
            "__MACOSX/student042/._hw1.ipynb": b"\x00\x05\x16\x07junk",
            "student042/.ipynb_checkpoints/hw1-checkpoint.ipynb": notebook(),
            "student042/._hw1.ipynb": b"\x00\x05\x16\x07junk",
            "": b"a member without a name",
        }
    )
    files, problems = expand_uploads([("upload.zip", data), ("notes.txt", b"hi")])
    assert [f.name for f in files] == ["upload.zip/student042/hw1.ipynb"]
    assert problems == [
        InputProblem("notes.txt", "not a notebook (.ipynb) or a ZIP", "", "notes.txt")
    ]


def test_invalid_notebook_in_zip_is_a_problem_and_others_load(tmp_path: Path) -> None:
    upload = tmp_path / "upload.zip"
    upload.write_bytes(
        make_zip(
            {
                "student042.ipynb": notebook(),
                "student043.ipynb": b'{"cells": [oops',
                "student044.ipynb": notebook(),
            }
        )
    )
    files, problems = expand_inputs([upload])
    assert [f.student_id for f in files] == ["student042", "student044"]
    assert len(problems) == 1
    assert problems[0].file == f"{upload}/student043.ipynb"  # the path as given, the entry
    assert (problems[0].archive, problems[0].entry) == (str(upload), "student043.ipynb")
    assert "not JSON" in problems[0].reason


def test_loose_files_and_bad_paths(tmp_path: Path) -> None:
    good = tmp_path / "doejane_12345_67890_hw1.ipynb"
    good.write_bytes(notebook())
    plain = tmp_path / "student042.ipynb"
    plain.write_bytes(notebook())
    pdf = tmp_path / "essay.pdf"
    pdf.write_bytes(b"%PDF-1.7")
    renamed = tmp_path / "student043.ipynb"
    renamed.write_bytes(b"%PDF-1.7 binary")
    folder = tmp_path / "folder"
    folder.mkdir()
    files, problems = expand_inputs([good, tmp_path / "missing.ipynb", pdf, plain, folder, renamed])
    assert ids(files) == [  # named by their paths as given; ids from the file names
        (str(good), "12345", "doejane"),
        (str(plain), "student042", "student042"),
    ]
    reasons = {Path(p.file).name: p.reason for p in problems}
    assert set(reasons) == {"missing.ipynb", "essay.pdf", "folder", "student043.ipynb"}
    assert {p.file for p in problems} >= {str(tmp_path / "missing.ipynb"), str(folder)}
    assert "cannot read" in reasons["missing.ipynb"]
    assert "not a notebook" in reasons["essay.pdf"]
    assert "PDF" in reasons["student043.ipynb"]


@pytest.mark.parametrize(
    "member",
    [
        "../evil.ipynb",
        "a/../../evil.ipynb",
        "/etc/evil.ipynb",
        "C:/evil.ipynb",
        "C:evil.ipynb",
        "..\\..\\evil.ipynb",
        "ok/..\\..\\evil.zip",
    ],
)
def test_zip_slip_refuses_the_entry_and_reads_the_rest(member: str, tmp_path: Path) -> None:
    data = make_zip({"student042.ipynb": notebook(), member: notebook()})
    with pytest.raises(ArchiveError) as info:
        read_zip(data, "slip.zip")
    assert info.value.file == f"slip.zip/{member.replace(chr(92), '/')}"
    assert "zip-slip" in info.value.reason
    assert repr(member) in info.value.reason
    # the good entry and the other inputs still load
    (tmp_path / "slip.zip").write_bytes(data)
    (tmp_path / "student050.ipynb").write_bytes(notebook())
    files, problems = expand_inputs([tmp_path / "slip.zip", tmp_path / "student050.ipynb"])
    assert [f.student_id for f in files] == ["student042", "student050"]
    (problem,) = problems
    assert (problem.archive, problem.entry) == (str(tmp_path / "slip.zip"), member)
    assert "zip-slip" in problem.reason


def test_unsafe_names_of_other_files_are_skipped_like_other_files() -> None:
    data = make_zip({"student042.ipynb": notebook(), "ok/..\\..\\evil.csv": b"a,b"})
    assert [f.student_id for f in read_zip(data, "slip.zip")] == ["student042"]


def test_harmless_dot_dot_is_accepted() -> None:
    data = make_zip({"student042/sub/../hw1.ipynb": notebook()})
    assert ids(read_zip(data, "ok.zip")) == [
        ("ok.zip/student042/sub/../hw1.ipynb", "student042", "student042")  # as named
    ]


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return make_zip({"student042.ipynb": notebook(), "student043.ipynb": b"\0" * 50_000_000})


def test_zip_bomb_over_total_limit(bomb: bytes) -> None:
    with pytest.raises(ArchiveError, match="zip bomb") as info:
        read_zip(bomb, "bomb.zip", ArchiveLimits(max_total_bytes=10_000_000, max_ratio=1e9))
    assert info.value.file == "bomb.zip"
    assert "expand to 50.0 MB" in info.value.reason


def test_zip_bomb_by_compression_ratio(bomb: bytes) -> None:
    assert len(bomb) < 200_000
    with pytest.raises(ArchiveError, match=r"'student043\.ipynb' expands [\d,]+ times"):
        read_zip(bomb, "bomb.zip")


def test_zip_bomb_by_member_count() -> None:
    data = make_zip({f"student{i:03d}.ipynb": notebook() for i in range(4)})
    with pytest.raises(ArchiveError, match="4 entries"):
        read_zip(data, "many.zip", ArchiveLimits(max_members=3))
    assert len(read_zip(data, "many.zip", ArchiveLimits(max_members=4))) == 4


def test_header_that_understates_a_member_is_not_trusted() -> None:
    data = bytearray(make_zip({"student042.ipynb": notebook(), "student043.ipynb": notebook()}))
    # Shrink student043's uncompressed size in its local header and the central directory.
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as zf:
        info = zf.getinfo("student043.ipynb")
    local = info.header_offset
    central = data.rindex(b"PK\x01\x02")  # the last member's central directory entry
    assert data[central + 46 : central + 62] == b"student043.ipynb"
    struct.pack_into("<I", data, local + 22, 10)
    struct.pack_into("<I", data, central + 24, 10)
    files, problems = expand_uploads([("lie.zip", bytes(data))])
    assert [f.student_id for f in files] == ["student042"]
    assert [p.file for p in problems] == ["lie.zip/student043.ipynb"]
    assert all(len(f.data) > 10 for f in files)
    with pytest.raises(ArchiveError, match=r"lie\.zip/student043\.ipynb: cannot read it"):
        read_zip(bytes(data), "lie.zip")


@pytest.mark.parametrize(
    "data",
    [b"", b"not a zip at all", b"PK\x03\x04" + b"\x00" * 40, make_zip({"a.ipynb": b"{}"})[:30]],
)
def test_corrupt_zip(data: bytes, tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match=r"broken\.zip: not a valid ZIP archive"):
        read_zip(data, "broken.zip")
    (tmp_path / "broken.zip").write_bytes(data)
    files, problems = expand_inputs([tmp_path / "broken.zip"])
    assert files == []
    assert problems[0].file == str(tmp_path / "broken.zip")
    assert problems[0].reason.startswith("not a valid ZIP archive")


def test_bad_nested_zip_costs_only_itself() -> None:
    data = make_zip(
        {
            "student042.zip": make_zip({"hw1.ipynb": notebook()}),
            "student043.zip": b"PK\x03\x04 broken",
            "student044/deeper.zip": make_zip(
                {"inner.zip": make_zip({"x.ipynb": notebook()}), "hw1.ipynb": notebook()}
            ),
        }
    )
    files, problems = expand_uploads([("outer.zip", data)])
    assert ids(files) == [
        ("outer.zip/student042.zip/hw1.ipynb", "student042", "student042"),
        ("outer.zip/student044/deeper.zip/hw1.ipynb", "student044", "student044"),
    ]
    assert [p.file for p in problems] == [
        "outer.zip/student043.zip",
        "outer.zip/student044/deeper.zip/inner.zip/x.ipynb",  # nested too deep: named
    ]
    assert "not a valid ZIP archive" in problems[0].reason
    assert "nested more than 1 level deep" in problems[1].reason
    assert problems[1].entry == "student044/deeper.zip/inner.zip/x.ipynb"
    with pytest.raises(ArchiveError, match=r"outer\.zip/student043\.zip"):
        read_zip(data, "outer.zip")


def test_too_large_notebook_member_is_a_problem() -> None:
    from grader.notebooks.load import NotebookLimits

    data = make_zip({"student042.ipynb": notebook(), "student043.ipynb": notebook("y" * 5000)})
    files, problems = expand_uploads(
        [("up.zip", data)], notebook_limits=NotebookLimits(max_bytes=2000)
    )
    assert [f.student_id for f in files] == ["student042"]
    assert problems == [
        InputProblem("up.zip/student043.ipynb", problems[0].reason, "up.zip", "student043.ipynb")
    ]
    assert "too large" in problems[0].reason


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        ArchiveLimits(max_members=0)


VALID = make_zip(
    {"student042/hw1.ipynb": notebook(), "student043/hw1.ipynb": notebook()}, zipfile.ZIP_STORED
)


@settings(max_examples=150, deadline=None, database=None)
@example([(len(VALID) - 6, 23)])  # end-of-directory offset off by one: a negative seek
@given(st.lists(st.tuples(st.integers(0, len(VALID) - 1), st.integers(0, 255)), max_size=6))
def test_damaged_zips_only_raise_archive_error(flips: list[tuple[int, int]]) -> None:
    data = bytearray(VALID)
    for index, value in flips:
        data[index] = value
    error: ArchiveError | None = None
    try:
        files = read_zip(bytes(data), "fuzz.zip")
    except ArchiveError as exc:
        error = exc
    if error is not None:
        assert error.file.startswith("fuzz.zip")
    else:
        assert all(isinstance(f.data, bytes) for f in files)
    _, problems = expand_uploads([("fuzz.zip", bytes(data))])
    assert all(p.file.startswith("fuzz.zip") for p in problems)
