"""Where grades are kept: one SQLite file (WAL, migrations).

``database.Store`` holds assignments, rubric versions, grades, overrides with their
audit trail, batches, submission files and calibrations; ``db_schema`` has the tables, the
migrations and the typed rows; ``batches`` and ``batch_owner`` record who grades a batch
and find interrupted ones; ``carry`` carries overrides to a regrade; ``stored_files`` keeps the
submissions' bytes; ``calibrations`` keeps how each model route judged graded examples;
``drops`` keeps the grades dropped from the gradebook, with their trail; ``serialize``
turns a ``GradeReport`` into JSON and back, exactly.

May import: errors, types, safe_text, pyast (a grade stored before results carried facts
is read by ``legacy_facts``), points (how a note writes points), anonymity (a report
with names hidden).
"""
