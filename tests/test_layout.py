"""The house's rules, read from the source: rooms, arrows, sizes, public names.

Every module of ``grader``, ``inference``, ``app_pages`` and ``bench`` is parsed and
its imports of our own packages collected: at module level, inside functions (a lazy
import is still an arrow) and as ``"module:Class"`` registry strings. Imports under
``if TYPE_CHECKING:`` are left out: they run only for the type checker. A *room* is a
subpackage (``grader.sandbox``) or a top-level module (``grader.pipeline``). The tests
fail on an import cycle between rooms, on an arrow the rules forbid, on streamlit in
``grader`` or ``inference`` (in the source and in ``sys.modules`` after importing every
module), and on a module past the size limit.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = ("grader", "inference", "app_pages", "app", "bench")
MAX_LINES = 400  # a module past it needs a reason, and none has one today
REGISTRY_STRING = re.compile(r"^((?:grader|inference)(?:\.\w+)+):\w+$")


def module_files(package: str) -> Iterator[tuple[str, Path]]:
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def _type_checking_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _runtime_nodes(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node except those under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and _type_checking_only(child):
            yield from (n for c in child.orelse for n in [c, *_runtime_nodes(c)])
            continue
        yield child
        yield from _runtime_nodes(child)


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ours that ``module`` imports at run time."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _runtime_nodes(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in known else target)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                m := REGISTRY_STRING.match(node.value)):
            found.add(m.group(1))
    return {m for m in found if m.split(".")[0] in OURS}


def graph() -> dict[str, set[str]]:
    files = dict(m for p in ("grader", "inference", "app_pages", "bench")
                 for m in module_files(p))
    files["app"] = ROOT / "app.py"
    known = set(files)
    return {m: imports_of(m, p, known) for m, p in files.items()}


def room(module: str) -> str:
    """grader.sandbox.view -> grader.sandbox; grader.pipeline -> grader.pipeline."""
    parts = module.split(".")
    if parts[0] in ("grader", "inference") and len(parts) >= 2:
        return ".".join(parts[:2])
    return parts[0]


def room_graph() -> dict[str, set[str]]:
    rooms: dict[str, set[str]] = defaultdict(set)
    for module, targets in graph().items():
        for target in targets:
            if target.split(".")[0] == module.split(".")[0] and len(target.split(".")) == 1:
                continue  # the package's own __init__ (its public names)
            if room(target) != room(module):
                rooms[room(module)].add(room(target))
        rooms.setdefault(room(module), set())
    return rooms


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_rooms():
    assert cycles(room_graph()) == []


def test_no_import_cycle_between_modules():
    assert cycles(graph()) == []


# Which top-level packages each may import: arrows point down only.
MAY_IMPORT = {
    "app": {"app_pages", "grader", "inference"},
    "app_pages": {"app_pages", "grader", "inference"},
    "bench": {"bench", "grader", "inference"},  # the app only through AppTest, by path
    "grader": {"grader", "inference"},
    "inference": {"inference"},
}


def test_arrows_point_down():
    """app -> app_pages -> grader -> inference (its public names only); bench never
    imports the app."""
    wrong = []
    for module, targets in graph().items():
        top = module.split(".")[0]
        for target in sorted(targets):
            if target.split(".")[0] not in MAY_IMPORT[top]:
                wrong.append(f"{module} -> {target}")
            elif top == "grader" and target.startswith("inference."):
                wrong.append(f"{module} -> {target} (grader uses `from inference import ...`)")
    assert wrong == []


def test_the_rules_catch_an_upward_arrow(tmp_path):
    """The arrow finder sees relative, lazy and registry-string imports."""
    src = tmp_path / "m.py"
    src.write_text(
        "from typing import TYPE_CHECKING\n"
        "from ..rubrics import schema\n"
        "if TYPE_CHECKING:\n    from ..service.jobs import GradeJob\n"
        "def f():\n    from app_pages.shared import sidebar\n"
        "REG = {'x': 'inference.cluster.remote:OllamaBackend'}\n")
    found = imports_of("grader.layers.m", src, {"grader.rubrics.schema"})
    assert found == {"grader.rubrics.schema", "app_pages.shared", "inference.cluster.remote"}


def _streamlit_imports(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        if any(n.split(".")[0] == "streamlit" for n in names):
            return True
    return False


def test_grader_and_inference_never_import_streamlit_in_the_source():
    offenders = [str(p.relative_to(ROOT)) for pkg in ("grader", "inference")
                 for _, p in module_files(pkg) if _streamlit_imports(p)]
    assert offenders == []


def test_importing_every_module_loads_no_streamlit():
    modules = [m for pkg in ("grader", "inference") for m, _ in module_files(pkg)
               if not m.endswith("__main__")]
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print('streamlit' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


def test_every_room_says_what_it_owns_and_may_import():
    for pkg in ("grader", "inference"):
        for init in sorted((ROOT / pkg).glob("*/__init__.py")):
            doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
            assert len(doc) > 80, f"{init.relative_to(ROOT)} has no docstring worth reading"
            assert "import" in doc.lower(), f"{init.relative_to(ROOT)}: what may it import?"


def declared_imports(package: str, name: str) -> set[str]:
    """The rooms a room's docstring allows after "May import:" (to the sentence's end)."""
    init = ROOT / package / name / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    _, found, rest = doc.partition("May import:")
    assert found, f"{init.relative_to(ROOT)} does not say what it may import"
    sentence = re.split(r"\.(?:\s|$)|\n\s*\n", rest, maxsplit=1)[0]
    words = set(re.findall(r"[a-z_]+", sentence))
    rooms = {r.split(".", 1)[1] for r in room_graph() if r.startswith(f"{package}.")}
    allowed = {f"{package}.{w}" for w in words & rooms}
    if package == "grader" and "inference" in words:
        allowed.add("inference")
    return allowed


@pytest.mark.parametrize("package", ["grader", "inference"])
def test_each_room_imports_only_what_its_docstring_allows(package):
    rooms = room_graph()
    wrong = {}
    for init in sorted((ROOT / package).glob("*/__init__.py")):
        name = init.parent.name
        extra = rooms[f"{package}.{name}"] - declared_imports(package, name)
        if extra:
            wrong[name] = sorted(extra)
    assert wrong == {}


def test_no_module_past_the_size_limit():
    long = {str(p.relative_to(ROOT)): n for pkg in ("grader", "inference", "app_pages", "bench")
            for _, p in module_files(pkg)
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_the_public_names_are_the_ones_we_mean():
    import grader

    assert sorted(grader.__all__) == sorted(PUBLIC)
    for name in grader.__all__:
        assert getattr(grader, name) is not None, name
    with pytest.raises(AttributeError):
        _ = grader.no_such_name


PUBLIC = [
    "ArchiveError", "Assignment", "GradeInput", "GradeOptions", "GradeReport", "Grader",
    "GraderError", "InputError", "Notebook", "NotebookError", "PromptBudgetError", "Rubric",
    "RubricError", "SandboxError", "Store", "StoreError", "load_assignment", "load_notebook",
    "load_rubric", "save_rubric",
]


@pytest.mark.parametrize("name", ["pipeline", "assignment", "cli"])
def test_the_entry_modules_stay_where_they_were(name):
    assert importlib.import_module(f"grader.{name}") is not None


def test_no_two_modules_of_one_name_in_the_grader():
    """A module's name says its concept once (issue 34): ``grader/letters/tests.py`` and
    ``grader/layers/tests.py`` were two rooms' different things under one name."""
    seen: dict[str, list[str]] = defaultdict(list)
    for module, path in module_files("grader"):
        if path.name != "__init__.py":
            seen[path.stem].append(module)
    for module, path in module_files("grader"):
        if path.name == "__init__.py" and module.count(".") == 1:
            seen[module.rsplit(".", 1)[1]].append(module)  # a room's name is taken too
    assert {name: found for name, found in seen.items() if len(found) > 1} == {}
