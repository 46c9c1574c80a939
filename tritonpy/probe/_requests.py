"""The one request a probe sends to a model, built from the configuration the server reports.

Per required input: the model's ``model_warmup`` sample when its configuration has one
(Triton's own field: ``zero_data``, ``random_data`` or ``input_data_file``), else data of the
declared dtype and shape with every dynamic dimension (-1) as 1 and a batch dimension of 1 when
the model batches: zeros for numbers, ``b"0"`` for BYTES (valid UTF-8 text, valid JSON, a
number: what a text or JSON input accepts; an image input refuses it, which still proves the
model ran). Optional inputs are left out.

Example::

    config = {"name": "add_sub", "max_batch_size": 0,
              "input": [{"name": "INPUT0", "data_type": "TYPE_FP32", "dims": [4]}]}
    probe_inputs(config)    # {'INPUT0': array([0., 0., 0., 0.], dtype=float32)}
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from .._runtime.dtypes import lookup_dtype
from .._runtime.errors import DeclarationError, ToolError

#: the element a BYTES input gets without a warmup sample
BYTES_VALUE = b"0"
_RANDOM_SEED = 0  # random_data is reproducible: the same probe every time


class ProbeRequestError(ToolError):
    """The probe cannot build a request from a model's configuration (an unknown data type, an
    unreadable warmup file)."""


def _dims(values: Sequence[Any]) -> Tuple[int, ...]:
    # gRPC's JSON form writes int64 values as strings
    return tuple(int(v) for v in values)


def _shape(dims: Sequence[int], max_batch_size: int, batch: int = 1) -> Tuple[int, ...]:
    concrete = tuple(1 if d < 0 else d for d in dims)
    return ((batch,) if max_batch_size > 0 else ()) + concrete


def _numpy_dtype(model: str, name: str, data_type: str) -> np.dtype[Any]:
    try:
        dtype = lookup_dtype(data_type)
    except DeclarationError as exc:
        raise ProbeRequestError(f"model {model!r} input {name!r}: {exc}") from exc
    if dtype.is_bytes:
        return np.dtype(np.object_)
    if dtype.numpy is None:
        # BF16: tritonclient sends float32 arrays as BF16 (its own conversion)
        return np.dtype(np.float32)
    return dtype.numpy


def _filled(dtype: np.dtype[Any], shape: Tuple[int, ...], bytes_value: bytes) -> NDArray[Any]:
    if dtype == np.object_:
        return np.full(shape, bytes_value, dtype=np.object_)
    return np.zeros(shape, dtype=dtype)


def _random(dtype: np.dtype[Any], shape: Tuple[int, ...]) -> NDArray[Any]:
    rng = np.random.default_rng(_RANDOM_SEED)
    if dtype == np.object_:
        return np.full(shape, BYTES_VALUE, dtype=np.object_)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, 100, size=shape).astype(dtype)
    return rng.random(size=shape).astype(dtype)


def _bytes_elements(data: bytes, count: int, where: str) -> List[bytes]:
    # Triton's serialised strings: a 4-byte little-endian length before each element
    out: List[bytes] = []
    offset = 0
    while offset < len(data) and len(out) < count:
        if offset + 4 > len(data):
            break
        (size,) = struct.unpack_from("<I", data, offset)
        offset += 4
        if offset + size > len(data):
            break
        out.append(data[offset : offset + size])
        offset += size
    if len(out) != count:
        raise ProbeRequestError(
            f"{where}: expected {count} length-prefixed string element(s) (4-byte little-endian "
            f"length before each, as Triton reads warmup files), found {len(out)}. Rewrite the "
            "file in that format."
        )
    return out


def _from_file(
    path: Path, dtype: np.dtype[Any], shape: Tuple[int, ...], where: str
) -> NDArray[Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ProbeRequestError(
            f"{where}: cannot read warmup file {str(path)!r}: {exc.strerror}. Pass the model "
            "repository that holds it (--repository)."
        ) from exc
    count = int(np.prod(shape, dtype=np.int64))
    if dtype == np.object_:
        return np.array(_bytes_elements(data, count, where), dtype=np.object_).reshape(shape)
    needed = count * dtype.itemsize
    if len(data) < needed:
        raise ProbeRequestError(
            f"{where}: warmup file {str(path)!r} has {len(data)} bytes, expected at least "
            f"{needed} ({count} x {dtype.name}, shape {list(shape)})."
        )
    return np.frombuffer(data[:needed], dtype=dtype).reshape(shape).copy()


def warmup_sample(
    config: Mapping[str, Any], repository: Optional[Path] = None
) -> Optional[Dict[str, NDArray[Any]]]:
    """The tensors of the first ``model_warmup`` sample of ``config``, or None when it has
    none. ``input_data_file`` is read from ``repository/<model>/warmup/`` (the server's model
    repository as seen from here); without ``repository`` those inputs get generated data.

    Example::

        sample = {"name": "w", "batch_size": 1, "inputs": {
            "X": {"data_type": "TYPE_FP32", "dims": [2], "zero_data": True}}}
        warmup_sample({"name": "m", "max_batch_size": 4, "model_warmup": [sample]})
        # {'X': array([[0., 0.]], dtype=float32)}
    """
    samples = config.get("model_warmup") or []
    if not samples:
        return None
    model = str(config.get("name", ""))
    max_batch_size = int(config.get("max_batch_size", 0) or 0)
    sample = samples[0]
    batch = max(int(sample.get("batch_size", 1) or 1), 1)
    tensors: Dict[str, NDArray[Any]] = {}
    for name, spec in (sample.get("inputs") or {}).items():
        where = f"model {model!r} warmup sample {sample.get('name', '')!r} input {name!r}"
        dtype = _numpy_dtype(model, name, str(spec.get("data_type", "TYPE_INVALID")))
        shape = _shape(_dims(spec.get("dims", [])), max_batch_size, batch)
        data_file = spec.get("input_data_file")
        if data_file and repository is not None:
            path = Path(repository) / model / "warmup" / str(data_file)
            tensors[name] = _from_file(path, dtype, shape, where)
        elif spec.get("random_data"):
            tensors[name] = _random(dtype, shape)
        else:  # zero_data, or a file the probe cannot see
            tensors[name] = _filled(dtype, shape, b"" if spec.get("zero_data") else BYTES_VALUE)
    return tensors


def probe_inputs(
    config: Mapping[str, Any], repository: Optional[Path] = None
) -> Dict[str, NDArray[Any]]:
    """The inputs of the probe request for the model whose configuration (JSON form, as the
    server's ``/config`` endpoint returns it) is ``config``: its warmup sample when it has one
    (see :func:`warmup_sample`), else generated data for every required input.

    Example::

        probe_inputs({"name": "echo", "max_batch_size": 8,
                      "input": [{"name": "TEXT", "data_type": "TYPE_STRING", "dims": [1]}]})
        # {'TEXT': array([[b'0']], dtype=object)}
    """
    sample = warmup_sample(config, repository)
    if sample is not None:
        return sample
    model = str(config.get("name", ""))
    max_batch_size = int(config.get("max_batch_size", 0) or 0)
    tensors: Dict[str, NDArray[Any]] = {}
    for entry in config.get("input", []):
        if entry.get("optional", False):
            continue
        name = str(entry["name"])
        dtype = _numpy_dtype(model, name, str(entry.get("data_type", "TYPE_INVALID")))
        tensors[name] = _filled(
            dtype, _shape(_dims(entry.get("dims", [])), max_batch_size), BYTES_VALUE
        )
    return tensors
