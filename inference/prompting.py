"""Chat templates and JSON schemas: turning a request into text and a grammar.

Chat templates come from the GGUF metadata (``tokenizer.chat_template``) and
are rendered with a sandboxed Jinja2 environment. A JSON schema becomes a
llama.cpp GBNF grammar so the model can only produce valid JSON; the output is
validated again with ``jsonschema`` and a failure is a typed error.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import jsonschema
from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .errors import ConfigError, OutputValidationError, SchemaError
from .types import ChatMessage

PLAIN_TEMPLATE = "plain"


@functools.lru_cache(maxsize=16)
def _compile(template: str) -> Any:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda x, **kw: json.dumps(x, ensure_ascii=False, **kw)
    try:
        return env.from_string(template)
    except TemplateError as exc:
        raise ConfigError(f"chat template does not compile: {exc}") from exc


def render_chat(messages: Sequence[ChatMessage], template: str | None,
                bos_token: str = "", eos_token: str = "") -> str:
    """The prompt text for ``messages``, ending where the assistant's reply starts."""
    if template is None:
        raise ConfigError("the model has no chat template; set `chat_template` for it "
                          f"in the config (for example {PLAIN_TEMPLATE!r})")
    if template == PLAIN_TEMPLATE:
        return "\n\n".join(m.content for m in messages) + "\n\n"
    try:
        return _compile(template).render(
            messages=[{"role": m.role, "content": m.content} for m in messages],
            add_generation_prompt=True,
            bos_token=bos_token,
            eos_token=eos_token,
        )
    except TemplateError as exc:
        raise ConfigError(f"chat template failed to render: {exc}") from exc


@functools.lru_cache(maxsize=64)
def schema_to_grammar(schema_text: str) -> str:
    """GBNF grammar for a JSON schema given as JSON text, or SchemaError."""
    try:
        schema = json.loads(schema_text)
    except json.JSONDecodeError as exc:
        raise SchemaError(f"schema is not valid JSON: {exc}") from exc
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise SchemaError(f"schema is not a valid JSON Schema: {exc.message}") from exc
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        return json_schema_to_gbnf(schema_text)
    except Exception as exc:  # the converter raises bare Exceptions/ValueErrors
        raise SchemaError(f"schema cannot be compiled to a grammar: {exc}") from exc


def check_schema(schema: dict[str, Any]) -> str:
    """Validate a schema early (before any model work); returns its grammar."""
    return schema_to_grammar(json.dumps(schema, separators=(",", ":")))


def parse_output(text: str, schema: dict[str, Any], metrics: Any = None) -> Any:
    """Decode and validate the model's JSON; OutputValidationError if it is not valid."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OutputValidationError(
            f"model output is not valid JSON: {exc}", text, metrics) from exc
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        raise OutputValidationError(
            f"model output does not match the schema: {exc.message}", text, metrics
        ) from exc
    return value
