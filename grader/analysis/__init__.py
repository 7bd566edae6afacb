"""Reading the student's work without running it.

``template`` matches a submission's cells against the assignment's template, so only
what the student wrote counts; ``facts`` finds the variables a cell assigns and the
functions it calls (Python through ``ast``, R through ``rlang``'s tokenizer and light
parser), with comments and strings left out; ``answers`` finds the written answer
under each question and counts its words.

May import: errors, types.
"""
