"""``RELIABILITY.md`` from the figures of one ``run.measure``."""

from __future__ import annotations

import platform
import time

from tests.hostile.corpus import CLASSES
from tests.hostile.run import Findings

COMMAND = ".venv/bin/python -m tests.hostile [--llm] [--out RELIABILITY.md]"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(f: Findings) -> str:
    lines = [
        "# Reliability: the grader against a hostile corpus",
        "",
        f"Regenerate with `{COMMAND}` (about {f.seconds / 60:.0f} minutes on 2 cores).",
        "The corpus is written by `tests/hostile/corpus.py` from the bundled genuine Python "
        "and R submissions (nothing hostile is checked in); `tests/test_hostile_corpus.py` "
        "asserts the same figures in CI.",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {platform.machine()}, Python "
        f"{platform.python_version()}, as uid {_uid()}.",
        "",
        "## Summary",
        "",
        "| class | what | cases | as expected | crashes |",
        "|---|---|---:|---:|---:|",
    ]
    crashes = sum(b.crashed for b in f.batches)
    for klass, outcomes in f.by_class().items():
        if outcomes:
            good = sum(o.ok for o in outcomes)
            lines.append(f"| {klass} | {CLASSES[klass]} | {len(outcomes)} | {good} | 0 |")
    lines += ["", "## Batches", "",
              "| batch | notebooks and archives | reports | exit | seconds | stored grades | "
              "export files | crashed |", "|---|---:|---:|---:|---:|---:|---:|---|"]
    for b in f.batches:
        lines.append(f"| {b.language} | {b.cases} | "
                     f"{len(b.reports)} | {b.returncode} | {b.seconds} | {b.stored} | "
                     f"{len(b.exports)} | {'YES' if b.crashed else 'no'} |")
    lines += ["", f"Batches that crashed: {crashes}. Run folders left behind: {f.leftovers}.", "",
              "## The fork bomb", ""]
    for lang, bomb in f.bomb.items():
        lines.append(f"- {lang}: {bomb['notebooks']} ordinary notebooks graded "
                     f"{'exactly as' if bomb['same'] else 'DIFFERENTLY from'} without the bomb "
                     f"({bomb['seconds'][0]} s alone, {bomb['seconds'][1]} s with it).")
    lines += ["", "## What the sandbox showed the student's code", ""]
    for lang, p in f.probes.items():
        lines.append(f"- {lang}: secrets read {p['secrets_seen']}, host users "
                     f"{len(p['host_users'])}, entries of private host folders seen "
                     f"{len(p['host_folders_shown'])}, files written outside "
                     f"{len(p['wrote_outside'])}, connections to the host "
                     f"{p['port_connections']}; `/` held: {', '.join(p['root_listing'])}.")
    if f.links:
        lines += ["", "## Assignment data that links out of the assignment", "",
                  f"An assignment whose `data/answers.csv` links to a secret file outside it: "
                  f"the grader exited {f.links['returncode']}, "
                  f"{'naming' if f.links['named'] else 'NOT naming'} the link, and showed the "
                  f"secret {f.links['secret_shown']} times (\"{_cell(f.links['message'])}\")."]
    if f.prompt:
        lines += ["", "## Prompts larger than the context", "",
                  f"The padded notebook through layers 3 and 4 with the embedded models: "
                  f"{f.prompt['overflows']} context overflows, {len(f.prompt['layer_errors'])} "
                  f"layer errors, {f.prompt['seconds']} s."]
    lines += ["", "## Every case", "", "| case | class | language | what | expected | got | ok |",
              "|---|---|---|---|---|---|---|"]
    for o in f.cases:
        c = o.case
        lines.append(f"| {c.token} | {c.klass} | {c.language} | {_cell(c.what)} | {c.outcome} | "
                     f"{_cell(o.got)} | {'yes' if o.ok else '**NO**'} |")
    return "\n".join(lines) + "\n"


def _uid() -> str:
    import os
    return "0 (root)" if os.geteuid() == 0 else str(os.geteuid())
