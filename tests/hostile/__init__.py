"""A hostile corpus of notebooks and archives, and the run that measures the grader on it.

``corpus.build(folder)`` writes every case (a generator, nothing checked in as blobs),
built from one genuine Python and one genuine R submission of the bundled examples;
``run.measure(...)`` grades it the way an instructor does (the CLI, one batch per
language, with --json, --db and --out) and probes the sandbox directly;
``python -m tests.hostile`` writes ``RELIABILITY.md`` from the figures.
``tests/test_hostile_corpus.py`` asserts the same figures in CI.
"""
