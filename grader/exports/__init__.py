"""What leaves the grader: the gradebook files and each student's feedback files.

``formats`` writes the Canvas CSV, a plain CSV, JSON, and the letters of
``grader.letters`` as PDF, Markdown and HTML (one ZIP, or a folder from the CLI);
``basis`` gives each grade the assignment and rubric version it was graded under, read
from the store, so that its letter is written against them whatever a page picked.
Points and percentages are the gradebook's (``grader.points``), cell numbers the
letter's (``grader.letters.numbers``).

May import: errors, types, safe_text, points, rubrics, scoring (its wrong-notebook gate), store,
letters.
"""
