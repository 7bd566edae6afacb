"""The letter a student receives: per criterion, what was done, what is missing and
where, and the next step, in plain words.

``build`` writes the ``Letter`` (``text``) from a grade's evidence; ``checks`` reads
one check for the student (a ``Reading``, see ``reading``; ``outputs`` reads the
value checks) and ``places`` names cells as the student sees them;
``render`` writes Markdown and HTML and ``pdf`` one PDF. ``numbers`` holds the rules
every page follows for what the letter shows: whole percentages, cells numbered from 1.
Instructor-only detail (flags, hidden checks, metrics) never enters a letter.

May import: errors, types, safe_text, pyast, scoring, notebooks, analysis, rubrics.
"""
