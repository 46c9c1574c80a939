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


@dataclass(frozen=True)
class DType:
    """One Triton data type under its three names."""

    name: str  # wire name, e.g. "FP32"
    config_name: str  # config.pbtxt name, e.g. "TYPE_FP32"
    numpy: Optional[np.dtype[Any]]  # None where numpy has no such type (BF16)

    @property
    def is_bytes(self) -> bool:
        return self.name == "BYTES"


#: Triton's data types by wire name, in its order: integers and floats by their bit width
_WIRE_NAMES = (
    "BOOL",
    *(f"{kind}{bits}" for kind in ("UINT", "INT") for bits in (8, 16, 32, 64)),
    *(f"FP{bits}" for bits in (16, 32, 64)),
    "BYTES",
    "BF16",
)
#: the types whose numpy type is not named after them (None: numpy has no BF16)
_SPECIAL_NUMPY: Dict[str, Any] = {"BOOL": np.bool_, "BYTES": np.object_, "BF16": None}


def _numpy_dtype(name: str) -> Optional[np.dtype[Any]]:
    """numpy's dtype for a wire name: UINT8 -> uint8, FP32 -> float32, BYTES -> object."""
    np_type = _SPECIAL_NUMPY.get(name, name.lower().replace("fp", "float"))
    return None if np_type is None else np.dtype(np_type)


def _table() -> Dict[str, DType]:
    # the config.pbtxt name is TYPE_<wire name>, except TYPE_STRING for BYTES
    return {
        name: DType(name, "TYPE_STRING" if name == "BYTES" else f"TYPE_{name}", _numpy_dtype(name))
        for name in _WIRE_NAMES
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


def cast_exactly(values: Any, target: Any) -> Optional[np.ndarray[Any, Any]]:
    """``values`` (a numpy array of Python numbers) as numpy dtype ``target``, or None when the
    cast would change what they mean: not numbers, a bool for a number type or a number for
    BOOL, an integer that does not come back unchanged (2.5 or 300 for INT8), a finite float
    that overflows to inf. Floats may round: rounding is what a float type asks for.

    The one rule for Python values sent to a numeric input, by ``Model.call`` and by the
    harness.

    >>> cast_exactly(np.array([1, 2]), np.dtype(np.float32)).dtype
    dtype('float32')
    >>> cast_exactly(np.array([2.5]), np.dtype(np.int32)) is None
    True
    """
    source = np.asarray(values)
    target = np.dtype(target)
    if source.dtype.kind not in "biuf" or (target.kind == "b") != (source.dtype.kind == "b"):
        return None
    with np.errstate(all="ignore"):
        cast: np.ndarray[Any, Any] = source.astype(target)
        if target.kind == "f":
            fits = bool(np.array_equal(np.isfinite(cast), np.isfinite(source)))
        else:
            fits = bool(np.array_equal(cast.astype(source.dtype), source))
    return cast if fits else None


def preview_values(values: Any, limit: int = 6) -> str:
    """The first ``limit`` values of an array, for an error message: ``[1, 2.5, ...]``."""
    flat = np.asarray(values).ravel().tolist()
    more = ", ..." if len(flat) > limit else ""
    return "[" + ", ".join(repr(v) for v in flat[:limit]) + more + "]"
