"""One reply as it is decoded: tokens to text, stop strings, streaming, the finish.

The serial decode loop (``EmbeddedBackend._run_decode``) and the batched one
(``batched.BatchDecoder``) feed a reply token by token through the same ``Reply``, so a
request's text, its stream and its finish reason are the same whichever decoded it.
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Callable

from ..prompting import parse_output
from ..types import GenerationRequest, GenerationResult, RequestMetrics
from ._llama import LoadedModel

__all__ = ["Reply"]


class Reply:
    """The text of one reply so far; ``push`` each sampled token in order."""

    def __init__(self, model: LoadedModel, request: GenerationRequest, max_tokens: int,
                 metrics: RequestMetrics, t_start: float,
                 on_token: Callable[[str], None] | None) -> None:
        self.model, self.request, self.max_tokens = model, request, max_tokens
        self.metrics, self.t_start = metrics, t_start
        self._emit = on_token or (lambda _s: None)
        self._utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self.text, self.tokens = "", []
        self.finish = "length"
        # Hold back as many characters as a stop string could still need, so the
        # stream never shows text that the stop string later cuts off.
        self._holdback = max((len(s) for s in request.stop), default=1) - 1
        self._emitted, self._cut = 0, False

    def push(self, token: int) -> bool:
        """Take the next sampled token; True when the reply goes on (the token must then
        be evaluated so the next one can be sampled)."""
        if self.model.is_eog(token):
            self.finish = "stop"
            return False
        self.tokens.append(token)
        piece = self._utf8.decode(self.model.piece(token))
        if len(self.tokens) == 1:
            self.metrics.ttft_seconds = time.perf_counter() - self.t_start
        self.text += piece
        hit = _first_stop(self.text, self.request.stop)
        if hit is not None:
            self.text, self.finish, self._cut = self.text[:hit], "stop", True
            return False
        if len(self.text) - self._holdback > self._emitted:
            self._emit(self.text[self._emitted:len(self.text) - self._holdback])
            self._emitted = len(self.text) - self._holdback
        return len(self.tokens) < self.max_tokens

    def result(self) -> GenerationResult:
        """The finished reply (parsed when the request has a schema: OutputValidationError
        when the model's JSON is not valid)."""
        if not self._cut:
            self.text += self._utf8.decode(b"", final=True)
        if len(self.text) > self._emitted:
            self._emit(self.text[self._emitted:])
            self._emitted = len(self.text)
        m = self.metrics
        m.decode_tokens = len(self.tokens)
        m.finish_reason = self.finish
        m.total_seconds = time.perf_counter() - self.t_start
        m.finished_at = time.time()
        parsed = (parse_output(self.text, self.request.json_schema, m)
                  if self.request.json_schema is not None else None)
        return GenerationResult(text=self.text, finish_reason=self.finish,  # type: ignore[arg-type]
                                metrics=m, parsed=parsed, tokens=tuple(self.tokens))


def _first_stop(text: str, stops: tuple[str, ...]) -> int | None:
    hits = [i for s in stops if (i := text.find(s)) >= 0]
    return min(hits) if hits else None
