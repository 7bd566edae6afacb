"""Files in: what an instructor uploads, read safely into typed notebooks.

``load`` reads one ``.ipynb`` (size and shape limits, nbformat validation, outputs
normalised) into ``grader.types.Notebook`` and refuses bad input with an error that
names the file (``refusals``: its words, then the parser's detail); ``cells`` types its
cells and finds the language; ``zips`` reads a ZIP (nested ZIPs, traversal, bombs
refused; ``zip_parts``: the checks); ``archive`` turns uploads into submissions,
``stream`` does so one notebook at a time for a class of thousands, and ``student_ids``
says whose each notebook is (Canvas, nbgrader and folder naming).

May import: errors, types, safe_text.
"""
