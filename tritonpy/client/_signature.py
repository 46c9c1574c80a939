"""What a client knows of a model's tensors: the signature read from its configuration
(batching, inputs, outputs) and the outputs of a response, with their display.

Example::

    sig = ModelSignature.from_config(client.model_config("add_sub"))
    sig.inputs["INPUT0"]             # TensorSpec('INPUT0', 'FP32', (4,))
    print(format_output(outputs[0]))  # OUTPUT0 (FP32, shape [4]): [2.0, 3.0, 4.0, 5.0]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Mapping, Tuple

import numpy as np
from numpy.typing import NDArray

from .._runtime.dtypes import lookup_dtype
from .._tooling.tensor_display import format_tensor, tensor_to_json


@dataclass(frozen=True)
class TensorSpec:
    """One input or output of a model configuration (``datatype`` is the wire name)."""

    name: str
    datatype: str
    dims: Tuple[int, ...]
    optional: bool = False


@dataclass(frozen=True)
class ModelSignature:
    """What a request needs to know about a model: its batching and its tensors."""

    name: str
    max_batch_size: int
    inputs: Dict[str, TensorSpec]
    outputs: Dict[str, TensorSpec]

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ModelSignature:
        """Build from a model configuration as JSON (HTTP ``/config``, or gRPC ``as_json``,
        where int64 values are strings)."""

        def specs(key: str) -> Dict[str, TensorSpec]:
            out: Dict[str, TensorSpec] = {}
            for entry in config.get(key, []):
                dtype = lookup_dtype(str(entry.get("data_type", "TYPE_INVALID")))
                out[str(entry["name"])] = TensorSpec(
                    str(entry["name"]),
                    dtype.name,
                    tuple(int(d) for d in entry.get("dims", [])),
                    bool(entry.get("optional", False)),
                )
            return out

        return cls(
            str(config.get("name", "")),
            int(config.get("max_batch_size", 0) or 0),
            specs("input"),
            specs("output"),
        )


@dataclass(frozen=True)
class OutputTensor:
    """One output of a response."""

    name: str
    datatype: str
    array: NDArray[Any]

    def values(self) -> Any:
        """Nested lists; BYTES elements decoded as UTF-8 where valid, else left as bytes."""
        if self.array.dtype == np.object_:

            def decode(v: Any) -> Any:
                if isinstance(v, bytes):
                    try:
                        return v.decode("utf-8")
                    except UnicodeDecodeError:
                        return v
                return v

            return np.vectorize(decode, otypes=[object])(self.array).tolist()
        return self.array.tolist()

    def to_json(self) -> Dict[str, Any]:
        """``{"name", "datatype", "shape", "data"}``, ready for ``json.dumps``: BYTES elements
        as text where UTF-8, else ``{"base64": ...}``."""
        return tensor_to_json(self.name, self.datatype, self.array)


def format_output(output: OutputTensor, *, full: bool = False) -> str:
    """``NAME (DTYPE, shape [..]): VALUE``, VALUE summarised by numpy (``...`` in long
    dimensions) unless ``full``; see :func:`tritonpy._tooling.tensor_display.format_tensor`."""
    return format_tensor(output.name, output.datatype, output.array, full=full)
