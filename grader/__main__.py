"""`python -m grader ...`: see grader.cli."""

from .cli import main

raise SystemExit(main())
