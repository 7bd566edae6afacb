"""The four grading layers, each behind one small interface (``base.Layer``).

``structure`` (L1) grades structure and completeness from the notebook's text;
``outputs`` (L2) runs the notebook in the sandbox and checks values against the
solution run the same way (``compare``; ``values``, ``instructor_tests`` and
``outputs_read`` for the instructor's expressions, tests and printed output; ``stale``
for submitted outputs that disagree with our run; ``slips`` for a later part's failed
cell, charged where it failed); each check type's module (``grader.checks``) says which
of them evaluates it. ``llm`` runs L3 (code analysis) and L4 (feedback) in parallel
threads, with the requests of ``llm_requests`` built from ``prompts`` and fitted to each
route's context by ``prompt_budget``. A layer that crashes returns a result with the
error attached.

May import: errors, types, pyast, check_types (each check type's facets), assignment,
rubrics, analysis, sandbox, packages, and ``inference``'s public names (the client
interface only).
"""
