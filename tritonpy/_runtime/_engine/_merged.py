"""The merged path of the engine: several requests of one call decoded, merged into one
``infer`` call per group, and the result split back into one response per request.

A request served alone never comes here (``serve_alone`` and ``serve_direct`` are the hot
paths); this module holds what only merging needs, including the isolation of a failing group
(each member run alone, so that a poison request fails on its own).
"""

from __future__ import annotations

from typing import (
    TYPE_CHECKING,
    Any,
    Dict,
    FrozenSet,
    Hashable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
)

import numpy as np

from .._declarations import PARAMETERS_ARGUMENT
from ..errors import InputError
from ..response import Response, make_inference_response
from ._alone import check_not_needed, rows_error
from ._decoded import Decoded, groups, union_requested

if TYPE_CHECKING:
    from .engine import Engine


def execute_merged(engine: Engine, requests: Sequence[Any]) -> List[Any]:
    """Several requests of one ``execute()`` call, merged where they can be."""
    if engine.merges_directly and not engine.checks_cancelled:
        # (Model.execute has tried _merge_direct first)
        direct = engine.merge_directly(requests)
        if direct is not None:
            return direct
    responses, ready = engine.decode_all(requests)
    if len(ready) > 1:
        for members in groups(ready):
            engine.run_group(members, responses)
    else:
        for item in ready:
            engine.run_one(item, responses)
    return responses


def merge_directly(engine: Engine, requests: Sequence[Any]) -> Optional[List[Any]]:
    """The usual merged call in one pass, for models whose requests carry no parameters:
    every request sends each input once, all of them merge into one ``infer`` call (or,
    when their ragged shapes differ, one per group). None as soon as a request is anything
    else; the general path then decides, and words the errors."""
    decode_present = engine.decode_present
    decoded: List[Tuple[Dict[str, Any], int]] = []
    key_inputs = engine.key_inputs
    keys: List[Hashable] = []
    for request in requests:
        try:
            one = decode_present(request.inputs())
        except Exception:
            return None
        if one is None:
            return None
        decoded.append(one)
        if key_inputs:  # (every input is there: the key of _decode without absent ones)
            values = one[0]
            keys.append(tuple([codec.group_key(values[name]) for name, codec in key_inputs]))
    wanted = [engine.requested_of(r) for r in requests] if engine.may_request_fewer else None
    if keys and keys.count(keys[0]) != len(keys):
        return run_groups(engine, decoded, keys, wanted)
    counts = [rows for _, rows in decoded]
    responses: List[Any] = [None] * len(requests)
    try:
        # merging may fail for one request (an Image decodes its rows here)
        merged = {
            name: codec.merge([values[name] for values, _ in decoded])
            for name, codec in engine.input_plan
        }
        if engine.builtin is not None:
            engine.builtin.batch_rows(sum(counts))
        result = engine.timed_infer(merged)
        engine.split(result, counts, wanted, range(len(requests)), responses)
        return responses
    except Exception as exc:
        return engine.isolate(requests, f"{type(exc).__name__}: {exc}")


def run_groups(
    engine: Engine,
    decoded: List[Tuple[Dict[str, Any], int]],
    keys: List[Hashable],
    wanted: Optional[List[Optional[FrozenSet[str]]]],
) -> List[Any]:
    """Decoded requests whose group keys differ: one merged call per group, as the general
    path runs them."""
    ready = [
        Decoded(index, values, rows, None if wanted is None else wanted[index], keys[index])
        for index, (values, rows) in enumerate(decoded)
    ]
    responses: List[Any] = [None] * len(ready)
    for members in groups(ready):
        engine.run_group(members, responses)
    return responses


def isolate(engine: Engine, requests: Sequence[Any], failure: str) -> List[Any]:
    """After a merged call of all ``requests`` failed: as _run_group does, each request
    alone, so that only the bad ones fail."""
    responses, ready = engine.decode_all(requests)
    engine.log_isolation(len(ready), failure)
    for item in ready:
        engine.run_one(item, responses)
    return responses


def decode_all(engine: Engine, requests: Sequence[Any]) -> Tuple[List[Any], List[Decoded]]:
    """Decode every request: (responses with the refused ones filled, the decoded)."""
    responses: List[Any] = [None] * len(requests)
    ready: List[Decoded] = []
    check = engine.checks_cancelled
    for index, request in enumerate(requests):
        if check and request.is_cancelled():
            responses[index] = engine.cancelled_response()
            continue
        try:
            ready.append(engine.decode(index, request))
        except InputError as exc:
            responses[index] = engine.refused(exc)
        except Exception as exc:
            responses[index] = engine.internal_error(exc, "decoding the inputs")
    return responses, ready


def run_group(engine: Engine, members: List[Decoded], responses: List[Any]) -> None:
    if len(members) == 1:
        engine.run_one(members[0], responses)
        return
    try:
        merged = engine.merged_values(members)
        split_group(engine, members, engine.timed_infer(merged), responses)
        return
    except Exception as exc:
        failure = f"{type(exc).__name__}: {exc}"
    # Isolate the culprit: run each request alone so only the bad ones fail. (Outside the
    # except block, so their tracebacks are not chained to the merged failure.)
    engine.log_isolation(len(members), failure)
    for member in members:
        engine.run_one(member, responses)


def merged_values(engine: Engine, members: List[Decoded]) -> Dict[str, Any]:
    merged = {
        name: None
        if members[0].values[name] is None
        else codec.merge([m.values[name] for m in members])
        for name, codec in engine.input_plan
    }
    if engine.wants_parameters:
        merged[PARAMETERS_ARGUMENT] = [m.parameters for m in members for _ in range(m.rows)]
    if engine.builtin is not None:
        engine.builtin.batch_rows(sum(m.rows for m in members))
    return merged


def split_group(engine: Engine, members: List[Decoded], result: Any, responses: List[Any]) -> None:
    wanted = [m.requested for m in members]
    engine.split(result, [m.rows for m in members], wanted, [m.index for m in members], responses)


def split(
    engine: Engine,
    result: Any,
    counts: List[int],
    wanted: Optional[List[Optional[FrozenSet[str]]]],
    indices: Sequence[int],
    responses: List[Any],
) -> None:
    """The merged ``result`` of the requests at ``indices`` (``counts`` rows each; the
    outputs each asked for in ``wanted``, None: all of them) encoded once and split back
    into one response per request."""
    parameters: Optional[Mapping[str, Any]] = None
    if type(result) is not dict and isinstance(result, Response):
        result, parameters = result.outputs, result.parameters
    encoded = encode(engine, result, union_requested(wanted), sum(counts))
    # each encoded output split once; every request then takes its part of each (a plain
    # Tensor's part goes to pb_utils.Tensor without the codec call)
    columns = [
        (name, codec, plain is not None, codec.split(encoded[name], counts))
        for name, codec, plain in engine.output_entries
        if name in encoded
    ]
    pb = engine.pb
    Tensor = pb.Tensor
    for position, index in enumerate(indices):
        requested = None if wanted is None else wanted[position]
        tensors = []
        for name, codec, plain, parts in columns:  # (a loop: no comprehension call)
            if requested is None or name in requested:
                part = parts[position]
                tensors.append(
                    Tensor(name, part)
                    if plain and type(part) is np.ndarray
                    else codec.to_tensor(name, part, pb)
                )
        responses[index] = (
            make_inference_response(pb, tensors, parameters)
            if parameters
            else pb.InferenceResponse(output_tensors=tensors)
        )


def log_isolation(engine: Engine, count: int, failure: str) -> None:
    engine.logger.log_verbose(
        f"{engine.model_name}: merged batch of {count} requests failed ({failure}); "
        f"running them one by one"
    )


def run_one(engine: Engine, item: Decoded, responses: List[Any]) -> None:
    try:
        result = engine.timed_infer(engine.one_values(item))
        responses[item.index] = engine.respond(item, result)
    except InputError as exc:
        responses[item.index] = engine.refused(exc)
    except Exception as exc:
        responses[item.index] = engine.internal_error(exc, "running infer()")


def encode(
    engine: Engine, result: Any, needed: Optional[FrozenSet[str]], rows: int
) -> Dict[str, Any]:
    engine.check_result(result)
    encoded: Dict[str, Any] = {}
    batched = engine.batched
    for name, codec in engine.output_plan:
        if name not in result:
            check_not_needed(engine, name, needed, result)
            continue
        value = codec.encode(name, result[name], batched)
        if batched and len(value) != rows:
            raise rows_error(name, rows, value)
        encoded[name] = value
    return encoded
