"""Can this notebook be graded as the student's work on this assignment?

``template_fit`` measures how much of the template a notebook holds (the wrong
notebook, or the template itself); ``injection`` finds text aimed at an AI grader
rather than a human reader (its rules and their triggers in ``injection_rules``, written
in ``injection_terms``; words addressed to the grader in any form, role claims and
directives, in ``injection_address``; code cells split by ``injection_code``), and
``injection_places`` scans every place a model or an instructor reads (cells, outputs,
attachments, metadata, a fresh run's outputs), each distinct text once per assignment
(``injection_memo``); ``injection_blocks`` widens each flagged line to its block (the
paragraph around it), which never counts as an answer and never reaches a model. What
they find becomes flags for review (with models or without); it never raises a score.

May import: errors, types, notebooks, analysis, sandbox, layers.
"""
