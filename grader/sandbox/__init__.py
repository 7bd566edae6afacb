"""Running untrusted notebooks: the sandbox, and what a run saw of the student's variables.

``execution`` runs a notebook (nbclient and its kernel together, in ``runner``) inside
bubblewrap with no network, private namespaces, a uid and a cgroup of the run's own
(``limits``, ``cgroup``), an allow-list view of the host (``view``), the assignment's
data wherever the code names it (``layout``, never through a link out of its assignment
folder), private run folders (``runs``) and a stop of every run at once, on SIGTERM
(``stopping``); the cgroup bounds the memory of the run's processes together;
``tamper`` notices code that hides its errors and ``check_tamper`` code that reaches for
the checks' paths. Values and the instructor's tests are judged outside the student's
kernel (``bridge``): the kernel only exports data (``datacodec``, bound before the
student's first cell by ``pykernel`` / ``rkernel.R``), and the runner's verifiers
(``pyverify`` with ``pyremote`` and ``pysummary``; ``rverify`` with ``rverify.R``) compute
every summary (``inspect_code.VariableSummary``) and verdict (``tests``).
``kernel_cache`` prebuilds caches a fresh home needs. ``runner`` (with ``runner_os``, and
``runner_verdicts``: where each instructor test runs, at its cell or after the notebook)
imports nothing of ours but its siblings, by path: it runs as ``python -I`` inside the
sandbox.

May import: errors, types, pyast, notebooks.
"""
