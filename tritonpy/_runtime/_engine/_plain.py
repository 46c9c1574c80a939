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

Since then (issue 32's sequence model): ``infer`` is called with its arguments by position
where its signature allows (:func:`positional_order`), and inside tritonserver the inputs'
data types and shapes are taken as the server checked them (:func:`server_checks_inputs`).

Anything else (a cancellation check, an input missing, unknown or repeated, a data type or
shape that does not fit, rows that differ, ``infer`` returning anything but the declared
arrays) goes to the direct and general paths, which give the same answers and word the
errors.
"""

from __future__ import annotations

import inspect
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
#: an input's (position among infer's arguments, dtype, fixed dims or None, rank, shape test
#: or None), by name
Inputs = Dict[str, Tuple[int, Any, Any, int, Any]]
#: what _execute and serve_rows read: the inputs' and outputs' checks, infer (called with its
#: arguments in a list), the list's size, the sequence's place in it (-1: none), Tensor,
#: InferenceResponse
Tables = Tuple[Inputs, Tuple[Output, ...], Callable[..., Any], int, int, Any, Any]


def plain_tables(engine: Engine, with_sequence: bool = False) -> Optional[Tables]:
    """The tables of a model whose every input and output is a plain numpy tensor (and
    which has an output), else None; ``with_sequence``: infer takes the request's sequence.
    A stream's (``_streaming.decoupled_execute``) are the same, without a sequence."""
    specs = engine.direct_inputs
    if specs is None:
        return None
    names = list(specs)
    if with_sequence:
        names.append(SEQUENCE_ARGUMENT)
    infer, places = _arguments(engine.infer, names)
    checked = server_checks_inputs(engine)
    inputs: Inputs = {}
    for name, (how, dtype, dims, rank, fits, _calls) in specs.items():
        if how != AS_NUMPY or dtype is _OBJECT:
            return None
        # (a dtype of None: the server checked the input, the loops take it as it is)
        inputs[name] = (places[name], None if checked else dtype, dims, rank, fits)
    outputs = plain_outputs(engine)
    if outputs is None:
        return None
    pb = engine.pb
    at_sequence = places[SEQUENCE_ARGUMENT] if with_sequence else -1
    return inputs, outputs, infer, len(names), at_sequence, pb.Tensor, pb.InferenceResponse


def plain_outputs(engine: Engine) -> Optional[Tuple[Output, ...]]:
    """The checks of a model's outputs when every one is a plain numpy tensor (and it has
    one), else None: what the plain-tensor loops, and a stream's parts, check a value by."""
    outputs: List[Output] = []
    for name, how, dtype, dims, rank, fits, _call in engine.direct_outputs:
        if how != AS_NUMPY or dtype is _OBJECT:
            return None
        outputs.append((name, dtype, dims, rank, fits))
    return tuple(outputs) if outputs else None


def server_checks_inputs(engine: Engine) -> bool:
    """Whether every request reaches ``execute()`` with its inputs checked against the
    declarations: in tritonserver (not the fake), whose every request (a client's, a BLS
    call's, an ensemble step's, a warmup's) is refused before the model when an input's name,
    data type, shape or rows do not fit the configuration (core's
    ``InferenceRequest::PrepareForInference``), and ``initialize`` found the configuration's
    inputs to agree with the declarations, none reshaped. The plain-tensor loops then skip
    those checks, which a hand-written model does not make either (issue 32); the fake's
    requests are checked (a test may hand ``execute()`` anything)."""
    if getattr(engine.pb.Tensor, "__module__", "") != "c_python_backend_utils":
        return False  # (the stub's own classes come from its embedded C++ module)
    configured = engine.model_config.get("input", [])
    return all("reshape" not in entry for entry in configured)


def _arguments(infer: Callable[..., Any], names: List[str]) -> Tuple[Any, Dict[str, int]]:
    """``infer`` as a function of its arguments in a list, and each name's place in it.

    Why: ``infer(**values)`` builds a dict and matches its names against the signature on
    every call, ~0.6 us a request where a positional call makes neither (issue 32). An
    ``infer`` whose signature does not name every argument positionally (``**inputs``,
    keyword-only arguments, a wrapper's ``*args, **kwargs``) is called by keyword instead."""
    order = positional_order(infer, names)
    if order is None:
        return partial(_by_keyword, infer, tuple(names)), {n: i for i, n in enumerate(names)}
    return infer, {name: place for place, name in enumerate(order)}


def positional_order(infer: Callable[..., Any], names: List[str]) -> Optional[List[str]]:
    """``names`` in the order ``infer`` takes them positionally (its first parameters are
    exactly these names and the others have defaults), else None.

    >>> positional_order(lambda B, A, scale=2: None, ["A", "B"])
    ['B', 'A']
    >>> positional_order(lambda **inputs: None, ["A", "B"]) is None
    True
    """
    try:  # (the callable's own signature, not that of the function a wrapper names)
        parameters = list(inspect.signature(infer, follow_wrapped=False).parameters.values())
    except (TypeError, ValueError):
        return None
    count = len(names)
    leading = parameters[:count]
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if len(leading) != count or any(p.kind not in positional for p in leading):
        return None
    order = [p.name for p in leading]
    rest_defaulted = all(
        p.default is not inspect.Parameter.empty
        or p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        for p in parameters[count:]
    )
    return order if rest_defaulted and sorted(order) == sorted(names) else None


def _by_keyword(infer: Callable[..., Any], names: Tuple[str, ...], *arguments: Any) -> Any:
    """``infer`` called with ``arguments`` by name (see :func:`_arguments`)."""
    return infer(**dict(zip(names, arguments)))


def plain_execute(engine: Engine) -> Optional[Execute]:
    """``execute(requests)`` for a model the plain-tensor path serves, else None."""
    if not engine.plain:
        return None
    # (a partial of a module function: its arguments are the frame's fast locals, where an
    # attribute of the engine is a lookup per request)
    if engine.batched:
        rows = row_tables(engine)
        general = partial(type(engine).execute, engine)  # the engine's dispatch: merging
        return None if rows is None else partial(_execute_rows, engine, rows, general)
    tables = plain_tables(engine)
    return None if tables is None else partial(_execute, engine, tables)


def row_tables(engine: Engine) -> Optional[Tables]:
    """What :func:`serve_rows` reads for a batched model whose inputs and outputs are plain
    numpy tensors and whose ``infer`` is a plain function (a stateful model's included),
    else None."""
    traits = engine.traits
    if not engine.batched or traits.decoupled or not traits.synchronous:
        return None
    return plain_tables(
        engine, with_sequence=engine.sequences is not None and engine.wants_sequence
    )


def _execute(engine: Engine, tables: Tables, requests: Sequence[Any]) -> Any:
    """Serve ``requests`` (what goes elsewhere, and why: the module's docstring)."""
    if engine.direct_inputs is None:  # (a test's switch to the general path)
        return type(engine).execute(engine, requests)
    inputs, outputs, infer, size, _, Tensor, InferenceResponse = tables
    count = len(inputs)
    responses: List[Any] = []
    for request in requests:
        tensors = None if engine.checks_cancelled else request.inputs()
        arguments: List[Any] = [None] * size
        filled = 0
        for tensor in tensors or ():
            spec = inputs.get(tensor.name())
            if spec is None or arguments[spec[0]] is not None:  # (unknown, or given twice)
                break
            at, dtype, dims, rank, fits = spec
            value = tensor.as_numpy()
            if dtype is not None:  # (None: the server checked it, see server_checks_inputs)
                shape = value.shape
                if (value.dtype is not dtype and value.dtype != dtype) or (
                    shape != dims
                    if dims is not None
                    else len(shape) != rank or (fits is not None and not fits(shape))
                ):
                    break
            arguments[at] = value
            filled += 1
        if tensors is None or filled != count or len(tensors) != count:
            responses.append(engine.serve_direct(len(responses), request))
            continue
        try:
            started = perf_counter()  # (Engine.timed_infer written out)
            result = infer(*arguments)
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
                else _respond_other(engine, len(responses), request, tables, arguments, result)
            )
        except InputError as exc:
            responses.append(engine.refused(exc))
        except Exception as exc:
            responses.append(engine.internal_error(exc, "running infer()"))
    return responses


def _execute_rows(engine: Engine, tables: Tables, general: Execute, requests: Any) -> Any:
    """A batched model's call: one request served by :func:`serve_rows`, several merged by
    the engine (as are calls that check for cancellation)."""
    if len(requests) != 1 or engine.checks_cancelled or engine.direct_inputs is None:
        return general(requests)
    return [serve_rows(engine, tables, 0, requests[0], None)]


def serve_rows(engine: Engine, tables: Tables, index: int, request: Any, sequence: Any) -> Any:
    """One request of a batched model (of ``sequence``, if stateful), rows first; the caller
    checked for cancellation (what goes elsewhere, and why: the module's docstring)."""
    inputs, outputs, infer, size, at_sequence, Tensor, InferenceResponse = tables
    tensors = request.inputs()
    arguments: List[Any] = [None] * size
    filled = 0
    rows = -1  # (every input has the same number of rows, and so every output)
    for tensor in tensors:
        spec = inputs.get(tensor.name())
        if spec is None or arguments[spec[0]] is not None:  # (unknown, or given twice)
            break
        at, dtype, dims, rank, fits = spec
        value = tensor.as_numpy()
        if dtype is None:  # the server checked it (see server_checks_inputs)
            rows = value.shape[0]
        else:
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
        arguments[at] = value
        filled += 1
    if filled != len(inputs) or len(tensors) != filled:
        return engine.serve_direct(index, request, sequence)
    if at_sequence >= 0:
        arguments[at_sequence] = sequence
    try:
        started = perf_counter()  # (Engine.timed_infer written out)
        result = infer(*arguments)
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
        return _respond_other(engine, index, request, tables, arguments, result, rows)
    except InputError as exc:
        return engine.refused(exc)
    except Exception as exc:
        return engine.internal_error(exc, "running infer()")


def read_plain(
    tables: Tables, tensors: Sequence[Any], batched: bool
) -> Optional[Tuple[List[Any], int]]:
    """A request's input tensors as ``infer``'s arguments and their rows (-1 without
    batching), when each declared input is there once and fits its declaration; else None:
    the codecs' path decides, and words the errors. The loops of :func:`_execute` and
    :func:`serve_rows` do the same, written out (a call per request costs there)."""
    inputs, size = tables[0], tables[3]
    if len(tensors) != len(inputs):
        return None
    arguments: List[Any] = [None] * size
    rows = -1
    for tensor in tensors:
        spec = inputs.get(tensor.name())
        if spec is None or arguments[spec[0]] is not None:  # (unknown, or given twice)
            return None
        at, dtype, dims, rank, fits = spec
        value = tensor.as_numpy()
        shape = value.shape
        if batched:
            if not shape or (rows != shape[0] and rows != -1):
                return None
            rows, shape = shape[0], shape[1:]
        if dtype is not None and (
            (value.dtype is not dtype and value.dtype != dtype)
            or (
                shape != dims
                if dims is not None
                else len(shape) != rank or (fits is not None and not fits(shape))
            )
        ):  # (a dtype of None: the server checked it, see server_checks_inputs)
            return None
        arguments[at] = value
    return arguments, rows


def _respond_other(
    engine: Engine,
    index: int,
    request: Any,
    tables: Tables,
    arguments: List[Any],
    result: Any,
    rows: int = -1,
) -> Any:
    """The direct path's response for what :func:`_execute` and :func:`serve_rows` do not
    take (arrays to convert, a Response with parameters...), else the general path's."""
    tensors = engine.direct_arrays(result, rows if rows >= 0 else None, engine.pb.Tensor)
    if tensors is not None:
        return engine.pb.InferenceResponse(output_tensors=tensors)
    values = {name: arguments[spec[0]] for name, spec in tables[0].items()}
    if tables[4] >= 0:
        values[SEQUENCE_ARGUMENT] = arguments[tables[4]]
    return _respond_generally(engine, index, request, values, rows, result)
