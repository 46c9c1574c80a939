"""``Tensor``: numpy arrays in and out, with dtype and shape checks."""

from __future__ import annotations

from typing import Any, Hashable, Literal, Optional, Sequence, Tuple, get_args

import numpy as np
from numpy.typing import NDArray

from ..batching import Padded, merge_rows, pad_rows, trim_padded
from ..errors import DeclarationError, InputError, OutputError
from ._plan import NUMPY, CodecPlan, shape_test
from .base import MISSING, Codec, format_shape

#: how a batched Tensor input with rows of different shapes is handled
RaggedPolicy = Literal["group", "pad"]
_RAGGED_POLICIES: Tuple[str, ...] = get_args(RaggedPolicy)


class Tensor(Codec):
    """A numpy array of a Triton data type.

    ``dtype`` is a Triton name (``"FP32"``, ``"INT64"``, ``"BOOL"``, ``"BYTES"``...);
    ``dims`` the shape of one row (-1 for a variable size). With ``max_batch_size > 0``,
    ``infer`` gets one array holding the rows of every request of the batch, and returns
    arrays with the same number of rows.

    Cast policy. Inputs must arrive with the declared dtype (Triton checks this before the
    model runs; a mismatch is an ``INVALID_ARG``). Outputs are converted to the declared
    dtype when numpy's ``same_kind`` rule allows it (``float64 -> FP32``, ``int64 -> INT32``,
    ``bool -> INT8``); anything else (``FP32 -> INT32``, numbers -> ``BYTES``) is an error
    that names the output: cast explicitly with ``.astype``. An output declared ``[1]`` may be
    returned as a 1-D array of one value per row. ``BF16`` has no numpy dtype: use
    :class:`~tritonpy.TorchTensor` for it.

    Ragged rows (``dims`` with -1, requests of different sizes):

    * ``ragged="group"`` (default) merges only requests of equal shape: ``infer`` is called
      once per distinct shape;
    * ``ragged="pad"`` merges all requests into a :class:`~tritonpy.Padded` batch
      (``.values`` padded with ``pad_value``, ``.lengths``, ``.mask``). An output declared
      with ``ragged="pad"`` may be returned as a ``Padded`` too: each request gets its rows cut
      back to their longest true length.

    Example::

        inputs = {"TOKENS": tp.Tensor("INT64", [-1], ragged="pad")}
        outputs = {"SCORE": tp.Tensor("FP32", [1])}

        def infer(self, TOKENS):
            summed = (TOKENS.values * TOKENS.mask).sum(axis=1)
            return {"SCORE": summed / TOKENS.lengths}
    """

    def __init__(
        self,
        dtype: str,
        dims: Sequence[int],
        *,
        ragged: RaggedPolicy = "group",
        pad_value: Any = 0,
        optional: bool = False,
        default: Any = MISSING,
    ) -> None:
        super().__init__(dtype, dims, optional=optional, default=default)
        if self.dtype.numpy is None:
            raise DeclarationError(
                f"Tensor({self.dtype.name!r}): numpy has no {self.dtype.name} type; declare "
                f"TorchTensor({self.dtype.name!r}, ...) to receive it as a torch tensor, or "
                f"use FP16/FP32"
            )
        if ragged not in _RAGGED_POLICIES:
            raise DeclarationError(
                f"Tensor(ragged={ragged!r}): expected one of {list(_RAGGED_POLICIES)}"
            )
        self.numpy_dtype: np.dtype[Any] = self.dtype.numpy
        self.ragged = ragged
        self.pad_value = pad_value
        # axes of the batched array (row axis = 0) whose size varies between requests
        self.variable_axes: Tuple[int, ...] = tuple(
            axis + 1 for axis, d in enumerate(self.dims) if d == -1
        )
        self._pads = ragged == "pad" and bool(self.variable_axes)
        # the hot path compares tuples when no dim varies, and only the rank when all do
        self._fits = shape_test(self.dims)
        # encode() returns an array of the declared numeric dtype whose shape fits, in C
        # order, as is
        self._passes_as_is = not self.dtype.is_bytes

    # -- inputs ------------------------------------------------------------------------------
    def decode(self, name: str, tensor: Any, batched: bool) -> NDArray[Any]:
        array: NDArray[Any] = tensor.as_numpy()
        shape = array.shape
        shape_ok = (len(shape) >= 1 and self._fits(shape[1:])) if batched else self._fits(shape)
        if array.dtype != self.numpy_dtype or not shape_ok:
            raise InputError(
                f"input {name!r}: expected {self.dtype.name} with shape "
                f"{self._shape_text(batched)}, got {_dtype_name(array.dtype)} with shape "
                f"{format_shape(array.shape)}",
                input_name=name,
            )
        return array

    def group_key(self, value: Any) -> Hashable:
        if self.variable_axes and not self._pads and isinstance(value, np.ndarray):
            return value.shape[1:]
        return None

    def merge(self, values: Sequence[Any]) -> Any:
        if len(values) == 1 and not self._pads:
            return values[0]
        if self._pads:
            if len(values) == 1:
                array = values[0]
                lengths = np.empty((len(array), len(self.variable_axes)), dtype=np.int64)
                lengths[:] = [array.shape[a] for a in self.variable_axes]
                return Padded(
                    array,
                    lengths[:, 0] if len(self.variable_axes) == 1 else lengths,
                    self.variable_axes,
                )
            return pad_rows(values, self.variable_axes, self.pad_value)[0]
        return merge_rows(values)[0]

    def merge_keeps_one(self) -> bool:
        return type(self).merge is Tensor.merge and not self._pads

    def missing(self, rows: Optional[int]) -> Any:
        if self.default is None:
            return None
        value = np.asarray(self.default, dtype=self.numpy_dtype)
        if -1 not in self.dims:
            value = np.broadcast_to(value, self.dims)
        if rows is None:
            return value.copy()
        return np.broadcast_to(value, (rows, *value.shape)).copy()

    # -- outputs -----------------------------------------------------------------------------
    def encode(self, name: str, value: Any, batched: bool) -> Any:
        if (
            self._passes_as_is
            and type(value) is np.ndarray
            and value.dtype == self.numpy_dtype
            and (
                value.ndim > 0 and self._fits(value.shape[1:])
                if batched
                else self._fits(value.shape)
            )
            and value.flags.c_contiguous
        ):
            return value  # already what the declaration says: nothing to check or convert
        if isinstance(value, Padded):
            if not self._pads:
                raise OutputError(
                    f"output {name!r}: got a Padded value, but the output is not declared "
                    f"with ragged='pad' and a -1 dim; return values.values or change the "
                    f"declaration"
                )
            return Padded(
                self.encode(name, value.values, batched), value.lengths, self.variable_axes
            )
        array = self._as_declared_dtype(name, value)
        if self.dims == (1,) and array.ndim == (1 if batched else 0):
            array = array.reshape(-1, 1) if batched else array.reshape(1)
        shape = array.shape
        if not (self._fits(shape[1:]) if batched else self._fits(shape)) or (
            batched and array.ndim == 0
        ):
            raise OutputError(
                f"output {name!r}: expected shape {self._shape_text(batched)}, got "
                f"{format_shape(array.shape)}; reshape the value returned by infer()"
            )
        return array if array.flags.c_contiguous else np.ascontiguousarray(array)

    def to_tensor(self, name: str, part: Any, pb: Any) -> Any:
        if isinstance(part, Padded):
            part = np.ascontiguousarray(trim_padded(part))
        return pb.Tensor(name, part)

    def plan(self, batched: bool) -> CodecPlan:
        own = type(self)
        # a subclass keys its own way; else only ragged shapes keep requests apart
        groups = own.group_key is not Tensor.group_key or (
            bool(self.variable_axes) and not self._pads
        )
        if (
            self._pads
            or self.dtype.is_bytes  # BYTES outputs are checked element by element
            or own.decode is not Tensor.decode
            or own.encode is not Tensor.encode
            or own.to_tensor is not Tensor.to_tensor
            or own.rows is not Codec.rows
        ):
            return CodecPlan(groups_requests=groups)
        return CodecPlan(
            plain=True,
            read=None if self.optional else NUMPY,
            write=NUMPY,
            dtype=self.numpy_dtype,
            dims=self.dims,
            groups_requests=groups,
        )

    # -- helpers -----------------------------------------------------------------------------
    def _as_declared_dtype(self, name: str, value: Any) -> NDArray[Any]:
        target = self.numpy_dtype
        if self.dtype.is_bytes:
            array = np.asarray(value, dtype=object)
            if array.size and not all(isinstance(x, bytes) for x in array.flat):
                array = np.vectorize(_to_bytes, otypes=[object])(array)
            return array
        array = np.asarray(value)
        if array.dtype == target:
            return array
        if np.can_cast(array.dtype, target, casting="same_kind"):
            return array.astype(target)
        raise OutputError(
            f"output {name!r}: expected {self.dtype.name}, got {_dtype_name(array.dtype)}, "
            f"which does not convert without loss of kind; cast it with "
            f".astype(np.{target.name})"
        )

    def _shape_text(self, batched: bool) -> str:
        return format_shape(["rows", *self.dims] if batched else self.dims)


def _dtype_name(dtype: np.dtype[Any]) -> str:
    from ..dtypes import dtype_of_numpy

    known = dtype_of_numpy(dtype)
    return f"{known.name} ({dtype})" if known is not None else str(dtype)


def _to_bytes(item: Any) -> bytes:
    if isinstance(item, bytes):
        return item
    if isinstance(item, (bytearray, memoryview)):
        return bytes(item)
    return str(item).encode("utf-8")
