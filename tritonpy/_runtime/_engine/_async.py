"""The engine's ``execute`` for a model whose ``infer`` is ``async def`` (not a generator).

``Model.execute`` then returns the coroutine below; Triton's stub (release 24.04 and later)
runs it on its own event loop and waits for it, so ``infer`` can ``await`` other models
(``self.call_async``) or I/O. Everything else is the plain path's: decoding errors stay with
their request, merged rows, a failing merged call re-run request by request.
"""

from __future__ import annotations

import asyncio
from time import perf_counter
from typing import TYPE_CHECKING, Any, Dict, List, Sequence

from ..errors import InputError
from ._decoded import groups
from ._merged import split_group

if TYPE_CHECKING:
    from ._decoded import Decoded
    from .engine import Engine


async def execute_async(engine: Engine, requests: Sequence[Any]) -> List[Any]:
    """Serve one batch of requests with an ``async def infer``: one response per request."""
    responses, ready = engine.decode_all(requests)
    if engine.merge and len(ready) > 1:
        # groups of different shapes are independent: await them together
        await asyncio.gather(*(_run_group(engine, g, responses) for g in groups(ready)))
    else:
        await asyncio.gather(*(_run_one(engine, item, responses) for item in ready))
    return responses


async def _timed_infer(engine: Engine, values: Dict[str, Any]) -> Any:
    started = perf_counter()
    result = await engine.infer(**values)
    engine.record_seconds(perf_counter() - started)
    return result


async def _run_group(engine: Engine, members: List[Decoded], responses: List[Any]) -> None:
    if len(members) == 1:
        await _run_one(engine, members[0], responses)
        return
    try:
        merged = engine.merged_values(members)
        split_group(engine, members, await _timed_infer(engine, merged), responses)
        return
    except Exception as exc:
        failure = f"{type(exc).__name__}: {exc}"
    engine.log_isolation(len(members), failure)
    await asyncio.gather(*(_run_one(engine, member, responses) for member in members))


async def _run_one(engine: Engine, item: Decoded, responses: List[Any]) -> None:
    try:
        result = await _timed_infer(engine, engine.one_values(item))
        responses[item.index] = engine.respond(item, result)
    except InputError as exc:
        responses[item.index] = engine.refused(exc)
    except Exception as exc:
        responses[item.index] = engine.internal_error(exc, "running infer()")
