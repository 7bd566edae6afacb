"""What the runner keeps of a cell: its outputs as the grader reads them, within bounds.

Loaded by path by ``runner.py`` (``python -I``, no package): nbformat's and nbclient's
names only. ``_Client`` is nbclient dropping a flood of stream output as it arrives;
``normalise`` gives one output the fields of ``grader.types.Output``; ``merged_streams``
joins a stream's pieces once; ``reply_error`` and ``first_error`` read how a cell ended.
"""

from __future__ import annotations

import json
from typing import Any

from nbclient import NotebookClient

__all__ = ["MAX_STREAM", "MAX_TEXT", "Client", "first_error", "merged_streams", "normalise",
           "reply_error", "text"]


MAX_TEXT = 100_000  # characters kept per output
MAX_STREAM = 2_000_000  # characters a cell's stdout or stderr may send before the rest is dropped
# what a hidden cell of the bridge may send: its data line, of at most the export's limit of
# values; past it the line is cut (no marker, no valid JSON: the checks cannot be trusted)
MAX_BRIDGE = 256_000_000
RICH = ("text/html", "text/markdown", "text/latex", "image/svg+xml", "application/json")


def text(value: Any, limit: int = MAX_TEXT) -> str:
    """An output's text (a list of pieces or a string), cut at ``limit`` characters."""
    joined = "".join(map(str, value)) if isinstance(value, list) else str(value or "")
    return joined if len(joined) <= limit else joined[:limit] + "\n[... output truncated]"


class Client(NotebookClient):
    """nbclient, dropping what a cell writes to a stream past MAX_STREAM characters as the
    messages arrive (a cell printing forever used to fill the runner's memory until it
    failed); the streams a cell flooded are in ``flooded``. Hidden cells of the bridge
    (``capped`` false) are kept up to MAX_BRIDGE characters: their answer is one long
    line, and a kernel flooding it makes the answer unreadable, never a verdict."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.capped, self.flooded, self.sent = True, set(), {}

    def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None,
               cell_index: int) -> Any:
        content = msg.get("content") or {}
        if msg.get("msg_type") == "stream":
            limit = MAX_STREAM if self.capped else MAX_BRIDGE
            key = (msg.get("parent_header", {}).get("msg_id"), content.get("name", ""))
            seen, piece = self.sent.get(key, 0), str(content.get("text", ""))
            self.sent[key] = seen + len(piece)
            if seen + len(piece) > limit:
                self.flooded.add(key[1])
                if seen >= limit:
                    return None
                msg = {**msg, "content": {**content, "text": piece[:limit - seen]}}
        return super().output(outs, msg, display_id, cell_index)


def normalise(output: dict[str, Any]) -> dict[str, Any]:
    """One output as the fields of ``grader.types.Output``, with the conventions of
    ``grader.notebooks.load`` (ANSI escapes are removed outside, with ``strip_ansi``)."""
    kind = output.get("output_type", "")
    if kind == "stream":
        return {"kind": kind, "text": text(output.get("text")), "mime": [],
                "name": output.get("name", "")}
    if kind == "error":
        ename, trace = output.get("ename", ""), "\n".join(output.get("traceback") or ())
        said = f"{ename}: {output.get('evalue', '')}" + (f"\n{trace}" if trace else "")
        return {"kind": kind, "text": text(said), "mime": [], "name": ename}
    data = output.get("data", {})
    rich = [[m, text(v if isinstance(v, (str, list)) else json.dumps(v))]
            for m, v in data.items() if m in RICH]  # read by people and models: scanned too
    return {"kind": kind, "text": text(data.get("text/plain", "")), "name": "",
            "mime": [m for m in data if m != "text/plain"], "rich": rich}


def merged_streams(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive stream outputs of one name as one output, however the kernel's flushes
    fell. Joined once at the end: nbclient's own ``coalesce_streams`` re-scans the whole
    text on every message, which took 40 s for an R inspection line sent in many pieces."""
    out: list[dict[str, Any]] = []
    for o in outputs:
        last = out[-1] if out else None
        if (o.get("output_type") == "stream" and last is not None
                and last.get("output_type") == "stream" and last.get("name") == o.get("name")):
            last["text"] = last["text"] + [text(o.get("text"))]
        else:
            out.append({**o, "text": [text(o.get("text"))]} if o.get("output_type") == "stream"
                       else o)
    return out


def reply_error(reply: dict[str, Any] | None) -> str | None:
    """``ename: evalue`` from an execute reply, "" when it is ok, None when none came."""
    if not reply:
        return None
    content = reply.get("content", {})
    status = content.get("status")
    if status == "ok":
        return ""
    if status == "error":
        return text(f"{content.get('ename', '')}: {content.get('evalue', '')}".strip())
    return f"KernelReply: the kernel answered {status!r}"


def first_error(outputs: list[dict[str, Any]]) -> str:
    """``ename: evalue`` of the first error among nbformat outputs, or ""."""
    return next((text(f"{o.get('ename', '')}: {o.get('evalue', '')}".strip()) for o in outputs
                 if o.get("output_type") == "error"), "")

