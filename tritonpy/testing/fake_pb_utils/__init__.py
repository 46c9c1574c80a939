"""A faithful fake of Triton's ``triton_python_backend_utils`` (pb_utils), for tests.

Inside tritonserver, ``triton_python_backend_utils`` is a Python file plus a C++ extension that
exist only in the Python backend's stub process. This module offers the same names with the same
behaviour, in pure Python over numpy, so a ``model.py`` written against pb_utils runs unchanged in
pytest once this module is installed as ``sys.modules["triton_python_backend_utils"]`` (see
:func:`tritonpy.testing.install_fake_pb_utils` and :class:`tritonpy.testing.ModelHarness`).

Behaviours measured on the real server (release 24.10) and kept here:

- ``Tensor`` refuses numpy ``U`` arrays (``TritonModelException: NumPy dtype is not
  supported.``); BYTES tensors are object arrays of ``bytes``; ``Tensor.from_dlpack`` refuses
  tensors that are not C-contiguous.
- A response sender refuses ``send()`` without a response unless flags are set, and anything
  after the FINAL flag.
- ``TritonError`` codes are UNKNOWN=0 ... CANCELLED=7 and the default code is INTERNAL.
- Metric errors carry the same texts as the server's.
- Output data is copied when a response is created or sent: mutating an array afterwards does
  not change what the client receives.
- ``Tensor`` takes fixed-width bytes arrays (dtype ``S``) as BYTES and gives them back as they
  are from ``as_numpy()``.
- The response sender checks what the stub checks, in its order (flags, a missing response,
  the non-decoupled one-response rule, closed after FINAL), with its messages.
- BLS: an unknown or unloaded target, or a decoupled one asked without ``decoupled=True``, is
  the server's error response (code INTERNAL), not an exception; ``async_exec`` needs a
  running event loop and returns a future.
- ``unload_model`` of an unknown model is no error; ``load_model`` of one fails with the
  server's message; ``is_model_ready`` honours versions.
- A ``Metric`` whose ``MetricFamily`` object was deleted refuses every operation; a family
  made again after the last one of its name was deleted starts from zero. The metric
  operations the server refuses raise :class:`~.errors.ServerAbort` (24.10 sometimes aborts
  the whole server on them).
- ``Logger`` records the calling file and line, as the server's log shows them.
- The surface is one release's (:mod:`._release`; the harness's ``release=``, default 24.10):
  ``InferenceResponse(parameters=)`` / ``parameters()`` from 25.02 (before: pybind11's
  TypeError, measured on 24.10), ``ResponseIterator.cancel()`` from 25.04 (before:
  AttributeError, measured), each from the python_backend sources of the release.

It runs on CPython 3.9+ with numpy alone.

The fake is a package with one module per concept: :mod:`.errors`, :mod:`.tensor`,
:mod:`.requests`, :mod:`.config`, :mod:`.logger`, :mod:`.metrics` and :mod:`.models`. Every name
is re-exported here, since this package object itself is what gets installed as
``triton_python_backend_utils``. Module-level state lives in one submodule each and is
re-exported by reference (:data:`log_records`, the metric families, the BLS registry); the two
values the harness sets while a model runs (instance name, model directory) are set by
``models.model_running``.
"""

from __future__ import annotations

from ..._runtime._public_names import publish as _publish
from . import _release

# The real module's names are listed in __all__; the fake's extras (test helpers, the metric
# and BLS registries, more types) are re-exported explicitly (``as``), by reference.
from ._config import (
    ModelConfig,
    get_input_config_by_name,
    get_output_config_by_name,
    using_decoupled_model_transaction_policy,
)
from ._errors import ErrorCode as ErrorCode
from ._errors import TritonError, TritonModelException
from ._errors import error_code_name as error_code_name
from ._logger import Logger, LogLevel
from ._logger import LogRecord as LogRecord
from ._logger import clear_logs as clear_logs
from ._logger import log_records as log_records
from ._metrics import LabelledMetric as LabelledMetric
from ._metrics import MetricFamily
from ._metrics import MetricKind as MetricKind
from ._metrics import _families as _families
from ._metrics import clear_metrics as clear_metrics
from ._models import BLSHandler as BLSHandler
from ._models import _bls_models as _bls_models
from ._models import _unloaded as _unloaded
from ._models import get_model_dir, is_model_ready, load_model, unload_model
from ._models import register_bls_model as register_bls_model
from ._models import unregister_bls_model as unregister_bls_model
from ._requests import (
    TRITONSERVER_MEMORY_CPU,
    TRITONSERVER_MEMORY_GPU,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_END,
    TRITONSERVER_REQUEST_FLAG_SEQUENCE_START,
    TRITONSERVER_REQUEST_RELEASE_ALL,
    TRITONSERVER_REQUEST_RELEASE_RESCHEDULE,
    TRITONSERVER_RESPONSE_COMPLETE_FINAL,
    InferenceRequest,
    InferenceResponse,
    PreferredMemory,
    get_input_tensor_by_name,
    get_output_tensor_by_name,
)
from ._requests import MemoryType as MemoryType
from ._requests import ResponseSender as ResponseSender
from ._tensor import (
    TRITON_STRING_TO_NUMPY,
    Tensor,
    deserialize_bytes_tensor,
    numpy_to_triton_type,
    serialize_byte_tensor,
    triton_string_to_numpy,
    triton_to_numpy_type,
)


def tritonpy_release() -> str:
    """Not in the real module: the Triton release whose surface the fake shows now (the
    harness's ``release=``), so that tritonpy's messages can name it."""
    return _release.current().release


def reset() -> None:
    """Not in the real module: clear logs, metrics and BLS registrations."""
    clear_logs()
    clear_metrics()
    _bls_models.clear()
    _unloaded.clear()


# Names that exist in the real module's Python file but are imports there.
__all__ = [
    "TRITONSERVER_MEMORY_CPU",
    "TRITONSERVER_MEMORY_GPU",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_END",
    "TRITONSERVER_REQUEST_FLAG_SEQUENCE_START",
    "TRITONSERVER_REQUEST_RELEASE_ALL",
    "TRITONSERVER_REQUEST_RELEASE_RESCHEDULE",
    "TRITONSERVER_RESPONSE_COMPLETE_FINAL",
    "TRITON_STRING_TO_NUMPY",
    "InferenceRequest",
    "InferenceResponse",
    "LogLevel",
    "Logger",
    "MetricFamily",
    "ModelConfig",
    "PreferredMemory",
    "Tensor",
    "TritonError",
    "TritonModelException",
    "deserialize_bytes_tensor",
    "get_input_config_by_name",
    "get_input_tensor_by_name",
    "get_model_dir",
    "get_output_config_by_name",
    "get_output_tensor_by_name",
    "is_model_ready",
    "load_model",
    "numpy_to_triton_type",
    "serialize_byte_tensor",
    "triton_string_to_numpy",
    "triton_to_numpy_type",
    "unload_model",
    "using_decoupled_model_transaction_policy",
]

_publish(__name__, globals())
