"""The plain-tensor paths of ``Model.execute``, for a model whose every input is a plain
:class:`~tritonpy.Tensor` (numpy arrays in, no padding, subclass or optional input) and every
output a plain Tensor or a :class:`~tritonpy.Text` / :class:`~tritonpy.Bytes` (an array of
``str`` or ``bytes``, which the stub encodes itself): one request alone (``_serve_plain``),
and the requests of one call merged (``_merge_plain``).

They take the steps of the general paths with the codec checks written out (see
``Codec._plain_array``): no codec call, ``Decoded`` record or result check per request. They
give the same answers: anything they do not expect (an input missing, unknown or repeated, a
data type or shape that does not fit, ``infer`` returning anything but the declared arrays, a
string the stub cannot encode) goes to the general path, which words the errors.

They do not ask a request which outputs it wants (``requested_output_names()``, a call into
the stub per request): the declared arrays cost nothing to pass along, and the stub drops the
outputs a request did not ask for from its response (python_backend's ``pb_stub.cc``,
``PruneOutputTensors``), as the fake ``pb_utils`` of ``tritonpy.testing`` does.
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Optional, Sequence, Tuple

import numpy as np

from ._decoded import Decoded
from .codecs.base import PlainArray
from .codecs.text import STUB_ENCODED_TYPES
from .errors import InputError

#: (output name, numpy dtype, dims or None, shape test, elements are strings) of every output,
#: in order (see Codec._output_array)
PlainOutputs = Tuple[Tuple[str, "np.dtype[Any]", Optional[Tuple[int, ...]], Any, bool], ...]


class PlainTensorPath:
    """Mixin of :class:`tritonpy.Model`: :meth:`_serve_plain` and :meth:`_merge_plain`."""

    _pb: Any
    batched: bool
    _may_request_fewer: bool
    _checks_cancelled: bool
    #: name -> Codec._plain_array of every input; None when the model does not qualify
    _plain_inputs: Optional[Dict[str, PlainArray]]
    _plain_outputs: PlainOutputs

    if TYPE_CHECKING:  # defined by Model; declared here for the type checker only

        def _cancelled_response(self) -> Any: ...
        def _compute_alone(self, index: int, request: Any) -> Any: ...
        def _requested_of(self, request: Any) -> Optional[FrozenSet[str]]: ...
        def _record_seconds(self, elapsed: float) -> None: ...
        def _respond(self, item: Decoded, result: Any) -> Any: ...
        def _refused(self, exc: InputError) -> Any: ...
        def _internal_error(self, exc: BaseException, during: str) -> Any: ...
        def infer(self, *args: Any, **inputs: Any) -> Any: ...
        def _timed_infer(self, values: Dict[str, Any]) -> Any: ...
        def _isolate(self, requests: Sequence[Any], failure: str) -> List[Any]: ...
        def _split(
            self,
            result: Any,
            counts: List[int],
            wanted: Optional[List[Optional[FrozenSet[str]]]],
            indices: Sequence[int],
            responses: List[Any],
        ) -> None: ...

    def _serve_plain(self, index: int, request: Any) -> Any:
        """One request alone, from its input arrays to its response."""
        if self._checks_cancelled and request.is_cancelled():
            return self._cancelled_response()
        checks = self._plain_inputs
        assert checks is not None  # execute() comes here only for a model that qualifies
        inputs = request.inputs()
        if len(inputs) != len(checks):
            return self._compute_alone(index, request)
        batched = self.batched
        values: Dict[str, Any] = {}
        rows = -1
        for tensor in inputs:
            name = tensor.name()
            plain = checks.get(name)
            if plain is None or name in values:
                return self._compute_alone(index, request)
            value = tensor.as_numpy()
            dtype, dims, fits = plain
            shape = value.shape
            if batched:  # every input has the same number of rows
                if not shape or (rows != shape[0] and rows != -1):
                    return self._compute_alone(index, request)
                rows, shape = shape[0], shape[1:]
            # a tuple comparison where no dim varies: cheaper than a call
            if value.dtype != dtype or (shape != dims if dims is not None else not fits(shape)):
                return self._compute_alone(index, request)
            values[name] = value
        try:
            started = perf_counter()  # (_timed_infer, without its call)
            result = self.infer(**values)
            self._record_seconds(perf_counter() - started)
            arrays = self._declared_arrays(result, rows if batched else None)
            if arrays is not None:
                Tensor = self._pb.Tensor
                tensors = []
                try:
                    for name, value in arrays:  # (a loop: a comprehension is a call before 3.12)
                        # (the stub itself makes a strided array contiguous, as tp.Tensor would)
                        tensors.append(Tensor(name, value))
                except Exception:  # a str the stub cannot encode: the general way names it
                    arrays = None
                if arrays is not None:
                    return self._pb.InferenceResponse(output_tensors=tensors)
            # a value to convert, an output missing or unknown: the general way (which raises
            # the OutputError that says what is wrong)
            requested = self._requested_of(request) if self._may_request_fewer else None
            return self._respond(Decoded(index, values, max(rows, 0), requested, ()), result)
        except InputError as exc:
            return self._refused(exc)
        except Exception as exc:
            return self._internal_error(exc, "running infer()")

    def _merge_plain(self, requests: Sequence[Any]) -> Optional[List[Any]]:
        """The requests of one call merged into one ``infer`` call, their outputs sliced back.
        None as soon as a request is anything but the usual (or the requests' ragged shapes
        differ); the one-pass or general merged path then decides."""
        checks = self._plain_inputs
        assert checks is not None  # execute() comes here only for a model that qualifies
        columns: Dict[str, List[Any]] = {name: [] for name in checks}
        counts: List[int] = []
        row_shapes: Dict[str, Tuple[int, ...]] = {}  # of the inputs with a -1 dim
        for request in requests:
            inputs = request.inputs()
            if len(inputs) != len(checks):
                return None
            rows = -1
            for tensor in inputs:
                name = tensor.name()
                plain = checks.get(name)
                if plain is None:
                    return None
                value = tensor.as_numpy()
                dtype, dims, fits = plain
                shape = value.shape
                if not shape or (rows != shape[0] and rows != -1):
                    return None
                rows, shape = shape[0], shape[1:]
                if dims is None:  # requests merge only when their rows are of one shape
                    if value.dtype != dtype or row_shapes.setdefault(name, shape) != shape:
                        return None
                    if not fits(shape):
                        return None
                elif value.dtype != dtype or shape != dims:
                    return None
                columns[name].append(value)
            counts.append(rows)
        for column in columns.values():
            if len(column) != len(requests):  # an input repeated (and so another missing)
                return None
        try:
            result = self._timed_infer(
                {
                    name: column[0] if len(column) == 1 else np.concatenate(column)
                    for name, column in columns.items()
                }
            )
            arrays = self._declared_arrays(result, sum(counts))
            if arrays is not None:
                sliced = self._sliced(arrays, counts)
                if sliced is not None:
                    return sliced
            # the general way: values to convert, outputs missing, a string the stub refused
            responses: List[Any] = [None] * len(requests)
            wanted = [self._requested_of(r) for r in requests] if self._may_request_fewer else None
            self._split(result, counts, wanted, range(len(requests)), responses)
            return responses
        except Exception as exc:
            return self._isolate(requests, f"{type(exc).__name__}: {exc}")

    def _declared_arrays(self, result: Any, rows: Optional[int]) -> Optional[List[Tuple[str, Any]]]:
        """``(name, array)`` of every output when ``infer`` returned exactly the declared
        outputs as arrays of the declared dtype and shape (``rows`` rows each when batched,
        None without batching); None for anything else."""
        outputs = self._plain_outputs
        if type(result) is not dict or len(result) != len(outputs):
            return None
        arrays = []
        for name, dtype, dims, fits, strings in outputs:
            value = result.get(name)
            if type(value) is not np.ndarray or value.dtype != dtype:
                return None
            if strings and not set(map(type, value.flat)) <= STUB_ENCODED_TYPES:
                return None
            shape = value.shape
            if rows is not None:
                if not shape or shape[0] != rows:
                    return None
                shape = shape[1:]
            # a tuple comparison where no dim varies: cheaper than a call
            if shape != dims if dims is not None else not fits(shape):
                return None
            arrays.append((name, value))
        return arrays

    def _sliced(self, arrays: List[Tuple[str, Any]], counts: List[int]) -> Optional[List[Any]]:
        """One response per request: its rows of every output array; None when the stub
        refuses a string (the general way then names it)."""
        Tensor, InferenceResponse = self._pb.Tensor, self._pb.InferenceResponse
        responses = []
        start = 0
        try:
            for rows in counts:
                stop = start + rows
                tensors = []
                for name, value in arrays:  # (a loop: a comprehension is a call before 3.12)
                    tensors.append(Tensor(name, value[start:stop]))
                responses.append(InferenceResponse(output_tensors=tensors))
                start = stop
        except Exception:
            return None
        return responses
