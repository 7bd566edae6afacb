"""Chat templates and output parsing: a request into prompt text, JSON out of a reply.

Chat templates come from the GGUF metadata (``tokenizer.chat_template``) and
are rendered with a sandboxed Jinja2 environment. Where a route's tokenizer cannot
run here (a remote server), ``estimate_tokens`` gives an upper estimate of a prompt's
tokens instead. Output of a schema-constrained
request (see ``grammar``) is validated again with ``jsonschema``; a failure is a
typed error carrying the raw text, never a default value.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from typing import Any

import jsonschema
from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .errors import ConfigError, OutputValidationError
from .types import ChatMessage

PLAIN_TEMPLATE = "plain"

# Without the model's tokenizer, a token is taken to cover at most this many
# letters of a lower-case word (two of a word with capitals inside: ALL CAPS,
# camelCase, base64), one digit, one punctuation mark, a run of spaces or tabs, or
# one byte of a non-ASCII character. Measured against SmolLM2's tokenizer on the
# bundled notebooks' cells and outputs: 1.5 times the real count at the median,
# 0.83 at the lowest (short outputs of numbers); callers keep a margin for the rest.
LETTERS_PER_TOKEN = 3
MESSAGE_TOKENS = 8  # a chat message's role markers, when the template is unknown
_UNITS = re.compile(r"[A-Za-z]+|[ \t]+|[\s\S]")


def estimate_tokens(text: str) -> int:
    """An upper estimate of ``text``'s tokens for a tokenizer we cannot run."""
    n = 0
    for m in _UNITS.finditer(text):
        unit = m[0]
        if unit[0] in " \t":
            n += len(unit) > 1  # one space joins the word after it
        elif unit[0].isascii() and unit[0].isalpha():
            per = 2 if any(c.isupper() for c in unit[1:]) else LETTERS_PER_TOKEN
            n += -(-len(unit) // per)
        else:
            n += len(unit.encode("utf-8"))
    return n


def estimate_prompt_tokens(messages: Sequence[ChatMessage]) -> int:
    """An upper estimate of the chat prompt of ``messages``, its template unknown."""
    return MESSAGE_TOKENS + sum(MESSAGE_TOKENS + estimate_tokens(m.content) for m in messages)


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
