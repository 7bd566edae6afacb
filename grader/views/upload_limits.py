"""How large an upload may be, said once, where the file is chosen.

Three limits meet at an upload: the uploader's (Streamlit's ``server.maxUploadSize`` in
``.streamlit/config.toml``, or a widget's own ``max_upload_size``), a notebook's
(``grader.notebooks.load.NotebookLimits.max_bytes``) and a ZIP's (what its files may
expand to, ``grader.notebooks.zip_parts.ArchiveLimits.max_total_bytes``). They are kept
consistent here: a notebook-only uploader takes ``NOTEBOOK_MB`` (what the loader
accepts), an uploader of notebooks and ZIPs takes ``UPLOAD_MB`` (the config's value,
which tests/test_upload_limits.py holds to it), and ``limits_text`` says both, with what
to do about a notebook that is too large (its outputs, nearly always). A page puts it in
the uploader's help or a caption beside it, so that a notebook is never refused at a
limit other than the one the page showed.
"""

from __future__ import annotations

from ..notebooks.load import DEFAULT_LIMITS, NotebookLimits
from ..notebooks.refusals import CLEAR_STEPS
from ..notebooks.zips import DEFAULT_ARCHIVE_LIMITS, ArchiveLimits

__all__ = ["NOTEBOOK_MB", "UPLOAD_MB", "limits_text", "notebook_limit_text"]

MB = 1_000_000
# The largest file an uploader takes: a class's ZIP. .streamlit/config.toml's
# server.maxUploadSize says the same (a test holds them together).
UPLOAD_MB = 200
NOTEBOOK_MB = DEFAULT_LIMITS.max_bytes // MB  # the largest notebook the grader reads


def _mb(n_bytes: int) -> str:
    return f"{n_bytes / MB:g} MB"


def notebook_limit_text(limits: NotebookLimits = DEFAULT_LIMITS) -> str:
    """The notebook limit and what to do above it, for an uploader of notebooks only:
    "Notebooks up to 20 MB each. A larger one is almost always its outputs: clear ..."."""
    return (f"Notebooks up to {_mb(limits.max_bytes)} each. A larger one is almost always "
            f"its outputs: {CLEAR_STEPS}.")


def limits_text(limits: NotebookLimits = DEFAULT_LIMITS,
                archive: ArchiveLimits = DEFAULT_ARCHIVE_LIMITS,
                upload_mb: int = UPLOAD_MB) -> str:
    """Both limits of an uploader of notebooks and ZIPs, with the advice for a notebook
    above its limit (the same file inside a ZIP is held to the same limit)."""
    return (f"Notebooks up to {_mb(limits.max_bytes)} each, in a ZIP too; a ZIP up to "
            f"{upload_mb} MB, holding at most {_mb(archive.max_total_bytes)} of files. A "
            f"larger notebook is almost always its outputs: {CLEAR_STEPS}.")
