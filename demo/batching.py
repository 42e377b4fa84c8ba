"""Gradio's dynamic batching (``batch=True``) for handlers written for one request.

With ``batch=True`` Gradio gathers the requests that wait for the same event into one call: each parameter arrives
as a list (one value per request) and each output must be a list. ``batched(fn, inputs, outputs, notice)`` adapts a
per-request handler (wrapped in friendly_errors, as every handler is):

- a batch of one behaves exactly like ``fn`` (its error is raised, and shown as the usual message);
- in a larger batch each request runs on its own, and a request's own error (empty text, a checkpoint that is not
  here, a slip of ours) becomes that request's outputs: the message in its ``notice`` output, the other outputs
  left as they were. The other requests of the batch answer normally;
- the parameters keep ``fn``'s names, which are the endpoint's parameter names for API clients.

The gain is in serving, not in the arithmetic: one worker-thread round trip and one queue slot for up to
``max_batch_size`` requests, instead of one each (benchmarks/batching.py measures it against the unbatched
handler). The batch runs in the language of its first request (Gradio passes one request per batch).
"""
from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

import gradio as gr

BATCH = dict(batch=True, max_batch_size=8)  # pass to demo.downloads.model_event with a batched handler
REFUSED = "⚠️ {message}"


def batched(fn: Callable, inputs: list, outputs: list, notice) -> Callable:
    """``fn`` as a batch handler for an event with these ``inputs`` (its first parameters; the others keep their
    defaults) and ``outputs``; ``notice`` (one of ``outputs``) shows a refused request's message."""
    where = next(index for index, component in enumerate(outputs) if component is notice)
    signature = inspect.signature(fn)
    kept = [p for p in signature.parameters.values()
            if p.name != "request" and not isinstance(p.default, gr.Progress)][:len(inputs)]
    request_parameter = inspect.Parameter("request", inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None,
                                          annotation=gr.Request)

    def refused(message: str) -> tuple:
        return tuple(REFUSED.format(message=message) if index == where else gr.skip()
                     for index in range(len(outputs)))

    @functools.wraps(fn)
    def handler(*args, **kwargs):
        request = kwargs.pop("request", args[len(kept)] if len(args) > len(kept) else None)
        columns = [*args[:len(kept)], *(kwargs[p.name] for p in kept[len(args):] if p.name in kwargs)]
        rows = list(zip(*columns))
        if len(rows) == 1:  # exactly the unbatched handler, errors included
            return tuple([value] for value in _as_tuple(fn(*rows[0], request=request), len(outputs)))
        answers = []
        for row in rows:
            try:
                answers.append(_as_tuple(fn(*row, request=request), len(outputs)))
            except gr.Error as error:  # friendly_errors made every failure one, with the learner's message
                answers.append(refused(str(error.message)))
        return tuple(list(column) for column in zip(*answers))

    handler.__signature__ = signature.replace(parameters=[*kept, request_parameter])
    handler.__annotations__ = {**getattr(fn, "__annotations__", {}), "request": gr.Request}
    handler.__wrapped_single__ = fn  # the per-request handler, for tests and benchmarks
    return handler


def _as_tuple(result, outputs: int) -> tuple:
    return (result,) if outputs == 1 else tuple(result)
