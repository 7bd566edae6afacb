"""Which routes are trusted to judge a model the project knows is too small to.

A route's ``can_judge`` lets its model move scores (grader/judged_points.py). The
bundled models (SmolLM2-135M, Gemma-3-270M) are advisory: measured, they call complete
answers incomplete. A configuration that trusts a route to judge while its servers
serve one of them gets a warning that names the role, the server and the model,
wherever the models' state is shown (``grader grade``, the Dashboard).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from .config import EngineConfig
from .models import BUILTIN_MODELS
from .types import WorkerHealth

__all__ = ["judging_warnings", "too_small_to_judge"]


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def too_small_to_judge(model: str) -> str | None:
    """The built-in advisory model ``model`` names (a name, a GGUF file's name, an
    Ollama tag such as ``smollm2:135m``), or None."""
    served = _norm(model)
    if not served:
        return None
    for spec in BUILTIN_MODELS.values():
        if spec.can_judge:
            continue
        names = {_norm(spec.name), _norm(Path(spec.filename or "").stem)} - {""}
        if any(n in served for n in names):
            return spec.name
    return None


def judging_warnings(config: EngineConfig, health: Iterable[WorkerHealth]) -> list[str]:
    """One line per (role, server) trusted to judge with an advisory model."""
    health = list(health)
    out: list[str] = []
    for role, route in config.routes.items():
        if not config.can_judge(role):
            continue
        if route.remote:
            served = [(h.name, h.model) for h in health
                      if role in {r.strip() for r in h.role.split(",")} and h.model]
        else:
            served = [(f"{role} (embedded)", route.model)]
        for server, model in dict.fromkeys(served):
            small = too_small_to_judge(model)
            if small is not None:
                out.append(f"The {role} role may move scores (can_judge = true), but "
                           f"{server} serves {model}, which is too small to judge "
                           f"({small} is advisory: it calls complete answers incomplete). "
                           f"Set can_judge = false for the role, or serve a larger model.")
    return out
