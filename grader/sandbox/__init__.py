"""Running untrusted notebooks: the sandbox, and what a run saw of the student's variables.

``execution`` runs a notebook (nbclient and its kernel together, in ``runner``) inside
bubblewrap with no network, private namespaces, uids and a cgroup of the run's own
(``limits``, ``cgroup``), an allow-list view of the host (``view``), the assignment's
data wherever the code names it (``layout``, never through a link out of its assignment
folder, never stopped by a name the notebook's text holds), private run folders
(``run_folders``) and a stop of every run at once, on SIGTERM (``stopping``); the cgroup bounds
the memory of the run's processes together. ``launch`` starts the runner, hands it its
spec through a pipe (the tests' code is in no file) and holds every phase of the run to
its time from outside. As root a run has three parties (``warden``): the warden, which
alone may start, signal and kill the kernel as the *kernel uid*; the supervisor (the
runner with its verifiers) as another uid; and the student's kernel, which cannot see,
signal or trace the other two (``runner_start`` splits them; ``runner_kernel`` is
jupyter_client's side). ``tamper`` notices code that hides its errors and
``check_tamper`` code that reaches for the checks' paths. Values and the instructor's
tests are judged outside the student's kernel (``bridge``): the kernel only exports data
(``datacodec``, bound before the student's first cell by ``pykernel`` / ``rkernel.R``),
and the runner's verifiers (``pyverify`` with ``pyremote`` and ``pysummary``; ``rverify``
with ``rverify.R``) compute every summary (``inspect_code.VariableSummary``) and verdict
(``judged_tests``), resolving the names the instructor did not define from a clean namespace
(``clean_names``: built-ins, the solution's imports and packages), never the notebook's.
``kernel_cache`` prebuilds caches a fresh home needs. ``runner`` (with ``runner_os``,
``runner_io``, ``runner_start``, ``runner_kernel``, ``warden``, and ``runner_verdicts``:
where each instructor test runs, at its cell or after the notebook) imports nothing of
ours but its siblings, by path: it runs as ``python -I`` inside the sandbox.

May import: errors, types, pyast, notebooks.
"""
