"""Real ``python -m inference.server`` processes for tests, on 127.0.0.1 only: the
launcher lives in ``inference.server.launch`` (benchmarks use it too)."""

from inference.server.launch import (
    PYTHON,
    REPO,
    ServerProcess,
    ServerStartError,
    free_port,
    start_server,
)

__all__ = ["PYTHON", "REPO", "ServerProcess", "ServerStartError", "free_port", "start_server"]
