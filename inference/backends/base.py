"""The one interface every backend implements.

A backend serves one route (one role). ``prefill`` turns a request into a
``KVHandle`` holding the real KV state of the prompt; ``decode`` continues from
a handle; ``generate`` lets one worker do both (the fallback, and the only path
for servers that cannot split); ``execute`` runs a request the route's way (the
client's one call). Failures are part of the interface: every
method raises an ``InferenceError`` subclass, never a library's own exception.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable

from ..config import EngineConfig, RouteConfig
from ..errors import BackendUnavailable, KVTransferError
from ..threads import ThreadBudget
from ..types import GenerationRequest, GenerationResult, KVHandle, WorkerHealth

log = logging.getLogger(__name__)

TokenCallback = Callable[[str], None]


class Backend(ABC):
    """Serves one route. Subclasses are registered by name in ``backends``."""

    def __init__(self, route: RouteConfig, config: EngineConfig, budget: ThreadBudget) -> None:
        self.route = route
        self.config = config
        self.budget = budget

    @abstractmethod
    def prefill(self, request: GenerationRequest) -> KVHandle:
        """Evaluate the prompt and return its KV state plus the first token."""

    @abstractmethod
    def decode(self, handle: KVHandle, on_token: TokenCallback | None = None) -> GenerationResult:
        """Load ``handle``'s state on the decode side and generate the rest."""

    @abstractmethod
    def generate(self, request: GenerationRequest,
                 on_token: TokenCallback | None = None) -> GenerationResult:
        """Prefill and decode on one worker, with no handoff."""

    def execute(self, request: GenerationRequest,
                on_token: TokenCallback | None = None) -> GenerationResult:
        """Run one request the way the route says: prefill, hand the KV over, decode;
        or one worker for both (``mode = "single"``, or ``fallback`` after a failed
        handoff, recorded as method "fallback"). Remote backends override this to
        choose servers and fail over between them."""
        if self.route.mode == "single":
            return self.generate(request, on_token)
        try:
            handle = self.prefill(request)
            return self.decode(handle, on_token)
        except (KVTransferError, BackendUnavailable) as exc:
            if not self.route.fallback:
                raise
            log.warning("role %s: disaggregated path failed (%s); one worker does both",
                        request.role, exc)
            result = self.generate(request, on_token)
            result.metrics.method = "fallback"
            result.metrics.failover = f"handoff failed ({type(exc).__name__}: {exc})"
            return result

    def context_length(self) -> int | None:
        """The context size a prompt must fit, where the backend knows it."""
        return None

    def prompt_tokens(self, request: GenerationRequest) -> list[int] | None:
        """The request's prompt as the route's model reads it (its chat template and
        tokenizer), where the backend can tokenize here; None where it cannot (the
        client then estimates). A backend that can keeps the tokens for the prefill of
        the same prompt, so counting a prompt and sending it tokenizes it once."""
        return None

    def deterministic(self, request: GenerationRequest) -> bool:
        """Whether the same request always gets the same reply here (greedy decoding on
        our own engine): then a second try of a reply that failed its schema is no use."""
        return False

    @abstractmethod
    def health(self) -> list[WorkerHealth]:
        """One entry per worker or server behind this route."""

    def warm(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Load models / open connections ahead of the first request."""

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Free what the backend holds."""
