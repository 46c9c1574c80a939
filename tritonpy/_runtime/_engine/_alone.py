"""One request alone, from its inputs to its response (the same steps and errors as a merged
group, with no merge or split in between): the engine's general path for a request that the
direct path (``_direct.py``) does not take."""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any, FrozenSet, Mapping, Optional

import numpy as np

from ..errors import InputError, OutputError
from ..response import Response, make_inference_response
from ._decoded import Decoded

if TYPE_CHECKING:
    from .engine import Engine


def serve_alone(engine: Engine, index: int, request: Any) -> Any:
    """One request on its own: ``CANCELLED`` when its client cancelled it, else computed."""
    if engine.checks_cancelled and request.is_cancelled():
        return engine.cancelled_response()
    return engine.compute_alone(index, request)


def compute_alone(engine: Engine, index: int, request: Any) -> Any:
    """:func:`serve_alone` once the request is known not to be cancelled."""
    try:
        item = engine.decode(index, request, keyed=False)
    except InputError as exc:
        return engine.refused(exc)
    except Exception as exc:
        return engine.internal_error(exc, "decoding the inputs")
    try:
        values = engine.one_values(item) if engine.reshapes_alone else item.values
        started = perf_counter()
        result = engine.infer(**values)
        engine.record_seconds(perf_counter() - started)
        return engine.respond(item, result)
    except InputError as exc:
        return engine.refused(exc)
    except Exception as exc:
        return engine.internal_error(exc, "running infer()")


def respond(engine: Engine, item: Decoded, result: Any) -> Any:
    """The response of one request alone: each output encoded, checked and wrapped into its
    tensor in one pass."""
    parameters: Optional[Mapping[str, Any]] = None
    if type(result) is not dict and isinstance(result, Response):
        result, parameters = result.outputs, result.parameters
    engine.check_result(result)
    pb, requested, batched = engine.pb, item.requested, engine.batched
    tensors = []
    for name, codec, plain in engine.output_entries:
        if name not in result:
            check_not_needed(engine, name, requested, result)
            continue
        value = result[name]
        if plain is not None and type(value) is np.ndarray and plain.fits(value, batched):
            if batched and len(value) != item.rows:
                raise rows_error(name, item.rows, value)
            if requested is None or name in requested:
                tensors.append(pb.Tensor(name, value))
            continue
        value = codec.encode(name, value, batched)
        if batched and len(value) != item.rows:
            raise rows_error(name, item.rows, value)
        if requested is None or name in requested:
            tensors.append(codec.to_tensor(name, value, pb))
    if parameters:
        return make_inference_response(pb, tensors, parameters)
    return pb.InferenceResponse(output_tensors=tensors)


def check_result(engine: Engine, result: Any) -> None:
    """infer() returned a mapping of declared output names."""
    names = engine.output_names
    # type() first: isinstance against the Mapping ABC costs a microsecond a call
    if type(result) is not dict and not isinstance(result, Mapping):
        raise OutputError(
            f"{engine.class_name}.infer() must return a dict {{output name: value}}, got "
            f"{type(result).__name__}; declared outputs: {sorted(names)}"
        )
    if not names.issuperset(result):
        unknown = [name for name in result if name not in names]
        raise OutputError(
            f"{engine.class_name}.infer() returned {unknown}, which are not declared "
            f"outputs; declared: {sorted(names)}"
        )


def check_not_needed(
    engine: Engine, name: str, needed: Optional[FrozenSet[str]], result: Mapping[str, Any]
) -> None:
    """An output infer() left out is fine only when no request asked for it."""
    if needed is None or name in needed:
        raise OutputError(
            f"{engine.class_name}.infer() did not return output {name!r}; "
            f"it returned {sorted(result)}"
        )


def rows_error(name: str, rows: int, value: Any) -> OutputError:
    """An output with another number of rows than its request(s) sent."""
    return OutputError(
        f"output {name!r}: expected {rows} rows (one per input row), got "
        f"{len(value)}; infer() must return one row per input row"
    )
