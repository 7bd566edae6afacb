"""What every benchmark shares: the --quick/--json command line, and how it prints its
figures (a table for people unless --json, then one JSON line with the same figures,
the last line of the output, for scripts)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def emit(figures: dict[str, Any], as_json: bool) -> None:
    out = {k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}
    if not as_json:
        width = max(map(len, out), default=0)
        for k, v in out.items():
            print(f"{k:>{width}}: {v}")
    print(json.dumps(out))


def parser(doc: str | None, quick: str) -> argparse.ArgumentParser:
    """The benchmark's command line: its docstring's first line, --quick (``quick`` says
    what it changes) and --json."""
    ap = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--json", action="store_true", help="print only the JSON object on stdout")
    return ap
