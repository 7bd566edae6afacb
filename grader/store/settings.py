"""The app's settings that outlive a browser session: a page's options as last set.

A key (a page's option, "grade.use_llm") and a JSON value, written when the instructor
changes it and read when a page is drawn in a new session (a reload, another tab), so that
switching the models off stays off. A mixin of ``Store``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager
from typing import Any, Protocol

__all__ = ["StoreSettingsMixin"]


class _Tx(Protocol):
    def _tx(self, what: str, write: bool = True
            ) -> AbstractContextManager[sqlite3.Connection]: ...


class StoreSettingsMixin:
    """Settings of the app kept in the store; mixed into ``Store``."""

    def setting(self: _Tx, key: str, default: Any = None) -> Any:
        with self._tx(f"read setting {key}", write=False) as c:
            got = c.execute("SELECT value_json FROM app_settings WHERE key = ?",
                            (key,)).fetchone()
        return default if got is None else json.loads(got[0])

    def set_setting(self: _Tx, key: str, value: Any) -> None:
        text = json.dumps(value)
        with self._tx(f"write setting {key}") as c:
            c.execute("INSERT INTO app_settings (key, value_json, at) VALUES (?, ?, ?) ON "
                      "CONFLICT (key) DO UPDATE SET value_json = excluded.value_json, at = "
                      "excluded.at", (key, text, time.time()))
