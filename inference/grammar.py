"""JSON schema -> llama.cpp GBNF grammar, with the numeric bounds callers rely on.

llama-cpp-python's converter ignores ``minimum``/``maximum``, so a model asked
for a confidence in [0, 1] may write 1000000 and fail validation. We extend the
converter for the bounds a grader uses: integers in a small closed range become
an alternation of their literals, and numbers in [0, 1] get a rule that can only
produce such a number. Other bounds are still checked after generation.

Strings never hold a raw control character: the converter's ``char`` rule (``[^"\\]``)
lets a model write a newline or a tab inside a string, which ``json.loads`` refuses
("Invalid control character"), so we replace it with llama.cpp's own rule, which admits
them only escaped (``\\n``, ``\\u0009``).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

import jsonschema

from .errors import SchemaError

_MAX_INT_ALTERNATIVES = 1000
# llama.cpp's json-schema-to-grammar ``char``: no '"', no backslash but in an escape, no
# control character (U+0000-U+001F) nor DEL raw
_CHAR_RULE = r'char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] ' \
             r'[0-9a-fA-F] [0-9a-fA-F])'
_UNIT_NUMBER = '("0" ("." [0-9] [0-9]? [0-9]?)? | "1" ("." "0" "0"? "0"?)?) space'


def _converter_class() -> type:
    from llama_cpp.llama_grammar import SchemaConverter

    class BoundedSchemaConverter(SchemaConverter):  # type: ignore[misc, valid-type]
        def visit(self, schema: dict[str, Any], name: str) -> str:
            rule = _bounded_rule(schema)
            if rule is not None:
                return self._add_rule(name or "root", rule)
            return super().visit(schema, name)

    return BoundedSchemaConverter


def _bounded_rule(schema: dict[str, Any]) -> str | None:
    if not isinstance(schema, dict):
        return None
    lo, hi = schema.get("minimum"), schema.get("maximum")
    if lo is None or hi is None or "exclusiveMinimum" in schema or "exclusiveMaximum" in schema:
        return None
    kind = schema.get("type")
    if kind == "integer" and float(lo).is_integer() and float(hi).is_integer():
        lo_i, hi_i = int(lo), int(hi)
        if 0 <= hi_i - lo_i <= _MAX_INT_ALTERNATIVES:
            # Longest literals first keeps the grammar readable; GBNF alternation is not ordered.
            values = sorted(range(lo_i, hi_i + 1), key=lambda v: (-len(str(v)), v))
            return "(" + " | ".join(f'"{v}"' for v in values) + ") space"
    if kind == "number" and lo == 0 and hi == 1:
        return _UNIT_NUMBER
    return None


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
    converter = _converter_class()(prop_order={}, allow_fetch=False, dotall=False,
                                   raw_pattern=False)
    try:
        resolved = converter.resolve_refs(schema, "schema")
        converter.visit(resolved, "")
        grammar = converter.format_grammar()
    except Exception as exc:  # the converter raises bare Exception/ValueError/KeyError
        raise SchemaError(f"schema cannot be compiled to a grammar: {exc}") from exc
    return re.sub(r"(?m)^char ::= .*$", lambda _: _CHAR_RULE, grammar)


def check_schema(schema: dict[str, Any]) -> str:
    """Validate a schema early (before any model work); returns its grammar."""
    return schema_to_grammar(json.dumps(schema, separators=(",", ":")))
