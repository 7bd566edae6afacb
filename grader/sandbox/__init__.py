"""Running untrusted notebooks: the sandbox, and what a run saw of the student's variables.

``execution`` runs a notebook (nbclient and its kernel together, in ``runner``) inside
bubblewrap with no network, private namespaces, a uid and a cgroup of the run's own
(``limits``, ``cgroup``), an allow-list view of the host (``view``), the assignment's
data wherever the code names it (``layout``) and private run folders (``runs``);
``tamper`` notices code that hides its errors; ``inspect_code`` summarises variables in
the kernel (``VariableSummary``); ``kernel_cache`` prebuilds caches a fresh home needs.
``runner`` imports nothing of ours: it runs as ``python -I`` inside the sandbox.

May import: errors, types, pyast, notebooks.
"""
