"""``python -m tests.hostile [--llm] [--out RELIABILITY.md]``: measure, then write the report."""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

from tests.hostile.report import markdown
from tests.hostile.run import measure


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.hostile", description=__doc__)
    ap.add_argument("--llm", action="store_true",
                    help="also run the padded notebook through the embedded models")
    ap.add_argument("--out", default="RELIABILITY.md", help="where to write the report")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        findings = measure(Path(tmp), llm=args.llm)
    Path(args.out).write_text(markdown(findings), encoding="utf-8")
    bad = [o for o in findings.cases if not o.ok]
    logging.info("wrote %s: %d cases, %d not as expected", args.out, len(findings.cases), len(bad))
    return 1 if bad or any(b.crashed for b in findings.batches) else 0


if __name__ == "__main__":
    sys.exit(main())
