"""What the app's pages call: grading in the background, review, and the workspace.

``jobs`` runs a grading job in a thread that a page follows live; ``batch`` grades
many submissions with each report stored as soon as it is made, and resumes an
interrupted batch (``chunks``: a class of thousands, one chunk of notebooks in memory at
a time); ``review`` lists stored grades, applies overrides and regrades;
``rescore`` previews what an edited rubric would do to the grades already given;
``workspace`` holds the instructor's assignments (bundled and made in the app);
``sizing`` counts a batch's notebooks before it is graded and sizes its chunks;
``import_fit`` fits an imported old-system rubric to the assignment's own solution;
``import_words`` says an import's report in words; ``shelf`` archives, restores and
deletes assignments (their grades kept); ``results`` gives the Grade page each student's
grade under the rubric in force; ``calibration`` measures the model routes on graded
notebooks before they are trusted to judge (``calibration_figures``: the figures and the
verdict; ``calibration_runs``: a calibration in the background, for the Dashboard);
``unread`` records an upload's unreadable files with their batch, for the Dashboard.

May import: every room below it (errors, types, safe_text, check_types, notebooks, rubrics,
assignment,
analysis, sandbox, packages, layers, points, scoring, pipeline, store, letters, views,
anonymity) and ``inference``'s public names.
"""
