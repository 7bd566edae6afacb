"""How every benchmark prints its figures: a table for people unless --json, then one JSON
line with the same figures (the last line of the output, for scripts)."""

from __future__ import annotations

import json
from typing import Any


def emit(figures: dict[str, Any], as_json: bool) -> None:
    out = {k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()}
    if not as_json:
        width = max(map(len, out), default=0)
        for k, v in out.items():
            print(f"{k:>{width}}: {v}")
    print(json.dumps(out))
