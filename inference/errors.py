"""The inference package's one exception tree.

    InferenceError
    ├── ConfigError              bad or unreadable cluster config
    │   └── UnknownRoleError     a request names a role with no route
    ├── InvalidRequestError      the request itself is unusable
    │   ├── ContextOverflowError prompt (+ max_tokens) does not fit the context
    │   └── SchemaError          the JSON schema cannot be compiled to a grammar
    ├── ModelLoadError           model file missing, unreadable or corrupt
    ├── BackendError             a worker or server failed while serving
    │   ├── KVTransferError      KV state could not be moved or loaded
    │   └── BackendUnavailable   the route's server is down / unreachable
    └── OutputValidationError    the model's output failed the request's schema

Errors from llama.cpp, sockets or JSON are translated at the boundary with
``raise X(...) from exc``; nothing is swallowed and no default is invented.
"""

from __future__ import annotations

from typing import Any


class InferenceError(Exception):
    """Base class for every error the inference package raises."""


class ConfigError(InferenceError):
    pass


class UnknownRoleError(ConfigError):
    def __init__(self, role: str, known: list[str]) -> None:
        self.role = role
        self.known = sorted(known)
        super().__init__(
            f"unknown role {role!r}: configured roles are {', '.join(self.known) or '(none)'}"
        )


class InvalidRequestError(InferenceError):
    pass


class ContextOverflowError(InvalidRequestError):
    def __init__(self, prompt_tokens: int, max_tokens: int, n_ctx: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.n_ctx = n_ctx
        super().__init__(
            f"prompt of {prompt_tokens} tokens plus max_tokens={max_tokens} does not fit "
            f"the context of {n_ctx} tokens"
        )


class SchemaError(InvalidRequestError):
    pass


class ModelLoadError(InferenceError):
    pass


class BackendError(InferenceError):
    pass


class KVTransferError(BackendError):
    pass


class BackendUnavailable(BackendError):
    pass


class OutputValidationError(InferenceError):
    """The model produced text that is not valid for the requested schema.

    Carries the raw text and the metrics so the caller can show what happened
    and decide (repair, or mark for review); there is never a default value.
    """

    def __init__(self, message: str, text: str, metrics: Any = None) -> None:
        self.text = text
        self.metrics = metrics
        super().__init__(message)
