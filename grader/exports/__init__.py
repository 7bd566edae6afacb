"""What leaves the grader: the gradebook files and each student's feedback files.

``formats`` writes the Canvas CSV, a plain CSV, JSON, and the letters of
``grader.letters`` as PDF, Markdown and HTML (one ZIP, or a folder from the CLI).

May import: errors, types, safe_text, rubrics, store, letters.
"""
