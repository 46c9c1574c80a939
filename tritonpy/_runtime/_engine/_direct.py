"""The direct paths of the engine: one request alone (``serve_direct``) and the
requests of one call merged (``merge_direct``), for a model whose every input and output says
how to take it without the codec's general steps (its
:class:`~tritonpy._runtime.codecs.base.CodecPlan`'s ``read`` and ``write``, as ``_tables.py``
lays them out):

* a plain :class:`~tritonpy.Tensor` is the tensor's numpy array, checked for dtype and shape;
* a :class:`~tritonpy.TorchTensor` left where Triton put it is ``torch.from_dlpack`` of the
  tensor's capsule, checked the same way, and goes back as a capsule;
* :class:`~tritonpy.Text` / :class:`~tritonpy.Bytes` outputs are arrays of ``str`` or ``bytes``
  (or a list of them, one per row), which the stub encodes itself; a
  :class:`~tritonpy.JSON` output's list of documents is encoded in one call of the codec;
* :class:`~tritonpy.Text`, :class:`~tritonpy.Bytes` and :class:`~tritonpy.Image` inputs of a
  batched model decode a request, or every request of the call, in one call of the codec
  (``_decode_alone``, ``_decode_merged``).

Why: under load a stub's caches are cold for every request, and each Python call on the way
costs about half a microsecond more than it does in a loop (``benchmarks/stub_load.py``, the
issue 12 passes in benchmarks/HISTORY.md); these paths make the few calls a hand-written model
makes. They give the same answers as the general paths: anything they do not expect (an input
missing, unknown or repeated, a data type or shape that does not fit, a bad image, ``infer``
returning anything but the declared values, a string the stub cannot encode) goes to the
general path, which words the errors.

They do not ask a request which outputs it wants (``requested_output_names()``, a call into
the stub per request): the declared outputs cost nothing to pass along, and the stub drops the
outputs a request did not ask for from its response (python_backend's ``pb_stub.cc``,
``PruneOutputTensors``), as the fake ``pb_utils`` of ``tritonpy.testing`` does.
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._sequence import SEQUENCE_ARGUMENT, SequenceInfo
from ..codecs.text import STUB_ENCODED_TYPES
from ..errors import InputError
from ._decoded import Decoded
from ._tables import AS_NUMPY, AS_TORCH, BY_CODEC, DirectInput

if TYPE_CHECKING:
    from .engine import Engine

_OBJECT: np.dtype[Any] = np.dtype(object)


def serve_direct(
    engine: Engine, index: int, request: Any, sequence: Optional[SequenceInfo] = None
) -> Any:
    """One request (of ``sequence``, if stateful); the unusual to the general path."""
    if engine.checks_cancelled and request.is_cancelled():
        return engine.cancelled_response()
    # (execute() comes here only for a model that qualifies)
    specs: Dict[str, DirectInput] = engine.direct_inputs  # type: ignore[assignment]
    inputs = request.inputs()
    batched = engine.batched
    values: Dict[str, Any] = {}
    rows = count = -1  # (every input has the same number of rows)
    for tensor in inputs:
        name = tensor.name()
        spec = specs.get(name)
        if spec is None:
            return _general(engine, index, request, sequence)
        how, dtype, dims, rank, fits, call = spec
        if how == BY_CODEC:  # the finished value (rows first when batched)
            try:
                value = call[0](name, tensor, batched)
            except Exception:
                return _general(engine, index, request, sequence)
            if batched:
                count = len(value)
        else:
            value = tensor.as_numpy() if how == AS_NUMPY else call[0](tensor.to_dlpack())
            shape = value.shape
            if batched:
                if not shape:
                    return _general(engine, index, request, sequence)
                count, shape = shape[0], shape[1:]
            if (value.dtype is not dtype and value.dtype != dtype) or (  # ArrayRule.fits, inline
                shape != dims
                if dims is not None
                else len(shape) != rank or (fits is not None and not fits(shape))
            ):
                return _general(engine, index, request, sequence)
        if rows != count and rows != -1:
            return _general(engine, index, request, sequence)
        rows = count
        values[name] = value
    if len(values) != len(specs) or len(inputs) != len(specs):  # one missing or repeated
        return _general(engine, index, request, sequence)
    if sequence is not None and engine.wants_sequence:
        values[SEQUENCE_ARGUMENT] = sequence
    try:
        started = perf_counter()  # (timed_infer written out: no call per request)
        result = engine.infer(**values)
        elapsed = perf_counter() - started
        if elapsed < engine.infer_seconds or elapsed >= engine.records_from:
            engine.record_seconds(elapsed)  # (the others leave its figures as they are)
        tensors = engine.direct_arrays(result, rows if batched else None, engine.pb.Tensor)
        if tensors is not None:
            return engine.pb.InferenceResponse(output_tensors=tensors)
        return _respond_generally(engine, index, request, values, rows, result)
    except InputError as exc:
        return engine.refused(exc)
    except Exception as exc:
        return engine.internal_error(exc, "running infer()")


def _general(engine: Engine, index: int, request: Any, sequence: Optional[SequenceInfo]) -> Any:
    """The general path of a request the direct path does not take."""
    if sequence is None:
        return engine.compute_alone(index, request)
    return engine.compute_in_sequence(index, request, sequence)


def _respond_generally(
    engine: Engine, index: int, request: Any, values: Dict[str, Any], rows: int, result: Any
) -> Any:
    """The response the general way, for a value to convert, an output missing or unknown
    or a string the stub refused (``respond`` raises the OutputError that says what is
    wrong)."""
    requested = engine.requested_of(request) if engine.may_request_fewer else None
    return engine.respond(Decoded(index, values, max(rows, 0), requested, ()), result)


def merge_direct(engine: Engine, requests: Sequence[Any]) -> Optional[List[Any]]:
    """The requests of one call merged into one ``infer`` call, their outputs sliced back.
    None as soon as a request is anything but the usual (or the requests' ragged shapes
    differ); the one-pass or general merged path then decides."""
    specs = engine.direct_inputs
    assert specs is not None  # execute() comes here only for a model that qualifies
    # per input, per request: its value, or its tensor for the codec to decode (a loop:
    # a comprehension is a call before Python 3.12, and calls are what this path saves)
    columns: Dict[str, List[Any]] = {}
    for name in specs:
        columns[name] = []
    counts: List[int] = []
    row_shapes: Dict[str, Tuple[int, ...]] = {}  # of the inputs with a -1 dim
    for request in requests:
        inputs = request.inputs()
        if len(inputs) != len(specs):
            return None
        rows = -1
        for tensor in inputs:
            name = tensor.name()
            spec = specs.get(name)
            if spec is None:
                return None
            how, dtype, dims, rank, fits, call = spec
            if how == BY_CODEC:
                columns[name].append(tensor)  # rows counted once decoded
                continue
            value = tensor.as_numpy() if how == AS_NUMPY else call[0](tensor.to_dlpack())
            shape = value.shape
            if not shape or (rows != shape[0] and rows != -1):
                return None
            rows, shape = shape[0], shape[1:]
            if value.dtype is not dtype and value.dtype != dtype:
                return None
            if dims is None:  # requests merge only when their rows are of one shape
                if row_shapes.setdefault(name, shape) != shape or len(shape) != rank:
                    return None
                if fits is not None and not fits(shape):
                    return None
            elif shape != dims:
                return None
            columns[name].append(value)
        counts.append(rows)
    merged = _merged_columns(specs, columns, counts, len(requests))
    if merged is None:
        return None
    try:
        result = engine.timed_infer(merged)  # (one call for the whole merged call)
        arrays = engine.direct_arrays(result, sum(counts))
        if arrays is not None:
            sliced = engine.sliced(arrays, counts)
            if sliced is not None:
                return sliced
        # the general way: values to convert, outputs missing, a string the stub refused
        responses: List[Any] = [None] * len(requests)
        wanted = [engine.requested_of(r) for r in requests] if engine.may_request_fewer else None
        engine.split(result, counts, wanted, range(len(requests)), responses)
        return responses
    except Exception as exc:
        return engine.isolate(requests, f"{type(exc).__name__}: {exc}")


def _merged_columns(
    specs: Dict[str, DirectInput], columns: Dict[str, List[Any]], counts: List[int], calls: int
) -> Optional[Dict[str, Any]]:
    """The merged value of every input from its column (one value or tensor per request),
    ``counts`` completed with the rows the codecs decoded; None for a request that is not the
    usual (an input repeated, a bad one: the general path refuses it alone)."""
    merged: Dict[str, Any] = {}
    for name, column in columns.items():
        if len(column) != calls:  # an input repeated (and so another missing)
            return None
        how = specs[name][0]
        if how == AS_NUMPY:
            merged[name] = column[0] if len(column) == 1 else np.concatenate(column)
        elif how == AS_TORCH:
            merged[name] = column[0] if len(column) == 1 else specs[name][5][1](column)
        else:
            try:
                merged[name], decoded_counts = specs[name][5][1](name, column)
            except Exception:
                return None
            for position, count in enumerate(decoded_counts):
                if counts[position] != count and counts[position] != -1:
                    return None
                counts[position] = count
    return merged


def direct_arrays(
    engine: Engine, result: Any, rows: Optional[int], Tensor: Any = None
) -> Optional[List[Any]]:
    """``(name, value, DLPack export or None)`` of every output (given ``Tensor``: the
    ``pb_utils.Tensor`` of each) when ``infer`` returned exactly the declared outputs as
    their plans pass them (``rows`` rows each, None without batching); else None."""
    outputs = engine.direct_outputs
    if type(result) is not dict or len(result) != len(outputs):
        return None
    arrays: List[Any] = []
    try:
        for name, how, dtype, dims, rank, fits, call in outputs:
            value: Any = result.get(name)
            export = None
            if how == AS_TORCH:  # a CPU tensor without grad, in C order: a capsule as it is
                if (
                    type(value) is not call[0]
                    or value.dtype is not dtype
                    or value.requires_grad
                    or not value.is_cpu
                    or not value.is_contiguous()
                ):
                    return None
                export = call[1]
            elif (
                how == BY_CODEC
                or type(value) is not np.ndarray
                or (value.dtype is not dtype and value.dtype != dtype)
            ):
                # the codec's array (BY_CODEC), or a list of rows it makes one (Text's strs)
                if call is None or (how != BY_CODEC and type(value) is not list):
                    return None
                value = call(value, rows)
                if value is None:
                    return None
            if how != BY_CODEC:  # (ArrayRule.fits written out, with the row count)
                if dtype is _OBJECT and not set(map(type, value.flat)) <= STUB_ENCODED_TYPES:
                    return None  # strings: only the elements the stub encodes itself
                shape = value.shape
                if rows is not None:
                    if not shape or shape[0] != rows:
                        return None
                    shape = shape[1:]
                if (
                    shape != dims
                    if dims is not None
                    else len(shape) != rank or (fits is not None and not fits(shape))
                ):
                    return None
            if Tensor is None:
                arrays.append((name, value, export))
            else:  # (the stub itself makes a strided array contiguous, as tp.Tensor would)
                arrays.append(
                    Tensor(name, value)
                    if export is None
                    else Tensor.from_dlpack(name, export(value))
                )
    except Exception:  # a str the stub cannot encode: the general way names it
        return None
    return arrays


def sliced(engine: Engine, arrays: List[Any], counts: List[int]) -> Optional[List[Any]]:
    """One response per request: its rows of every output; None when the stub refuses a
    string (the general way then names it)."""
    Tensor, InferenceResponse = engine.pb.Tensor, engine.pb.InferenceResponse
    # a torch tensor split once (one call, where slicing costs a call per request); the
    # rows of a C-order array or tensor are in C order too
    columns = []
    for name, value, export in arrays:
        columns.append((name, value if export is None else value.split(counts), export))
    responses = []
    start = 0
    try:
        for position, rows in enumerate(counts):
            stop = start + rows
            tensors = []
            for name, value, export in columns:  # (a loop: no comprehension call)
                tensors.append(
                    Tensor(name, value[start:stop])
                    if export is None
                    else Tensor.from_dlpack(name, export(value[position]))
                )
            responses.append(InferenceResponse(output_tensors=tensors))
            start = stop
    except Exception:
        return None
    return responses
