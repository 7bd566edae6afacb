"""A real Jupyter kernel and the ``kernel`` callable the sandbox's runner gives a bridge
(``grader.sandbox.bridge.KernelCall``), for the verifier tests that run a bridge against a
kernel without the sandbox: what they test is the bridge, not the runner.

Used by tests/test_r_verifier.py and tests/test_verifier_names.py.
"""

from __future__ import annotations

import queue
import time


class KernelSession:
    """A kernel of ``name`` ("ir", "python3"); calling it runs a cell as the runner's hidden
    cells run: its stdout, its error, and how it ended ("ok", "timeout" after an interrupt
    that was not answered either, "dead")."""

    def __init__(self, name: str) -> None:
        from jupyter_client import KernelManager

        self.km = KernelManager(kernel_name=name)
        self.km.start_kernel()
        self.kc = self.km.blocking_client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)

    def __call__(self, code: str, timeout_s: float) -> dict:
        msg_id = self.kc.execute(code, store_history=False)
        started, outcome, text, error = time.monotonic(), "ok", [], ""
        deadline = started + timeout_s
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=max(0.05, deadline - time.monotonic()))
            except queue.Empty:
                if not self.km.is_alive():
                    outcome = "dead"
                    break
                if outcome == "timeout":
                    break  # no idle even after the interrupt
                outcome, deadline = "timeout", time.monotonic() + 10
                self.km.interrupt_kernel()
                continue
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content.get("name") == "stdout":
                text.append(content["text"])
            elif kind == "error":
                error = f"{content['ename']}: {content['evalue']}"
            elif kind == "status" and content["execution_state"] == "idle":
                break
        return {"outcome": outcome, "text": "".join(text), "error": error,
                "seconds": time.monotonic() - started}

    def cell(self, code: str) -> str:
        """Run ``code``, which must end well; its stdout."""
        got = self(code, 60)
        assert (got["outcome"], got["error"]) == ("ok", ""), got
        return got["text"]

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)
