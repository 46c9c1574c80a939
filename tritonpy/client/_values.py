"""A request's tensors from command-line strings: ``NAME=VALUE`` assignments turned into
tensors of the model's declared dtypes and shapes, every name checked against its signature.

Value forms (``parse_input_value``), chosen by the input's datatype in the model's
configuration:

- BYTES input: one row. ``@path`` sends the file's bytes (an encoded image, a document...);
  any other VALUE is sent as its UTF-8 text, exactly as written, so a JSON value
  (``{"a": 1}``, ``[1, 2]``) reaches a ``tp.JSON`` input as that JSON document;
- any other input: a JSON number or list, a tensor of the declared dtype.

A batch dimension of 1 is added when the model batches (``max_batch_size > 0``) and the value
has one dimension fewer.

Example::

    arrays = request_arrays(client.signature("add_sub"), {"INPUT0": "[1,2,3,4]",
                                                          "INPUT1": "[1,1,1,1]"})
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple

import numpy as np
from numpy.typing import NDArray

from .._runtime.dtypes import lookup_dtype
from .._tooling.errors import ServerError
from ._signature import ModelSignature, TensorSpec


def split_assignment(text: str) -> Tuple[str, str]:
    """``"NAME=VALUE"`` -> ``("NAME", "VALUE")``."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ServerError(
            f"input {text!r}: expected NAME=VALUE (a JSON list/number, text, or @file)."
        )
    return name, value


def _fit_shape(array: NDArray[Any], spec: TensorSpec, max_batch_size: int) -> NDArray[Any]:
    if array.ndim == 0:
        array = array.reshape((1,) * max(len(spec.dims), 1))
    if max_batch_size > 0 and array.ndim == len(spec.dims):
        array = array[np.newaxis, ...]
    return array


def parse_input_value(text: str, spec: TensorSpec, max_batch_size: int = 0) -> NDArray[Any]:
    """Turn one command-line value into the tensor for input ``spec`` (see the module's
    docstring for the forms).

    Example::

        spec = TensorSpec("TEXT", "BYTES", (1,))
        parse_input_value("hello", spec, max_batch_size=8)   # array([[b'hello']], dtype=object)
        parse_input_value('{"a": 1}', spec, 8)               # array([[b'{"a": 1}']], ...)
    """
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ServerError(
                f"input {spec.name!r}: cannot read file {str(path)!r}: {exc.strerror}. "
                "Pass @<path of an existing file>."
            ) from exc
        if spec.datatype != "BYTES":
            raise ServerError(
                f"input {spec.name!r} is {spec.datatype}: a file (@{path}) can only fill a BYTES "
                "input. Pass a JSON list of numbers instead."
            )
        return _fit_shape(np.array([data], dtype=np.object_), spec, max_batch_size)
    if spec.datatype == "BYTES":
        # one row, the text as written: a JSON document stays one document (tp.JSON, tp.Text)
        return _fit_shape(np.array([text.encode("utf-8")], dtype=np.object_), spec, max_batch_size)
    try:
        value: Any = json.loads(text)
    except ValueError:
        value = None
        is_json = False
    else:
        is_json = isinstance(value, (list, int, float))  # bool is an int: BOOL inputs
    if not is_json:
        raise ServerError(
            f"input {spec.name!r} is {spec.datatype} with dims {list(spec.dims)}: expected a "
            f"JSON number or list, got {text!r}. Example: {spec.name}=[1, 2, 3]."
        )
    dtype = lookup_dtype(spec.datatype).numpy
    if dtype is None:
        raise ServerError(
            f"input {spec.name!r} is {spec.datatype}, which numpy cannot hold; send it with "
            "your own client."
        )
    try:
        array = np.array(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ServerError(
            f"input {spec.name!r}: cannot make a {spec.datatype} tensor from {text!r}: {exc}. "
            "Pass a rectangular JSON list of numbers."
        ) from exc
    return _fit_shape(array, spec, max_batch_size)


def request_arrays(
    sig: ModelSignature, values: Mapping[str, str], outputs: Optional[Sequence[str]] = None
) -> Dict[str, NDArray[Any]]:
    """The tensors of a request to the model ``sig`` describes, from command-line strings
    (see :func:`parse_input_value`), once every name is checked: no unknown input, every
    required one given, no unknown output among ``outputs``.

    Example::

        request_arrays(client.signature("add_sub"), {"INPUT0": "[1,2,3,4]", ...})
    """
    model = sig.name
    unknown = [name for name in values if name not in sig.inputs]
    if unknown:
        raise ServerError(
            f"model {model!r} has no input(s) {', '.join(map(repr, unknown))}; its inputs "
            f"are {', '.join(sig.inputs) or 'none'}."
        )
    missing = [n for n, s in sig.inputs.items() if not s.optional and n not in values]
    if missing:
        raise ServerError(
            f"model {model!r} needs input(s) {', '.join(map(repr, missing))}: pass "
            + " ".join(f"--input {n}=..." for n in missing)
            + "."
        )
    bad_outputs = [n for n in outputs or () if n not in sig.outputs]
    if bad_outputs:
        raise ServerError(
            f"model {model!r} has no output(s) {', '.join(map(repr, bad_outputs))}; its "
            f"outputs are {', '.join(sig.outputs) or 'none'}."
        )
    return {
        name: parse_input_value(text, sig.inputs[name], sig.max_batch_size)
        for name, text in values.items()
    }
