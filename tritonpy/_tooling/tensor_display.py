"""Tensors shown to people: a summarised text form for the terminal, and a JSON form for
programs.

The text form is ``NAME (DTYPE, shape [..]): VALUE`` where VALUE is numpy's summary of the
array (``np.array2string`` with ``threshold``/``edgeitems``: a 3x224x224 output is a few lines
with ``...``, not 150 000 numbers), floats written shortest-exact (``2.0``, ``0.1``), BYTES
elements decoded as text where they are UTF-8. ``full=True`` writes every element.

Example::

    print(format_tensor("SCORES", "FP32", np.array([[0.5, 0.25]], np.float32)))
    # SCORES (FP32, shape [1, 2]): [[0.5, 0.25]]
    tensor_to_json("LABELS", "BYTES", np.array([[b"cat"]], object))
    # {'name': 'LABELS', 'datatype': 'BYTES', 'shape': [1, 1], 'data': [['cat']]}
"""

from __future__ import annotations

import base64
import sys
from typing import Any, Dict

import numpy as np
from numpy.typing import NDArray

#: arrays with more elements than this are summarised (numpy's own default is 1000)
SUMMARY_THRESHOLD = 64
#: elements kept at each edge of a summarised dimension
EDGE_ITEMS = 3
#: a summarised BYTES element shows at most this many characters (or bytes)
_TEXT_LIMIT = 80
_LINE_WIDTH = 100


def format_tensor(name: str, datatype: str, array: NDArray[Any], *, full: bool = False) -> str:
    """``NAME (DTYPE, shape [..]): VALUE``; a VALUE spanning several lines starts on the next
    line, indented. ``full`` writes every element, and BYTES elements uncut."""
    value = np.array2string(
        _displayable(array, full=full),
        separator=", ",
        threshold=sys.maxsize if full else SUMMARY_THRESHOLD,
        edgeitems=EDGE_ITEMS,
        max_line_width=_LINE_WIDTH,
        formatter={"float_kind": _float_text if full else _float_summary},
    )
    header = f"{name} ({datatype}, shape {list(array.shape)}):"
    if "\n" not in value:
        return f"{header} {value}"
    lines = (f"  {line}".rstrip() for line in value.splitlines())
    return header + "\n" + "\n".join(lines)


def tensor_to_json(name: str, datatype: str, array: NDArray[Any]) -> Dict[str, Any]:
    """The tensor as a JSON-ready dict: name, datatype, shape and every element as nested
    lists (see :func:`json_value` for BYTES)."""
    return {
        "name": name,
        "datatype": datatype,
        "shape": list(array.shape),
        "data": _nested(array),
    }


def json_value(element: Any) -> Any:
    """One element in JSON terms: bytes as text where UTF-8, else ``{"base64": "..."}``;
    numpy scalars as Python numbers."""
    if isinstance(element, bytes):
        try:
            return element.decode("utf-8")
        except UnicodeDecodeError:
            return {"base64": base64.b64encode(element).decode("ascii")}
    if isinstance(element, np.generic):
        return element.item()
    return element


def _nested(array: NDArray[Any]) -> Any:
    if array.dtype == np.object_:
        return np.vectorize(json_value, otypes=[object])(array).tolist() if array.size else []
    return array.tolist()


def _displayable(array: NDArray[Any], *, full: bool) -> NDArray[Any]:
    if array.dtype != np.object_ or array.size == 0:
        return array
    shown: NDArray[Any] = np.vectorize(lambda e: _Shown(e, full), otypes=[object])(array)
    return shown


class _Shown:
    """A BYTES element whose repr is what the terminal shows: text (quoted) where UTF-8,
    else bytes; long ones cut unless ``full``."""

    def __init__(self, element: Any, full: bool) -> None:
        self.element = element
        self.full = full

    def __repr__(self) -> str:
        element = self.element
        if not isinstance(element, bytes):
            return repr(element)
        try:
            text: Any = element.decode("utf-8")
        except UnicodeDecodeError:
            text = element
        if self.full or len(text) <= _TEXT_LIMIT:
            return repr(text)
        unit = "chars" if isinstance(text, str) else "bytes"
        return f"{text[:_TEXT_LIMIT]!r}...({len(text)} {unit})"


def _float_text(value: Any, precision: Any = None) -> str:
    """The shortest text that reads back as the same float of its own precision: ``2.0``,
    ``0.1`` for an FP32 0.1 (not 0.10000000149), scientific when very large or small;
    rounded to ``precision`` digits when given."""
    magnitude = abs(float(value))
    if magnitude != 0 and np.isfinite(magnitude) and not 1e-4 <= magnitude < 1e16:
        return np.format_float_scientific(value, precision=precision, trim="-")
    return np.format_float_positional(value, precision=precision, trim="0")


def _float_summary(value: Any) -> str:
    # a summary is for reading: 6 digits are plenty, and keep the lines short
    return _float_text(value, 6)
