"""pb_utils tensors: ``Tensor``, the data type maps and the BYTES (de)serialization helpers."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import struct
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np

from ._errors import TritonModelException

#: config.pbtxt type name -> numpy type, exactly as the real module has it (``bool`` included).
TRITON_STRING_TO_NUMPY: Dict[str, Any] = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

# TRITONSERVER_DataType codes (tritonserver.h): INVALID=0, BOOL=1 ... BYTES=13, BF16=14.
_TRITON_TYPE_BYTES = 13
_TRITON_CODE_TO_NUMPY: Dict[int, Any] = {
    1: np.bool_,
    2: np.uint8,
    3: np.uint16,
    4: np.uint32,
    5: np.uint64,
    6: np.int8,
    7: np.int16,
    8: np.int32,
    9: np.int64,
    10: np.float16,
    11: np.float32,
    12: np.float64,
    13: np.object_,
}
_NUMPY_TO_TRITON_CODE: List[Tuple[Any, int]] = [
    (np.bool_, 1),
    (np.uint8, 2),
    (np.uint16, 3),
    (np.uint32, 4),
    (np.uint64, 5),
    (np.int8, 6),
    (np.int16, 7),
    (np.int32, 8),
    (np.int64, 9),
    (np.float16, 10),
    (np.float32, 11),
    (np.float64, 12),
    (np.object_, 13),
    (np.bytes_, 13),
]


_DLPACK_CPU = 1


class _CapsuleHolder:
    """Gives a bare DLPack capsule the ``__dlpack__`` protocol so numpy can import it."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (_DLPACK_CPU, 0)


def _check_tensor_array(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"Tensor data must be a numpy.ndarray, got {type(array).__name__}")
    if array.dtype.kind in ("U", "V", "c", "M", "m"):
        raise TritonModelException("NumPy dtype is not supported.")
    # the real Tensor takes fixed-width bytes ('S', measured on 24.10) as BYTES and gives
    # the same 'S' array back from as_numpy()
    if array.dtype.kind != "S" and numpy_to_triton_type(array.dtype) is None:
        raise TritonModelException("NumPy dtype is not supported.")
    if array.dtype == np.object_:
        # the real Tensor serialises BYTES elements when it is built (str as UTF-8), so what
        # cannot be encoded (a str with a lone surrogate) raises here, not in the client
        serialize_byte_tensor(array)
    # The real Tensor stores data in C order; a strided view is made contiguous.
    # (np.ascontiguousarray would also turn a 0-d array into a 1-d one)
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


class Tensor:
    """A named tensor (``pb_utils.Tensor``)."""

    def __init__(self, name: str, data: np.ndarray[Any, Any]) -> None:
        if not isinstance(name, str):
            raise TypeError(f"Tensor name must be a str, got {type(name).__name__}")
        self._name = name
        self._array = _check_tensor_array(data)

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray[Any, Any]:
        return self._array

    def triton_dtype(self) -> int:
        if self._array.dtype.kind == "S":
            return _TRITON_TYPE_BYTES
        code = numpy_to_triton_type(self._array.dtype)
        assert code is not None
        return code

    def shape(self) -> List[int]:
        return [int(d) for d in self._array.shape]

    def is_cpu(self) -> bool:
        return True

    def to_dlpack(self) -> Any:
        """A DLPack capsule over the tensor's memory (numeric tensors only)."""
        return self.__dlpack__()

    def __dlpack__(self, stream: Any = None) -> Any:
        if self._array.dtype == np.object_:
            raise TritonModelException(
                f"tensor '{self._name}': BYTES (object) tensors cannot be exported via DLPack"
            )
        if not hasattr(self._array, "__dlpack__"):
            raise TritonModelException("DLPack needs numpy >= 1.22")
        array = self._array
        if not array.flags.writeable:
            # numpy < 2 cannot export read-only arrays (such as those np.from_dlpack makes).
            array = array.copy()
        if stream is None:
            return array.__dlpack__()
        return array.__dlpack__(stream=stream)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (_DLPACK_CPU, 0)

    @staticmethod
    def from_dlpack(name: str, dlpack_tensor: Any) -> Tensor:
        """A Tensor sharing the memory of ``dlpack_tensor`` (an object with ``__dlpack__``, such
        as a torch tensor or numpy array, or a DLPack capsule). CPU and C-contiguous only."""
        if not hasattr(np, "from_dlpack"):
            raise TritonModelException("Tensor.from_dlpack in the fake pb_utils needs numpy>=1.22")
        source: Any = dlpack_tensor
        if not hasattr(dlpack_tensor, "__dlpack__"):
            if type(dlpack_tensor).__name__ != "PyCapsule":
                raise TritonModelException(
                    f"Tensor.from_dlpack('{name}', ...): expected an object with __dlpack__ or a "
                    f"DLPack capsule, got {type(dlpack_tensor).__name__}"
                )
            source = _CapsuleHolder(dlpack_tensor)
        else:
            device = getattr(dlpack_tensor, "__dlpack_device__", None)
            if device is not None and int(device()[0]) != _DLPACK_CPU:
                raise TritonModelException(
                    f"Tensor.from_dlpack('{name}', ...): the fake pb_utils holds CPU tensors "
                    f"only, got a tensor on DLPack device {tuple(device())}"
                )
        try:
            array = np.from_dlpack(source)
        except (TypeError, ValueError, RuntimeError, BufferError) as exc:
            raise TritonModelException(
                f"Tensor.from_dlpack('{name}', ...): cannot import the DLPack tensor: {exc}"
            ) from exc
        if not array.flags.c_contiguous:
            raise TritonModelException(
                "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored "
                "in C-Order are supported."
            )
        tensor = Tensor.__new__(Tensor)
        tensor._name = name
        tensor._array = array
        return tensor

    def _snapshot(self) -> Tensor:
        copy = Tensor.__new__(Tensor)
        copy._name = self._name
        copy._array = self._array.copy()
        return copy

    def __repr__(self) -> str:
        return f"Tensor({self._name!r}, dtype={self._array.dtype}, shape={self.shape()})"


# --------------------------------------------------------------------------------------------
# Pure-Python helpers (same semantics as the real module's Python part)
# --------------------------------------------------------------------------------------------


def serialize_byte_tensor(input_tensor: np.ndarray[Any, Any]) -> Union[bytes, Tuple[()], None]:
    """Flatten a BYTES tensor (object or ``S`` array) in C order into bytes, each element
    preceded by its 4-byte little-endian length. Empty tensor: ``()``; other dtypes: None
    (both as the real function returns)."""
    if input_tensor.size == 0:
        return ()
    is_object = input_tensor.dtype == np.object_
    if not is_object and input_tensor.dtype.type != np.bytes_:
        return None
    parts: List[bytes] = []
    for item in input_tensor.reshape(-1, order="C").tolist():
        data = item
        if is_object and type(item) is not bytes:
            data = str(item).encode("utf-8")
        parts.append(struct.pack("<I", len(data)))
        parts.append(data)
    return b"".join(parts)


def deserialize_bytes_tensor(encoded_tensor: Any) -> np.ndarray[Any, Any]:
    """Inverse of :func:`serialize_byte_tensor`: a 1-D object array of ``bytes``."""
    buf = memoryview(encoded_tensor).cast("B") if not isinstance(encoded_tensor, bytes) else None
    data = bytes(buf) if buf is not None else encoded_tensor
    items: List[bytes] = []
    offset = 0
    while offset < len(data):
        (length,) = struct.unpack_from("<I", data, offset)
        offset += 4
        if offset + length > len(data):
            raise struct.error(
                f"serialized BYTES tensor is truncated: element of {length} bytes at offset "
                f"{offset} but only {len(data) - offset} bytes left"
            )
        items.append(data[offset : offset + length])
        offset += length
    result = np.empty(len(items), dtype=np.object_)
    result[:] = items
    return result


def triton_to_numpy_type(data_type: int) -> Any:
    return _TRITON_CODE_TO_NUMPY.get(data_type)


def numpy_to_triton_type(data_type: Any) -> Optional[int]:
    for np_type, code in _NUMPY_TO_TRITON_CODE:
        try:
            if data_type == np_type:
                return code
        except TypeError:
            continue
    return None


def triton_string_to_numpy(triton_type_string: str) -> Any:
    return TRITON_STRING_TO_NUMPY[triton_type_string]
