"""The one table of Triton data types.

Triton names a data type three ways: on the wire and in client libraries (``"FP32"``,
``"BYTES"``), in ``config.pbtxt`` (``TYPE_FP32``, ``TYPE_STRING``) and, inside the Python
backend, as numpy dtypes (``np.float32``, ``np.object_``). Everything in tritonpy converts
through :data:`DTYPES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np

from .errors import DeclarationError

__all__ = ["DTYPES", "DType", "lookup_dtype"]


@dataclass(frozen=True)
class DType:
    """One Triton data type under its three names."""

    name: str  # wire name, e.g. "FP32"
    config_name: str  # config.pbtxt name, e.g. "TYPE_FP32"
    numpy: Optional[np.dtype[Any]]  # None where numpy has no such type (BF16)

    @property
    def is_bytes(self) -> bool:
        return self.name == "BYTES"


def _table() -> Dict[str, DType]:
    rows = [
        ("BOOL", "TYPE_BOOL", np.bool_),
        ("UINT8", "TYPE_UINT8", np.uint8),
        ("UINT16", "TYPE_UINT16", np.uint16),
        ("UINT32", "TYPE_UINT32", np.uint32),
        ("UINT64", "TYPE_UINT64", np.uint64),
        ("INT8", "TYPE_INT8", np.int8),
        ("INT16", "TYPE_INT16", np.int16),
        ("INT32", "TYPE_INT32", np.int32),
        ("INT64", "TYPE_INT64", np.int64),
        ("FP16", "TYPE_FP16", np.float16),
        ("FP32", "TYPE_FP32", np.float32),
        ("FP64", "TYPE_FP64", np.float64),
        ("BYTES", "TYPE_STRING", np.object_),
        ("BF16", "TYPE_BF16", None),
    ]
    return {
        name: DType(name, config_name, None if np_type is None else np.dtype(np_type))
        for name, config_name, np_type in rows
    }


DTYPES: Dict[str, DType] = _table()
_BY_CONFIG_NAME = {d.config_name: d for d in DTYPES.values()}
_ALIASES = {"STRING": "BYTES", "TYPE_STRING": "BYTES"}


def lookup_dtype(name: str) -> DType:
    """Return the :class:`DType` for a wire name (``"FP32"``) or config name (``"TYPE_FP32"``).

    >>> lookup_dtype("TYPE_FP32").numpy
    dtype('float32')
    """
    key = name.upper() if isinstance(name, str) else name
    if key in DTYPES:
        return DTYPES[key]
    if key in _BY_CONFIG_NAME:
        return _BY_CONFIG_NAME[key]
    if key in _ALIASES:
        return DTYPES[_ALIASES[key]]
    known = ", ".join(DTYPES)
    raise DeclarationError(
        f"unknown Triton data type {name!r}: expected one of {known} "
        f"(or their config names such as 'TYPE_FP32')"
    )


def dtype_of_numpy(dtype: np.dtype[Any]) -> Optional[DType]:
    """The Triton data type of a numpy dtype, or None (``U`` strings, structured types...)."""
    if dtype.kind in ("O", "S"):
        return DTYPES["BYTES"]
    for d in DTYPES.values():
        if d.numpy is not None and d.numpy == dtype:
            return d
    return None
