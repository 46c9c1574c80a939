"""``JSON``: TYPE_STRING elements holding JSON documents."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import replace
from typing import Any, List, Optional, Sequence

import numpy as np

from ._plan import CODEC, CodecPlan
from .base import MISSING, Codec, ElementCodec

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _check_text(value: Any) -> None:
    """Raise ValueError when a string in ``value`` holds a lone UTF-16 surrogate."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                "it holds a lone UTF-16 surrogate escape (\\ud800-\\udfff without its pair), "
                "which is not valid Unicode text; send valid text"
            ) from None
    elif isinstance(value, list):
        for item in value:
            _check_text(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_text(key)
            _check_text(item)


def _default(value: Any) -> Any:
    # numpy scalars and arrays (and anything else with .tolist) become plain Python values;
    # float16/float32 values keep their short form (0.9, not 0.8999999761581421)
    if (
        isinstance(value, (np.floating, np.ndarray))
        and value.dtype.kind == "f"
        and value.dtype.itemsize < 8
    ):
        return _short_floats(value)
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _short_floats(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return [_short_floats(item) for item in value]
    return float(str(value))  # numpy prints the shortest decimal that round-trips


class JSON(ElementCodec):
    """JSON documents: each element is parsed with :func:`json.loads`; outputs are dumped
    compactly as UTF-8 (non-ASCII kept as is; numpy scalars and arrays are converted).

    Example::

        inputs = {"QUERY": tp.JSON()}
        outputs = {"RESULT": tp.JSON()}

        def infer(self, QUERY):
            return {"RESULT": [{"n": len(q["items"])} for q in QUERY]}
    """

    describes = "a UTF-8 JSON document"

    def __init__(
        self, dims: Sequence[int] = (1,), *, optional: bool = False, default: Any = MISSING
    ) -> None:
        super().__init__(dims, optional=optional, default=default)
        # one encoder for every element: json.dumps with options builds a new one per call
        self._encoder = json.JSONEncoder(
            ensure_ascii=False, separators=(",", ":"), default=_default
        )
        self._decoder = json.JSONDecoder()

    def decode_element(self, data: bytes) -> Any:
        try:
            text = data.decode("utf-8")
            value = self._decoder.decode(text)
            # "\ud800" is valid JSON but not Unicode: refuse a lone surrogate here (as bad
            # input) rather than fail later when the value is encoded to UTF-8 again
            if _SURROGATE_ESCAPE.search(text):
                _check_text(value)
            return value
        except RecursionError:
            # a RecursionError is no ValueError: without this, "[" * 100000 would be INTERNAL
            raise ValueError(
                f"arrays/objects nested deeper than Python's JSON parser allows (about "
                f"{sys.getrecursionlimit()} levels); send a flatter document"
            ) from None

    def plan(self, batched: bool) -> CodecPlan:
        plan = super().plan(batched)
        own = type(self)
        if (
            not (batched and self._single)
            or own.encode_element is not JSON.encode_element
            or own.encode is not ElementCodec.encode
            or own.split is not ElementCodec.split
            or own.to_tensor is not Codec.to_tensor
        ):
            return plan
        return replace(plan, write=CODEC, to_array=self._encoded_rows)

    def _encoded_rows(self, value: Any, rows: Optional[int]) -> Any:
        """``encode`` of a batched model's list with one document per row, in one pass; None
        for anything else or any failure (the general path then encodes, or names it)."""
        if rows is None or type(value) is not list or len(value) != rows:
            return None
        encode = self._encoder.encode
        try:
            encoded = [encode(item).encode("utf-8") for item in value]
        except Exception:
            return None
        out = np.empty((rows, 1), dtype=object)
        out[:, 0] = encoded
        return out

    def _encode_all(self, name: str, items: Sequence[Any]) -> List[bytes]:
        if type(self).encode_element is JSON.encode_element:
            encode = self._encoder.encode  # (no call of encode_element per element)
            try:
                return [encode(item).encode("utf-8") for item in items]
            except Exception:
                pass  # element by element below: the error names the element
        return super()._encode_all(name, items)

    def encode_element(self, value: Any) -> bytes:
        try:
            return self._encoder.encode(value).encode("utf-8")
        except RecursionError:
            raise ValueError(
                "the value is nested too deeply (or contains itself); return a flatter value"
            ) from None
