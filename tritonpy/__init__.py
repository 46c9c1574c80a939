"""tritonpy: write Python models for NVIDIA Triton Inference Server declaratively.

>>> import tritonpy as tp
>>> class Double(tp.Model):
...     inputs = {"X": tp.Tensor("FP32", [-1])}
...     outputs = {"Y": tp.Tensor("FP32", [-1])}
...     max_batch_size = 8
...     def infer(self, X):
...         return {"Y": X * 2}

The public API is what ``__all__`` lists; everything else is private.
"""

from __future__ import annotations

from . import parameters, vision
from ._runtime._calls import CallError
from ._runtime._config_parameters import config_parameter
from ._runtime._metric_declarations import Counter, Gauge, Histogram
from ._runtime._metric_series import MetricError
from ._runtime._public_names import publish as _publish
from ._runtime._sequence import Sequence, SequenceInfo
from ._runtime.batching import Padded, group_indices, merge_rows, pad_rows, split_rows, trim_padded
from ._runtime.codecs import (
    JSON,
    MISSING,
    Bytes,
    Codec,
    CodecPlan,
    ElementCodec,
    Image,
    Tensor,
    Text,
    TorchTensor,
)
from ._runtime.dtypes import DTYPES, DType, lookup_dtype
from ._runtime.errors import (
    DeclarationError,
    InputError,
    MissingDependencyError,
    OutputError,
    ToolError,
    TritonPyError,
    TritonRequestError,
)
from ._runtime.model import Model
from ._runtime.response import Response

__version__ = "0.1.0.dev0"

__all__ = [
    "DTYPES",
    "JSON",
    "MISSING",
    "Bytes",
    "CallError",
    "Codec",
    "CodecPlan",
    "Counter",
    "DType",
    "DeclarationError",
    "ElementCodec",
    "Gauge",
    "Histogram",
    "Image",
    "InputError",
    "MetricError",
    "MissingDependencyError",
    "Model",
    "OutputError",
    "Padded",
    "Response",
    "Sequence",
    "SequenceInfo",
    "Tensor",
    "Text",
    "ToolError",
    "TorchTensor",
    "TritonPyError",
    "TritonRequestError",
    "__version__",
    "config_parameter",
    "group_indices",
    "lookup_dtype",
    "merge_rows",
    "pad_rows",
    "parameters",
    "split_rows",
    "trim_padded",
    "vision",
]

# tracebacks, reprs and pickles name tritonpy.InputError, not its private module
_publish(__name__, globals())
