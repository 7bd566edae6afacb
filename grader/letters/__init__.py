"""The letter a student receives: per criterion, what was done, what is missing and
where, and the next step, in plain words.

``build`` writes the ``Letter`` (``text``) from a grade's evidence; ``check_reading`` reads
one check for the student (a ``Reading``, see ``reading``; ``output_reading`` reads the
value checks) and ``places`` names cells as the student sees them;
``render`` writes Markdown and HTML and ``pdf`` one PDF. Points and percentages are the
gradebook's (``grader.points``: "8.64 / 20", "43%"); ``numbers`` numbers cells from 1.
Instructor-only detail (flags, hidden checks, metrics) never enters a letter, and
``hidden`` replaces any text of a hidden check that a student's run carried into what
the letter quotes.

May import: errors, types, safe_text, pyast, points, scoring, notebooks, analysis, rubrics,
check_types (each check type's letter).
"""
