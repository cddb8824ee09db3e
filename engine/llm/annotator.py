"""LLMAnnotator: the three A-MEM stages over any `Backend`, with repair, re-ask and per-item fallback.

For each stage: build every prompt, send them as one batch, validate every answer into the typed
schema, then check it makes sense (engine.annotate.sanity). Answers that fail are re-asked once, as
one more batch: a truncated one (finish_reason 'length') afresh with twice the token budget, any
other with the rejected answer and the reason. Items whose answer is still bad, or whose request
failed after the client's retries, go to the fallback annotator, item by item, and are counted by
reason (and, for the note stage, marked annotated_by="embedded-fallback" so `amem reannotate` can
redo them). Nothing is dropped: every input gets a result.
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

import engine.llm.answers as answers
import engine.llm.prompts as prompts
from engine.annotate.protocol import Annotator
from engine.annotate.schemas import Annotation, EvolveRequest, LinkChoice, LinkRequest, NeighbourUpdate
from engine.config import Config
from engine.cost import CostMeter
from engine.errors import (
    LLMBadOutput,
    LLMError,
    LLMFormatRejected,
    LLMRejected,
    LLMRetryable,
    LLMTimeout,
    LLMTruncated,
)
from engine.llm.prompts import Prompt
from engine.model.note import Interaction

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")  # a stage request
A = TypeVar("A")  # one item of a stage answer
FALLBACK_MARK = "embedded-fallback"


class Backend(Protocol):
    """Where completions come from: an OpenAI-compatible server or in-process vLLM."""

    name: str

    def complete_batch(
        self, stage: str, prompts: Sequence[Prompt], schema: dict[str, Any], max_tokens: int | None = None
    ) -> list[str | LLMError]:
        """One answer text (or the LLMError it ended with) per prompt, same order; records its own cost.

        `max_tokens` overrides config.llm.max_tokens; an answer that hits it is an LLMTruncated."""
        ...

    def close(self) -> None: ...


class LLMAnnotator:
    """Implements `engine.annotate.protocol.Annotator` over a `Backend`."""

    def __init__(self, backend: Backend, config: Config, cost: CostMeter, fallback: Annotator) -> None:
        self.name = backend.name
        self._backend = backend
        self._config = config
        self._cost = cost
        self._fallback = fallback
        """The embedded annotator in production: does the items the LLM could not."""
        self._schemas = prompts.stage_schemas(config.write)

    # --- stages --------------------------------------------------------------------------------------

    def annotate(self, items: Sequence[Interaction]) -> list[Annotation]:
        limit = self._config.write.max_content_chars
        kw, tags = self._config.write.max_keywords, self._config.write.max_tags
        results = self._run(
            "note",
            [prompts.note_prompt(i, limit) for i in items],
            lambda raw, j: answers.parse_annotation(
                raw, max_keywords=kw, max_tags=tags, content=items[j].content
            ),
        )
        failed = [i for i, r in enumerate(results) if isinstance(r, LLMError)]
        if failed:
            backup = self._fallback.annotate([items[i] for i in failed])
            for i, annotation in zip(failed, backup, strict=True):
                results[i] = dataclasses.replace(annotation, annotated_by=FALLBACK_MARK)
        return results  # type: ignore[return-value]

    def judge_links(self, requests: Sequence[LinkRequest]) -> list[list[LinkChoice]]:
        limit = self._config.write.max_content_chars
        asked = [i for i, r in enumerate(requests) if r.candidates]  # no candidates: nothing to ask
        results = self._run(
            "link",
            [prompts.link_prompt(requests[i], limit) for i in asked],
            lambda raw, j: answers.parse_links(raw, requests[asked[j]].candidates),
        )
        return self._settle("link", requests, asked, results, self._fallback.judge_links)

    def evolve(self, requests: Sequence[EvolveRequest]) -> list[list[NeighbourUpdate]]:
        limit = self._config.write.max_content_chars
        kw, tags = self._config.write.max_keywords, self._config.write.max_tags
        asked = [i for i, r in enumerate(requests) if r.neighbours]
        results = self._run(
            "evolve",
            [prompts.evolve_prompt(requests[i], limit) for i in asked],
            lambda raw, j: answers.parse_updates(
                raw, requests[asked[j]].neighbours, max_keywords=kw, max_tags=tags
            ),
        )
        updates = self._settle("evolve", requests, asked, results, self._fallback.evolve)
        # One decision for both backends: the embedded guards veto an LLM supersession without a shared attribute.
        vet = getattr(self._fallback, "vet_supersessions", None)
        return vet(requests, updates) if vet is not None else updates

    def close(self) -> None:
        self._backend.close()

    # --- shared path -----------------------------------------------------------------------------------

    def _run(self, stage: str, batch: list[Prompt], parse: Callable[[str, int], T]) -> list[T | LLMError]:
        """Ask, validate, re-ask the failed ones once; an item's result is its value or its last error."""
        if not batch:
            return []
        self._cost.record(stage, items=len(batch))
        schema = self._schemas[stage]
        answers = self._backend.complete_batch(stage, batch, schema)
        results = [_parse(answer, i, parse) for i, answer in enumerate(answers)]
        bad = [i for i, r in enumerate(results) if isinstance(r, LLMBadOutput)]
        cut = [i for i in bad if isinstance(results[i], LLMTruncated)]
        wrong = [i for i in bad if not isinstance(results[i], LLMTruncated)]
        if bad:
            self._cost.record(stage, retries=len(bad))
        if cut:  # the same question with room to finish
            bigger = 2 * self._config.llm.max_tokens
            again = self._backend.complete_batch(stage, [batch[i] for i in cut], schema, max_tokens=bigger)
            for i, answer in zip(cut, again, strict=True):
                results[i] = _parse(answer, i, parse)
        if wrong:
            retry = [_retry_prompt(batch[i], answers[i], results[i]) for i in wrong]  # type: ignore[arg-type]
            for i, answer in zip(wrong, self._backend.complete_batch(stage, retry, schema), strict=True):
                results[i] = _parse(answer, i, parse)
        self._report(stage, results)
        return results

    def _settle(
        self,
        stage: str,
        requests: Sequence[R],
        asked: list[int],
        results: list[tuple[list[A], int] | LLMError],
        fallback: Callable[[list[R]], list[list[A]]],
    ) -> list[list[A]]:
        """Per request: the validated answer (counting its dropped handles), the fallback's, or nothing."""
        out: list[list[A]] = [[] for _ in requests]
        failed = [i for i, result in zip(asked, results, strict=True) if isinstance(result, LLMError)]
        dropped = 0
        for i, result in zip(asked, results, strict=True):
            if not isinstance(result, LLMError):
                out[i], num_dropped = result
                dropped += num_dropped
        if dropped:
            self._cost.record(stage, dropped_links=dropped)
        if failed:
            for i, value in zip(failed, fallback([requests[i] for i in failed]), strict=True):
                out[i] = value
        return out

    def _report(self, stage: str, results: Sequence[object]) -> None:
        errors = [r for r in results if isinstance(r, LLMError)]
        if errors:
            self._cost.record_fallbacks(stage, collections.Counter(fallback_reason(e) for e in errors))
            log.warning(
                "llm stage %s: %d of %d items fall back to %s; first error: %s",
                stage,
                len(errors),
                len(results),
                self._fallback.name,
                errors[0],
            )


def fallback_reason(error: LLMError) -> str:
    """The short name an item's fallback is counted under."""
    if isinstance(error, LLMRejected):
        return error.reason
    for kind, reason in _REASONS:
        if isinstance(error, kind):
            return reason
    return "http"


_REASONS: tuple[tuple[type[LLMError], str], ...] = (
    (LLMTruncated, "truncated"),
    (LLMBadOutput, "invalid"),
    (LLMFormatRejected, "format"),
    (LLMTimeout, "timeout"),
    (LLMRetryable, "transport"),
)
"""Most specific first. 'transport', 'timeout', 'format' and 'http' mean the request got no answer."""


def _retry_prompt(prompt: Prompt, answer: str | LLMError, error: LLMBadOutput) -> Prompt:
    # A garbled HTTP response (no choices, not JSON) has no answer text to show back: ask afresh.
    return prompts.repair_prompt(prompt, answer, error) if isinstance(answer, str) else prompt


def _parse(answer: str | LLMError, index: int, parse: Callable[[str, int], T]) -> T | LLMError:
    if isinstance(answer, LLMError):
        return answer
    try:
        return parse(answer, index)
    except LLMBadOutput as exc:
        return exc
