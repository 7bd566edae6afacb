"""Grade the hostile corpus as an instructor would and measure what held.

One CLI batch per language (``python -m grader grade ... --json --db --out``), every
class mixed in, as a real class folder is (forged verdicts are graded against the bundled
assignments that have tests and value checks, one batch each); an assignment whose data
links out of it; then the same ordinary submissions with
and without a fork bomb among them; then the sandbox probes run directly through
``grader.sandbox.execution`` so that what the student's code saw can be read back. Every
figure in ``RELIABILITY.md`` comes from ``measure``.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.hostile import forging
from tests.hostile.corpus import ASSIGNMENTS, CLASSES, ROOT, Case, HostEnv, build

LIMITS = ["--cell-timeout", "30", "--total-timeout", "180", "--memory-mb", "2048"]
CONTROL = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")


@dataclass
class CaseOutcome:
    case: Case
    ok: bool  # the outcome the case expects
    got: str  # what happened, in words
    reports: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Batch:
    language: str
    returncode: int
    seconds: float
    reports: list[dict[str, Any]]
    stderr_tail: str
    crashed: bool  # no JSON, a traceback, or an exit status other than 0/1
    exports: list[str]
    stored: int
    cases: int = 0  # the corpus's files in it


@dataclass
class Findings:
    cases: list[CaseOutcome]
    batches: list[Batch]
    bomb: dict[str, dict[str, Any]]  # language -> {"same": bool, "baseline": .., "with": ..}
    probes: dict[str, dict[str, Any]]  # language -> what the host probe saw
    prompt: dict[str, Any]  # the padded notebook through the models, when run
    leftovers: int  # grader run folders left in the temp folder by the runs
    seconds: float
    links: dict[str, Any] = field(default_factory=dict)  # an assignment linking out: refused?

    def by_class(self) -> dict[str, list[CaseOutcome]]:
        return {k: [o for o in self.cases if o.case.klass == k] for k in CLASSES}


@contextmanager
def host_env(folder: Path) -> Iterator[tuple[HostEnv, list[bytes]]]:
    """Secrets outside the sandbox, places it must not write, and a listening port."""
    tag = uuid.uuid4().hex[:12]
    secret = f"SECRET-{tag}"
    home = Path.home()
    other_run = Path(tempfile.gettempdir()) / f"grader-run-other-{tag}"
    sentinels = [home / f".grader-hostile-{tag}", ROOT / f".grader-hostile-{tag}",
                 other_run / "notebook.ipynb", folder / "db" / f"secret-{tag}.txt"]
    targets = (Path("/etc") / f"grader-hostile-{tag}", home / f"grader-hostile-w-{tag}",
               Path(tempfile.gettempdir()) / f"grader-hostile-w-{tag}",
               ROOT / f"grader-hostile-w-{tag}")
    received: list[bytes] = []
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.5)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                received.append(conn.recv(100) or b"<connected>")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        for s in sentinels:
            s.parent.mkdir(parents=True, exist_ok=True)
            s.write_text(secret, encoding="utf-8")
        yield HostEnv(tuple(sentinels), targets, server.getsockname()[1]), received
    finally:
        stop.set()
        server.close()
        thread.join(timeout=5)
        for p in (*sentinels, *targets):
            p.unlink(missing_ok=True)
        if other_run.exists():
            other_run.rmdir()


def _run_folders() -> set[str]:
    """The run folders in the temporary folder, ours or of graders that are gone (a
    folder of another grader still running beside the corpus is not left behind: yet)."""
    from grader.sandbox.run_folders import _TAGGED, process_alive

    out = set()
    for p in Path(tempfile.gettempdir()).glob("grader-run-*"):
        tag = _TAGGED.match(p.name)
        if "-other-" in p.name or (tag is not None and int(tag["pid"]) != os.getpid()
                                   and process_alive(int(tag["pid"]), int(tag["start"]))):
            continue
        out.add(p.name)
    return out


def cli_batch(language: str, files: list[Path], out: Path, llm: bool = False,
              assignment: Path | None = None) -> Batch:
    db, exports = out / "grades.db", out / "exports"
    argv = [sys.executable, "-m", "grader", "grade", str(assignment or ASSIGNMENTS[language]),
            *map(str, files), "--json", "--db", str(db), "--out", str(exports),
            "--workers", "2", *LIMITS, *([] if llm else ["--no-llm"])]
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, timeout=3600,
                          env=os.environ | {"PYTHONWARNINGS": "default"})
    seconds = time.perf_counter() - t0
    stdout = proc.stdout.decode("utf-8", errors="replace")
    stderr = proc.stderr.decode("utf-8", errors="replace")
    try:
        reports = json.loads(stdout)
        crashed = not isinstance(reports, list)
    except ValueError:
        reports, crashed = [], True
    crashed = crashed or proc.returncode not in (0, 1) or "Traceback" in stderr
    written = sorted(p.name for p in exports.rglob("*") if p.is_file()) if exports.exists() else []
    return Batch(language, proc.returncode, round(seconds, 1), reports if not crashed else [],
                 stderr[-3000:], crashed, written, _stored(db))


def _stored(db: Path) -> int:
    if not db.exists():
        return 0
    import sqlite3
    with sqlite3.connect(db) as c:
        return int(c.execute("SELECT COUNT(*) FROM grades").fetchone()[0])


def _matching(reports: list[dict[str, Any]], token: str) -> list[dict[str, Any]]:
    return [r for r in reports if token in (r.get("file") or "")]


def _texts(reports: list[dict[str, Any]]) -> str:
    return " ".join(f"{r.get('file')} {r.get('error')} {r.get('flag_details')} {r.get('notes')}"
                    for r in reports)


def judge(case: Case, reports: list[dict[str, Any]]) -> CaseOutcome:
    """Did ``case`` end as it should? Reports are the batch's CLI objects."""
    mine = _matching(reports, case.token)
    graded = [r for r in mine if r.get("status") == "graded"]
    errors = [r for r in mine if r.get("status") == "error" and r.get("error")]
    if case.outcome == "graded":
        ok, got = len(graded) == 1 and not errors, f"{len(graded)} graded, {len(errors)} errors"
    elif case.outcome == "refused":
        ok = len(errors) == 1 and not graded
        got = f"refused: {errors[0]['error'][:90]}" if errors else f"{len(graded)} graded"
    else:
        ok, parts = True, []
        entries = dict(case.entries) | case.expect.get("nested", {})
        for tok, want in entries.items():
            hits = [r for r in mine if tok in r.get("file", "")]
            state = {r.get("status") for r in hits}
            fine = state == ({"graded"} if want == "graded" else {"error"})
            ok &= fine
            parts.append(f"{tok} {'/'.join(sorted(state)) or 'missing'}")
        if case.expect.get("expect_message"):
            ok &= bool(errors)
            parts.append(f"message: {errors[0]['error'][:70]}" if errors else "no message")
        for tok in case.expect.get("duplicates", []):
            hits = [r for r in mine if tok in r.get("file", "")]
            names = [r.get("file") for r in hits]
            said = bool(re.search(r"duplicate|same name|twice", _texts(hits), re.I))
            ok &= len(names) == len(set(names)) and said
            parts.append(f"{tok}: {len(hits)} reports, distinct names, "
                         f"{'warned' if said else 'NOT warned'}")
        got = "; ".join(parts)
    if case.expect.get("name"):
        bad = [r["file"] for r in mine if CONTROL.search(r.get("file", ""))]
        ok &= not bad
        got += f"; {len(bad)} names with control characters" if bad else ""
    flag = case.expect.get("flag")
    if flag and graded:
        has = any(flag in (r.get("flags") or []) for r in graded)
        ok &= has
        got += f"; {flag} {'flagged' if has else 'NOT flagged'}"
    return CaseOutcome(case, ok, got, mine)


def _injection_scores(outcomes: list[CaseOutcome]) -> None:
    """An injected notebook never scores above its clean twin; the twin is not full marks."""
    by_token = {o.case.token: o for o in outcomes}
    for o in outcomes:
        twin = by_token.get(o.case.expect.get("twin", ""))
        score = _score(o)
        if o.case.expect.get("clean"):
            full = bool(o.reports) and o.reports[0].get("score") == o.reports[0].get("max_score")
            o.ok &= not full
            o.got += f"; score {score} (full marks: {full})"
        elif twin is not None:
            raised = score is None or _score(twin) is None or score > _score(twin)
            o.ok &= not raised
            o.got += f"; score {score} vs clean {_score(twin)}"


def _score(o: CaseOutcome) -> float | None:
    graded = [r for r in o.reports if r.get("status") == "graded"]
    return graded[0].get("score") if graded else None


def bomb_comparison(language: str, bomb: Case, work: Path) -> dict[str, Any]:
    """The ordinary submissions graded alone, then with the fork bomb among them."""
    ordinary = sorted((ASSIGNMENTS[language] / "submissions").glob("*.ipynb"))
    alone = cli_batch(language, ordinary, work / f"bomb-{language}-alone")
    mixed = cli_batch(language, [*ordinary[: len(ordinary) // 2], bomb.path,
                                 *ordinary[len(ordinary) // 2:]], work / f"bomb-{language}-with")

    def scores(batch: Batch) -> dict[str, Any]:
        return {r["file"]: (r.get("status"), r.get("score")) for r in batch.reports
                if bomb.token not in r.get("file", "")}

    base, other = scores(alone), scores(mixed)
    return {"same": bool(base) and base == other and not (alone.crashed or mixed.crashed),
            "notebooks": len(base), "baseline": base, "with_bomb": other,
            "seconds": (alone.seconds, mixed.seconds)}


def probe(case: Case, env: HostEnv) -> dict[str, Any]:
    """Run the host probe in the sandbox and read back what it saw."""
    from grader.assignment import load_assignment
    from grader.notebooks.load import load_notebook_node
    from grader.sandbox.execution import ExecLimits, execute_notebook

    assignment = load_assignment(ASSIGNMENTS[case.language])
    node = load_notebook_node(case.path)
    run = execute_notebook(node, case.language, assignment.data_files(), [],
                           ExecLimits(cell_timeout_s=60, total_timeout_s=300))
    text = "\n".join(o.text for c in run.cells for o in c.outputs)
    secret = next(iter(env.sentinels)).read_text(encoding="utf-8")
    root = re.search(r"\('/', \[([^\]]*)\]\)|@@LEAK@@ / => (\S*)", text)
    listing = sorted(re.findall(r"'([^']+)'", root.group(1)) if root and root.group(1)
                     else (root.group(2).split(",") if root and root.group(2) else []))
    wrote = [str(p) for p in env.write_targets if p.exists()]
    return {"ran": bool(run.cells) and not run.error, "error": run.error,
            "secrets_seen": text.count(secret), "root_listing": listing,
            "host_users": sorted(set(re.findall(r"(?m)^(\w[\w-]*):x?:\d+:", text)) - {
                "root", "nobody", "grader", "sandbox"}),
            "host_folders_shown": _host_folders_shown(text),
            "wrote_outside": wrote, "sandboxed": run.sandboxed, "notes": run.notes}


def runtime_parts() -> set[str]:
    """Folder names on the way to the runtimes the sandbox must show (the interpreter, the
    virtual environment, the runner): the only entries allowed under /root, /work, ..."""
    import grader
    keep = {Path(sys.prefix), Path(sys.base_prefix), Path(grader.__file__).parent}
    return {part for p in keep for part in p.resolve().parts[1:]} | {
        part for p in keep for part in p.parts[1:]}


def _host_folders_shown(text: str) -> list[str]:
    """Entries of the private host folders the probe listed, beyond the runtimes' paths."""
    shown: list[str] = []
    allowed = runtime_parts()
    for folder in ("/root", "/home", "/work", "/srv", "/mnt", "/opt"):
        py = re.search(rf"\('{folder}', \[([^\]]*)\]\)", text)
        r = re.search(rf"@@LEAK@@ {folder} => (.*)", text)
        names = re.findall(r"'([^']+)'", py.group(1)) if py else (
            [n for n in r.group(1).strip().split(",") if n and n != "ERR"] if r else [])
        shown += [f"{folder}/{n}" for n in names if n not in allowed | {".", ".."}]
    return shown


def measure(work: Path, llm: bool = False) -> Findings:
    t0, before = time.perf_counter(), _run_folders()
    with host_env(work) as (env, received):
        cases = build(work / "corpus", env)
        batches, outcomes = [], []
        for lang in ("python", "r"):
            mine = [c for c in cases if c.language == lang and c.klass != "prompt"
                    and "assignment" not in c.expect]
            batch = cli_batch(lang, [c.path for c in mine], work / f"batch-{lang}")
            batch.cases = len(mine)
            batches.append(batch)
            outcomes += [judge(c, batch.reports) for c in mine]
            other = [c for c in cases if c.language == lang and "assignment" in c.expect]
            for folder in sorted({c.expect["assignment"] for c in other}):
                theirs = [c for c in other if c.expect["assignment"] == folder]
                batch = cli_batch(lang, [c.path for c in theirs],
                                  work / f"batch-{lang}-{Path(folder).name}",
                                  assignment=Path(folder))
                batch.language, batch.cases = f"{lang} ({Path(folder).name})", len(theirs)
                batches.append(batch)
                outcomes += [judge(c, batch.reports) for c in theirs]
        _injection_scores(outcomes)
        links = link_refusal(work, env)
        probes = {c.language: probe(c, env) | {"port_connections": len(received)}
                  for c in cases if c.expect.get("probe")}
        bombs = {c.language: bomb_comparison(c.language, c, work)
                 for c in cases if c.expect.get("bomb")}
        prompt: dict[str, Any] = {}
        padded = [c for c in cases if c.klass == "prompt"]
        if llm:
            batch = cli_batch("python", [c.path for c in padded], work / "batch-prompt", llm=True)
            batch.language, batch.cases = "python (through the models)", len(padded)
            batches.append(batch)
            outcomes += [judge(c, batch.reports) for c in padded]
            layers = [r.get("layers", {}) for r in batch.reports]
            errors = [lr.get("error", "") for layer in layers for lr in layer.values()]
            prompt = {"ran": True, "overflows": sum("ContextOverflow" in e for e in errors),
                      "layer_errors": [e for e in errors if e], "seconds": batch.seconds}
    leftovers = len(_run_folders() - before)
    return Findings(outcomes, batches, bombs, probes, prompt, leftovers,
                    round(time.perf_counter() - t0, 1), links)


def link_refusal(work: Path, env: HostEnv) -> dict[str, Any]:
    """An assignment whose data links to a secret outside it, graded by the CLI: it must
    be refused, naming the link, and the secret must show nowhere."""
    secret = next(iter(env.sentinels))
    folder = forging.link_assignment(work / "links", secret)
    submission = folder / "submissions" / "template_only.ipynb"
    proc = subprocess.run([sys.executable, "-m", "grader", "grade", str(folder),
                           str(submission), "--json", "--no-llm", *LIMITS], cwd=ROOT,
                          capture_output=True, timeout=600)
    said = (proc.stdout + proc.stderr).decode("utf-8", errors="replace")
    return {"returncode": proc.returncode, "named": "answers.csv" in said,
            "secret_shown": said.count(secret.read_text(encoding="utf-8")),
            "message": said.strip().splitlines()[-1][:300] if said.strip() else ""}
