"""Files in: what an instructor uploads, read safely into typed notebooks.

``load`` reads one ``.ipynb`` (size and shape limits, nbformat validation, outputs
normalised) into ``grader.types.Notebook`` and refuses bad input with an error that
names the file; ``cells`` types its cells and finds the language; ``zips`` reads a ZIP
in memory (nested ZIPs, traversal, bombs refused); ``archive`` turns uploads into
submissions, and ``student_ids`` says whose each notebook is (Canvas, nbgrader and
folder naming).

May import: errors, types, safe_text.
"""
