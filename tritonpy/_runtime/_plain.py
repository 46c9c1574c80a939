"""The plain-tensor path of ``Model.execute``: one request alone, for a model whose every input
and output is a plain :class:`~tritonpy.Tensor` (numpy arrays in and out, no padding,
subclass or optional input).

It takes the steps of ``Model._serve_alone`` with the codec checks written out (see
``Codec._plain_array``): no codec call, ``Decoded`` record or result check per request. It
gives the same answers: anything it does not expect (an input missing, unknown or repeated, a
data type or shape that does not fit, ``infer`` returning anything but the declared arrays, a
request that asks for some outputs only) goes to the general path, which words the errors.
"""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Optional, Tuple

import numpy as np

from ._decoded import Decoded
from .codecs.base import PlainArray
from .errors import InputError

#: (output name, numpy dtype, dims or None, shape test) of every output, in order (see
#: Codec._plain_array)
PlainOutputs = Tuple[Tuple[str, "np.dtype[Any]", Optional[Tuple[int, ...]], Any], ...]


class PlainTensorPath:
    """Mixin of :class:`tritonpy.Model`: :meth:`_serve_plain`."""

    _pb: Any
    batched: bool
    _may_request_fewer: bool
    _checks_cancelled: bool
    #: name -> (dtype, shape test) of every input; None when the model does not qualify
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
        outputs = self._plain_outputs
        # a request that asks for some of the outputs only is answered the general way
        every_output = not self._may_request_fewer or not (
            0 < len(request.requested_output_names()) < len(outputs)
        )
        try:
            started = perf_counter()
            result = self.infer(**values)
            self._record_seconds(perf_counter() - started)
            if type(result) is dict and every_output and len(result) == len(outputs):
                Tensor = self._pb.Tensor
                tensors = []
                for name, dtype, dims, fits in outputs:
                    value = result.get(name)
                    if type(value) is not np.ndarray or value.dtype != dtype:
                        break
                    shape = value.shape
                    if batched:
                        if not shape or shape[0] != rows:
                            break
                        shape = shape[1:]
                    if shape != dims if dims is not None else not fits(shape):
                        break
                    # (the stub itself makes a strided array contiguous, as tp.Tensor would)
                    tensors.append(Tensor(name, value))
                else:
                    return self._pb.InferenceResponse(output_tensors=tensors)
            # a value to convert, an output missing or unknown, some outputs asked for: the
            # general way (which raises the OutputError that says what is wrong)
            requested = self._requested_of(request)
            return self._respond(Decoded(index, values, max(rows, 0), requested, ()), result)
        except InputError as exc:
            return self._refused(exc)
        except Exception as exc:
            return self._internal_error(exc, "running infer()")
