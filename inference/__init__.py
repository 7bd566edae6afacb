"""The embedded, disaggregated inference engine.

    from inference import DisaggregatedClient, GenerationRequest
    client = DisaggregatedClient()            # grader.toml, or the embedded default
    result = client.generate(GenerationRequest.chat("code", "Be brief.", "Hi"))
    result.text, result.metrics.prefill_tps, result.metrics.kv_bytes

Never imports streamlit; llama.cpp is imported only when an embedded route
serves its first request.
"""

from .backends import Backend
from .client import DisaggregatedClient
from .config import (
    EngineConfig,
    RouteConfig,
    data_dir,
    default_config,
    load_config,
    parse_config,
)
from .errors import (
    BackendError,
    BackendUnavailable,
    ConfigError,
    ContextOverflowError,
    InferenceError,
    InvalidRequestError,
    KVFormatError,
    KVIncompatibleError,
    KVTransferError,
    ModelLoadError,
    OutputValidationError,
    SchemaError,
    StreamInterrupted,
    UnknownRoleError,
)
from .metrics import HistoryFilter, MetricsHistory, percentile, summarize
from .models import BUILTIN_MODELS, ModelSpec
from .prompting import estimate_tokens
from .registry import backend_names, register_backend
from .types import (
    ChatMessage,
    GenerationRequest,
    GenerationResult,
    KVHandle,
    RequestMetrics,
    TokenCount,
    WorkerHealth,
)

__all__ = [
    "BUILTIN_MODELS",
    "Backend",
    "BackendError",
    "BackendUnavailable",
    "ChatMessage",
    "ConfigError",
    "ContextOverflowError",
    "DisaggregatedClient",
    "EngineConfig",
    "GenerationRequest",
    "GenerationResult",
    "HistoryFilter",
    "InferenceError",
    "InvalidRequestError",
    "KVFormatError",
    "KVHandle",
    "KVIncompatibleError",
    "KVTransferError",
    "MetricsHistory",
    "ModelLoadError",
    "ModelSpec",
    "OutputValidationError",
    "RequestMetrics",
    "RouteConfig",
    "SchemaError",
    "StreamInterrupted",
    "TokenCount",
    "UnknownRoleError",
    "WorkerHealth",
    "backend_names",
    "data_dir",
    "default_config",
    "estimate_tokens",
    "load_config",
    "parse_config",
    "percentile",
    "register_backend",
    "summarize",
]
