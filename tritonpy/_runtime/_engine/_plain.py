"""The plain-tensor path of a model without batching: ``execute()`` as one function the stub
calls (:func:`plain_execute`, bound on the engine and the model instance), for a model whose
every input and output is a plain numpy :class:`~tritonpy.Tensor` and whose ``infer`` is a
plain function (not a stream, not async, no sequences, no request parameters, no built-in
metrics): the smallest models, where the per-request cost of the engine is what the server
sees.

Why: the general direct path (``_direct.serve_direct``) makes the few calls a hand-written
model makes, but reads the engine's tables and attributes for every input and output and
passes through three frames (``Model.execute``, ``Engine.execute``, ``serve_direct``) and a
fourth for the outputs (``direct_arrays``). Under load a stub's caches are cold for every
request, and that is where tritonpy's extra server CPU on add_sub was: ``execute()`` took
36.8 / 35.7 us per request against 32.7 / 31.2 us hand-written at c = 1 / 16 (a warm loop
shows 0.6 us), while the stub's CPU outside ``execute()``, tritonserver's own CPU, context
switches, page faults and garbage collections were the same (``benchmarks/cpu_split.py
--execute-cpu``, issue 32). This function takes its tables and the engine's calls as
arguments (fast locals), writes the output loop out and checks only what a plain tensor can
get wrong: 36.0 / 34.1 us in the same run (the tax 3.3 / 2.9 us instead of 4.1 / 4.5). What is
left is what it must keep: the timing of ``infer`` for ``check_cancellation="auto"``, the
checks of the cancellation switch, the errors per request (without them: 34.8 / 32.8 us).

Anything else (a cancellation check, an input missing, unknown or repeated, a data type or
shape that does not fit, ``infer`` returning anything but the declared arrays) goes to the
direct and general paths, which give the same answers and word the errors.
"""

from __future__ import annotations

from functools import partial
from time import perf_counter
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import InputError
from ._direct import _respond_generally
from ._tables import AS_NUMPY

if TYPE_CHECKING:
    from .engine import Engine

_OBJECT: np.dtype[Any] = np.dtype(object)

Execute = Callable[[Sequence[Any]], List[Any]]
#: an output's (name, dtype, fixed dims or None, rank, shape test or None)
Output = Tuple[str, Any, Optional[Tuple[int, ...]], int, Any]


def plain_execute(engine: Engine) -> Optional[Execute]:
    """``execute(requests)`` for a model the plain-tensor path serves, else None."""
    specs = engine.direct_inputs
    if specs is None or engine.batched or not engine.plain:
        return None
    inputs: Dict[str, Tuple[Any, Any, int, Any]] = {}
    for name, (how, dtype, dims, rank, fits, _calls) in specs.items():
        if how != AS_NUMPY or dtype is _OBJECT:
            return None
        inputs[name] = (dtype, dims, rank, fits)
    outputs: List[Output] = []
    for name, how, dtype, dims, rank, fits, _call in engine.direct_outputs:
        if how != AS_NUMPY or dtype is _OBJECT:
            return None
        outputs.append((name, dtype, dims, rank, fits))
    if not outputs:
        return None
    # (a partial of a module function: its arguments are the frame's fast locals, where an
    # attribute of the engine is a lookup per request)
    pb = engine.pb
    return partial(
        _execute, engine, inputs, tuple(outputs), engine.infer, pb.Tensor, pb.InferenceResponse
    )


def _execute(
    engine: Engine,
    inputs: Dict[str, Tuple[Any, Any, int, Any]],
    outputs: Tuple[Output, ...],
    infer: Callable[..., Any],
    Tensor: Any,
    InferenceResponse: Any,
    requests: Sequence[Any],
) -> Any:
    """Serve ``requests`` (what goes elsewhere, and why: the module's docstring)."""
    if engine.direct_inputs is None:  # (a test's switch to the general path)
        return type(engine).execute(engine, requests)
    responses: List[Any] = []
    for request in requests:
        tensors = None if engine.checks_cancelled else request.inputs()
        values: Dict[str, Any] = {}
        for tensor in tensors or ():
            spec = inputs.get(name := tensor.name())
            if spec is None:
                break
            value = tensor.as_numpy()
            dtype, dims, rank, fits = spec
            shape = value.shape
            if (value.dtype is not dtype and value.dtype != dtype) or (
                shape != dims
                if dims is not None
                else len(shape) != rank or (fits is not None and not fits(shape))
            ):
                break
            values[name] = value
        if tensors is None or len(values) != len(inputs) or len(tensors) != len(inputs):
            responses.append(engine.serve_direct(len(responses), request))
            continue
        try:
            started = perf_counter()  # (Engine.timed_infer written out)
            result = infer(**values)
            elapsed = perf_counter() - started
            if elapsed < engine.infer_seconds or elapsed >= engine.records_from:
                engine.record_seconds(elapsed)
            arrays: List[Any] = []  # (all of them, or the direct path's way)
            for name, dtype, dims, rank, fits in outputs if type(result) is dict else ():
                value = result.get(name)
                shape = value.shape if type(value) is np.ndarray else None
                if (shape is None or (value.dtype is not dtype and value.dtype != dtype)) or (
                    shape != dims
                    if dims is not None
                    else len(shape) != rank or (fits is not None and not fits(shape))
                ):
                    break
                arrays.append(Tensor(name, value))
            responses.append(
                InferenceResponse(output_tensors=arrays)
                if len(arrays) == len(outputs) == len(result)
                else _respond_other(engine, len(responses), request, values, result)
            )
        except InputError as exc:
            responses.append(engine.refused(exc))
        except Exception as exc:
            responses.append(engine.internal_error(exc, "running infer()"))
    return responses


def _respond_other(engine: Engine, index: int, request: Any, values: Any, result: Any) -> Any:
    """The direct path's response for what :func:`_execute` does not take (arrays to
    convert, a Response with parameters...), else the general path's."""
    tensors = engine.direct_arrays(result, None, engine.pb.Tensor)
    if tensors is not None:
        return engine.pb.InferenceResponse(output_tensors=tensors)
    return _respond_generally(engine, index, request, values, -1, result)
