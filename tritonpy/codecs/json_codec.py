"""``JSON``: TYPE_STRING elements holding JSON documents."""

from __future__ import annotations

import json
from typing import Any

from .base import ElementCodec

__all__ = ["JSON"]


def _default(value: Any) -> Any:
    # numpy scalars and arrays (and anything else with .tolist) become plain Python values
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


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

    def decode_element(self, data: bytes) -> Any:
        return json.loads(data.decode("utf-8"))

    def encode_element(self, value: Any) -> bytes:
        return json.dumps(
            value, ensure_ascii=False, separators=(",", ":"), default=_default
        ).encode("utf-8")
