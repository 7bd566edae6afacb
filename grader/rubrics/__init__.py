"""The rubric language: its schema, its editor's text, and the importers.

``schema`` is the rubric format (docs/rubric-format.md): dataclasses, validation that
reports every problem at once naming the file, canonical JSON and the version hash;
``edit`` and ``check_text`` are the editor's tables and the text of a check's target and
options; ``import_seed`` imports the old system's rubric files (``import_formats`` and
``import_draft`` the shapes without autograder sections, ``import_prose`` their words as
checks, ``import_credit`` partial-credit rules as levels) and ``import_items`` and
``import_notes`` say, item by item, what became of each; ``import_nbgrader`` and
``import_otter`` read nbgrader source notebooks and otter's OK-format tests the same way.
``model_notes`` says whether a model's note on a criterion is well-formed and agrees with
the criterion's checks (the pages and the letters both ask it).

May import: errors, types, safe_text, pyast, check_types (the check types' fields and
problems).
"""
