"""Reading the student's work without running it.

``template`` matches a submission's cells against the assignment's template, so only
what the student wrote counts; a code cell that holds only prose (``prose_cells``: an
answer typed as plain text into a code cell) is read as text, never as code. ``facts``
finds the variables a cell assigns and the functions it calls (Python through ``ast``,
or ``token_scan`` for code that does not parse; R through ``rlang``'s tokenizer and
light parser), with comments and strings left out, and code that can never run
(``if False:``, after a ``raise`` or ``stop()``: ``dead_py``, ``dead_r``) too.
``answers`` finds the written answer under each question and counts its words, wherever
the template asked it (markdown, raw, or a code cell's plain text, comments or strings)
and wherever the student wrote it: markdown under the question or inside its cell, plain
text typed into a code cell, prose comments and printed strings of code cells
(``code_prose``), and the student's part of a cell answering several questions, split at
their labels (``answer_labels``; ``answer_parts`` locates the questions once per
submission). ``visible`` is the one word count: words of the text a reader sees
(invisible characters and hidden HTML removed).

May import: errors, types, pyast.
"""
