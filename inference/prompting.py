"""Chat templates and output parsing: a request into prompt text, JSON out of a reply.

Chat templates come from the GGUF metadata (``tokenizer.chat_template``) and
are rendered with a sandboxed Jinja2 environment. Output of a schema-constrained
request (see ``grammar``) is validated again with ``jsonschema``; a failure is a
typed error carrying the raw text, never a default value.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import jsonschema
from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .errors import ConfigError, OutputValidationError
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


def check_template(template: str) -> None:
    """ConfigError unless ``template`` is ``"plain"`` or a Jinja template that compiles."""
    if template != PLAIN_TEMPLATE:
        _compile(template)


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


def parse_output(text: str, schema: dict[str, Any], metrics: Any = None) -> Any:
    """Decode and validate the model's JSON; OutputValidationError if it is not valid.

    A raw control character inside a string (a newline a server's grammar let through;
    ours admits them only escaped) is read as the character it means, as
    ``json.loads(strict=False)`` does: that is the JSON the model meant, not a repair of
    its content."""
    try:
        value = json.loads(text, strict=False)
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
