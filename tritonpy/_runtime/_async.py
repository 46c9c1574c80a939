"""``execute`` for a model whose ``infer`` is ``async def`` (not a generator).

``Model.execute`` then returns the coroutine below; Triton's stub (release 24.04 and later)
runs it on its own event loop and waits for it, so ``infer`` can ``await`` other models
(``self.call_async``) or I/O. Everything else is the plain path's: decoding errors stay with
their request, merged rows, a failing merged call re-run request by request.
"""

from __future__ import annotations

import asyncio
from time import perf_counter
from typing import TYPE_CHECKING, Any, Dict, List, Sequence

from ._decoded import groups
from .errors import InputError

if TYPE_CHECKING:
    from ._decoded import Decoded
    from .model import Model


async def execute_async(model: Model, requests: Sequence[Any]) -> List[Any]:
    """Serve one batch of requests with an ``async def infer``: one response per request."""
    responses, ready = model._decode_all(requests)
    if model._merge and len(ready) > 1:
        # groups of different shapes are independent: await them together
        await asyncio.gather(*(_run_group(model, g, responses) for g in groups(ready)))
    else:
        await asyncio.gather(*(_run_one(model, item, responses) for item in ready))
    return responses


async def _timed_infer(model: Model, values: Dict[str, Any]) -> Any:
    started = perf_counter()
    result = await model.infer(**values)
    model._record_seconds(perf_counter() - started)
    return result


async def _run_group(model: Model, members: List[Decoded], responses: List[Any]) -> None:
    if len(members) == 1:
        await _run_one(model, members[0], responses)
        return
    try:
        merged = model._merged_values(members)
        model._split_group(members, await _timed_infer(model, merged), responses)
        return
    except Exception as exc:
        failure = f"{type(exc).__name__}: {exc}"
    model._log_isolation(len(members), failure)
    await asyncio.gather(*(_run_one(model, member, responses) for member in members))


async def _run_one(model: Model, item: Decoded, responses: List[Any]) -> None:
    try:
        result = await _timed_infer(model, model._one_values(item))
        model._finish_one(item, result, responses)
    except InputError as exc:
        responses[item.index] = model._refused(exc)
    except Exception as exc:
        responses[item.index] = model._internal_error(exc, "running infer()")
