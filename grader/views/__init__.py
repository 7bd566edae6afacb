"""What the instructor's pages show, computed without Streamlit: rows, words and figures.

``reports`` makes the Grade and Review pages' rows and download files; ``progress``
is a grading job's live board (each layer's state in words); ``model_state`` says what
the model layers did for one grade; ``grading`` and ``model_timings`` are the
Dashboard's grading section, read from the store; ``agreement`` compares the grader's
scores with an instructor's (MAE, Pearson, Spearman, QWK); ``advisory`` measures how
often an advisory model route agrees with the checks and which of its notes to show;
``grading_figure`` draws the Dashboard's grading chart; ``downloads`` makes the
download files of a set of grades, each from its own assignment and rubric version, and
``export_choices`` says what to know before taking them (notebooks not graded, rows of a
Canvas CSV without a Canvas id); ``model_tab`` is a grade's Model tab (notes shown, and
advisory notes folded, never dropped); ``labels`` names assignments and criteria alike on
every page; ``upload_limits`` says how large an upload may be; ``grading_failed`` makes
the Dashboard's failed files and batches' cards whole.

May import: errors, types, events, notebooks, analysis, rubrics, scoring (its wrong-notebook
gate), store, exports.
"""
