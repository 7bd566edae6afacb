"""The rubric language: its schema, its editor's text, and the importers.

``schema`` is the rubric format (docs/rubric-format.md): dataclasses, validation that
reports every problem at once naming the file, canonical JSON and the version hash;
``edit`` and ``check_text`` are the editor's tables and the text of a check's target and
options; ``import_seed`` and ``import_items`` import the old system's rubric files and
say, item by item, what became of each; ``import_nbgrader`` and ``import_otter`` read
nbgrader source notebooks and otter's OK-format tests the same way.

May import: errors, types, pyast.
"""
