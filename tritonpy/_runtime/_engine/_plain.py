"""The plain-tensor path: ``execute()`` as one function the stub calls (:func:`plain_execute`,
bound on the engine and the model instance), for a model whose every input and output is a
plain numpy :class:`~tritonpy.Tensor` and whose ``infer`` is a plain function (not a stream,
not async, no sequences, no request parameters, no built-in metrics): the smallest models,
where the per-request cost of the engine is what the server sees. A model without batching
is served here whatever its calls hold (:func:`_execute`); a batched model's call of one
request is served here (:func:`_execute_rows`), a call of several goes to the engine, which
merges their rows.

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
shape that does not fit, rows that differ, ``infer`` returning anything but the declared
arrays) goes to the direct and general paths, which give the same answers and word the
errors.
"""

from __future__ import annotations

from functools import partial
from time import perf_counter
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._sequence import SEQUENCE_ARGUMENT
from ..errors import InputError
from ._direct import _respond_generally
from ._tables import AS_NUMPY

if TYPE_CHECKING:
    from .engine import Engine

_OBJECT: np.dtype[Any] = np.dtype(object)

Execute = Callable[[Sequence[Any]], List[Any]]
#: an output's (name, dtype, fixed dims or None, rank, shape test or None)
Output = Tuple[str, Any, Optional[Tuple[int, ...]], int, Any]


Inputs = Dict[str, Tuple[Any, Any, int, Any]]
#: what _serve_rows reads: the inputs' and outputs' checks, infer, Tensor, InferenceResponse
Tables = Tuple[Inputs, Tuple[Output, ...], Callable[..., Any], Any, Any]
#: the request of a batched model served: (index, request, its sequence or None) -> response
ServeRows = Callable[[int, Any, Any], Any]


def _tables(engine: Engine) -> Optional[Tuple[Inputs, Tuple[Output, ...]]]:
    """The inputs' and outputs' checks of a model whose every input and output is a plain
    numpy tensor (and which has an output), else None."""
    specs = engine.direct_inputs
    if specs is None:
        return None
    inputs: Inputs = {}
    for name, (how, dtype, dims, rank, fits, _calls) in specs.items():
        if how != AS_NUMPY or dtype is _OBJECT:
            return None
        inputs[name] = (dtype, dims, rank, fits)
    outputs: List[Output] = []
    for name, how, dtype, dims, rank, fits, _call in engine.direct_outputs:
        if how != AS_NUMPY or dtype is _OBJECT:
            return None
        outputs.append((name, dtype, dims, rank, fits))
    return (inputs, tuple(outputs)) if outputs else None


def plain_execute(engine: Engine) -> Optional[Execute]:
    """``execute(requests)`` for a model the plain-tensor path serves, else None."""
    tables = _tables(engine) if engine.plain else None
    if tables is None:
        return None
    # (a partial of a module function: its arguments are the frame's fast locals, where an
    # attribute of the engine is a lookup per request)
    if engine.batched:
        serve = plain_rows(engine)
        general = partial(type(engine).execute, engine)  # the engine's dispatch: merging
        return None if serve is None else partial(_execute_rows, engine, serve, general)
    pb = engine.pb
    return partial(_execute, engine, *tables, engine.infer, pb.Tensor, pb.InferenceResponse)


def plain_rows(engine: Engine) -> Optional[ServeRows]:
    """``serve(index, request, sequence)`` for a batched model whose inputs and outputs are
    plain numpy tensors and whose ``infer`` is a plain function (a stateful model's included),
    else None."""
    traits = engine.traits
    tables = _tables(engine)
    if tables is None or not engine.batched or traits.decoupled or not traits.synchronous:
        return None
    pb = engine.pb
    return partial(_serve_rows, engine, (*tables, engine.infer, pb.Tensor, pb.InferenceResponse))


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


def _execute_rows(engine: Engine, serve: ServeRows, general: Execute, requests: Any) -> Any:
    """A batched model's call: one request served by :func:`_serve_rows`, several merged by
    the engine (as are calls that check for cancellation)."""
    if len(requests) != 1 or engine.checks_cancelled or engine.direct_inputs is None:
        return general(requests)
    return [serve(0, requests[0], None)]


def _serve_rows(engine: Engine, tables: Tables, index: int, request: Any, sequence: Any) -> Any:
    """One request of a batched model (of ``sequence``, if stateful), rows first; the caller
    checked for cancellation (what goes elsewhere, and why: the module's docstring)."""
    inputs, outputs, infer, Tensor, InferenceResponse = tables
    tensors = request.inputs()
    values: Dict[str, Any] = {}
    rows = -1  # (every input has the same number of rows, and so every output)
    for tensor in tensors:
        spec = inputs.get(name := tensor.name())
        if spec is None:
            break
        value = tensor.as_numpy()
        dtype, dims, rank, fits = spec
        shape = value.shape
        if not shape or (rows != shape[0] and rows != -1):
            break
        rows, shape = shape[0], shape[1:]
        if (value.dtype is not dtype and value.dtype != dtype) or (
            shape != dims
            if dims is not None
            else len(shape) != rank or (fits is not None and not fits(shape))
        ):
            break
        values[name] = value
    if len(values) != len(inputs) or len(tensors) != len(inputs):
        return engine.serve_direct(index, request, sequence)
    if sequence is not None and engine.wants_sequence:
        values[SEQUENCE_ARGUMENT] = sequence
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
            if not shape or shape[0] != rows or (value.dtype is not dtype and value.dtype != dtype):
                break
            shape = shape[1:]
            if (
                shape != dims
                if dims is not None
                else len(shape) != rank or (fits is not None and not fits(shape))
            ):
                break
            arrays.append(Tensor(name, value))
        if len(arrays) == len(outputs) == len(result):
            return InferenceResponse(output_tensors=arrays)
        return _respond_other(engine, index, request, values, result, rows)
    except InputError as exc:
        return engine.refused(exc)
    except Exception as exc:
        return engine.internal_error(exc, "running infer()")


def _respond_other(
    engine: Engine, index: int, request: Any, values: Any, result: Any, rows: int = -1
) -> Any:
    """The direct path's response for what :func:`_execute` and :func:`_serve_rows` do not
    take (arrays to convert, a Response with parameters...), else the general path's."""
    tensors = engine.direct_arrays(result, rows if rows >= 0 else None, engine.pb.Tensor)
    if tensors is not None:
        return engine.pb.InferenceResponse(output_tensors=tensors)
    return _respond_generally(engine, index, request, values, rows, result)
