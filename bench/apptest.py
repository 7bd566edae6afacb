"""The app, driven as an instructor drives it: Streamlit's AppTest on ``app.py``.

Benchmarks never import the app's modules (``app_pages``): they open a page through
``app.py`` and read what it shows, so the figures are the page's own. The models
load in the background while the first page draws; the sidebar says when they are
ready ("Models ready (...)"), and a benchmark waits for that before it times reruns.
"""

from __future__ import annotations

import time
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
READY = "Models ready"


def open_page(page: str, timeout_s: float = 300.0) -> AppTest:
    """AppTest on ``app_pages/<page>.py`` once the models are loaded (or fail loudly)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout_s)
    at.run()
    at.switch_page(f"app_pages/{page}.py")
    at.run()
    deadline = time.monotonic() + timeout_s
    while True:
        if at.exception:
            raise RuntimeError(f"the {page} page failed: {at.exception}")
        if failed := [e.value for e in at.sidebar.error]:
            raise RuntimeError(f"the models did not load: {failed[0]}")
        if any(str(c.value).startswith(READY) for c in at.sidebar.caption):
            return at
        if time.monotonic() > deadline:
            shown = [str(c.value) for c in at.sidebar.caption]
            raise RuntimeError(f"the models were not ready after {timeout_s:.0f} s: {shown}")
        time.sleep(1.0)
        at.run()
