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

It runs on CPython 3.9+ with numpy alone.
"""

from __future__ import annotations

import enum
import json
import logging
import re
import struct
import threading
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterable,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

import numpy as np

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2

#: config.pbtxt type name -> numpy type, exactly as the real module has it (``bool`` included).
TRITON_STRING_TO_NUMPY: Dict[str, Any] = {
    "TYPE_BOOL": bool,
    "TYPE_UINT8": np.uint8,
    "TYPE_UINT16": np.uint16,
    "TYPE_UINT32": np.uint32,
    "TYPE_UINT64": np.uint64,
    "TYPE_INT8": np.int8,
    "TYPE_INT16": np.int16,
    "TYPE_INT32": np.int32,
    "TYPE_INT64": np.int64,
    "TYPE_FP16": np.float16,
    "TYPE_FP32": np.float32,
    "TYPE_FP64": np.float64,
    "TYPE_STRING": np.object_,
}

# TRITONSERVER_DataType codes (tritonserver.h): INVALID=0, BOOL=1 ... BYTES=13, BF16=14.
_TRITON_CODE_TO_NUMPY: Dict[int, Any] = {
    1: np.bool_,
    2: np.uint8,
    3: np.uint16,
    4: np.uint32,
    5: np.uint64,
    6: np.int8,
    7: np.int16,
    8: np.int32,
    9: np.int64,
    10: np.float16,
    11: np.float32,
    12: np.float64,
    13: np.object_,
}
_NUMPY_TO_TRITON_CODE: List[Tuple[Any, int]] = [
    (np.bool_, 1),
    (np.uint8, 2),
    (np.uint16, 3),
    (np.uint32, 4),
    (np.uint64, 5),
    (np.int8, 6),
    (np.int16, 7),
    (np.int32, 8),
    (np.int64, 9),
    (np.float16, 10),
    (np.float32, 11),
    (np.float64, 12),
    (np.object_, 13),
    (np.bytes_, 13),
]

_log = logging.getLogger("tritonpy.fake_pb_utils")


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class TritonModelException(Exception):
    """The exception the real stub raises for misuse of pb_utils objects."""


class ErrorCode(enum.IntEnum):
    """TRITONSERVER_Error_Code values, as ``TritonError.<NAME>`` exposes them."""

    UNKNOWN = 0
    INTERNAL = 1
    NOT_FOUND = 2
    INVALID_ARG = 3
    UNAVAILABLE = 4
    UNSUPPORTED = 5
    ALREADY_EXISTS = 6
    CANCELLED = 7


def error_code_name(code: Union[int, ErrorCode]) -> str:
    """The name of a TritonError code: ``error_code_name(3) == "INVALID_ARG"``."""
    try:
        return ErrorCode(int(code)).name
    except ValueError:
        return "UNKNOWN"


class TritonError:
    """An error to put into an :class:`InferenceResponse`."""

    UNKNOWN = ErrorCode.UNKNOWN
    INTERNAL = ErrorCode.INTERNAL
    NOT_FOUND = ErrorCode.NOT_FOUND
    INVALID_ARG = ErrorCode.INVALID_ARG
    UNAVAILABLE = ErrorCode.UNAVAILABLE
    UNSUPPORTED = ErrorCode.UNSUPPORTED
    ALREADY_EXISTS = ErrorCode.ALREADY_EXISTS
    CANCELLED = ErrorCode.CANCELLED

    def __init__(self, message: str, code: Union[int, ErrorCode] = ErrorCode.INTERNAL) -> None:
        if not isinstance(message, str):
            raise TypeError(f"TritonError message must be a str, got {type(message).__name__}")
        self._message = message
        try:
            self._code = ErrorCode(int(code))
        except (TypeError, ValueError):
            raise TypeError(
                f"TritonError code must be one of TritonError.UNKNOWN ... TritonError.CANCELLED, "
                f"got {code!r}"
            ) from None

    def message(self) -> str:
        return self._message

    def code(self) -> ErrorCode:
        return self._code

    def code_name(self) -> str:
        """Not in the real module: the code's name, e.g. ``"INVALID_ARG"``."""
        return self._code.name

    def __repr__(self) -> str:
        return f"TritonError({self._message!r}, TritonError.{self._code.name})"


# --------------------------------------------------------------------------------------------
# Tensor
# --------------------------------------------------------------------------------------------

_DLPACK_CPU = 1


class _CapsuleHolder:
    """Gives a bare DLPack capsule the ``__dlpack__`` protocol so numpy can import it."""

    def __init__(self, capsule: Any) -> None:
        self._capsule = capsule

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (_DLPACK_CPU, 0)


def _check_tensor_array(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    if not isinstance(array, np.ndarray):
        raise TypeError(f"Tensor data must be a numpy.ndarray, got {type(array).__name__}")
    if array.dtype.kind in ("U", "V", "c", "M", "m"):
        raise TritonModelException("NumPy dtype is not supported.")
    if numpy_to_triton_type(array.dtype) is None:
        raise TritonModelException("NumPy dtype is not supported.")
    # The real Tensor stores data in C order; a strided view is made contiguous.
    # (np.ascontiguousarray would also turn a 0-d array into a 1-d one)
    return array if array.flags.c_contiguous else np.ascontiguousarray(array)


class Tensor:
    """A named tensor (``pb_utils.Tensor``)."""

    def __init__(self, name: str, data: np.ndarray[Any, Any]) -> None:
        if not isinstance(name, str):
            raise TypeError(f"Tensor name must be a str, got {type(name).__name__}")
        self._name = name
        self._array = _check_tensor_array(data)

    def name(self) -> str:
        return self._name

    def as_numpy(self) -> np.ndarray[Any, Any]:
        return self._array

    def triton_dtype(self) -> int:
        code = numpy_to_triton_type(self._array.dtype)
        assert code is not None
        return code

    def shape(self) -> List[int]:
        return [int(d) for d in self._array.shape]

    def is_cpu(self) -> bool:
        return True

    def to_dlpack(self) -> Any:
        """A DLPack capsule over the tensor's memory (numeric tensors only)."""
        return self.__dlpack__()

    def __dlpack__(self, stream: Any = None) -> Any:
        if self._array.dtype == np.object_:
            raise TritonModelException(
                f"tensor '{self._name}': BYTES (object) tensors cannot be exported via DLPack"
            )
        if not hasattr(self._array, "__dlpack__"):
            raise TritonModelException("DLPack needs numpy >= 1.22")
        array = self._array
        if not array.flags.writeable:
            # numpy < 2 cannot export read-only arrays (such as those np.from_dlpack makes).
            array = array.copy()
        if stream is None:
            return array.__dlpack__()
        return array.__dlpack__(stream=stream)

    def __dlpack_device__(self) -> Tuple[int, int]:
        return (_DLPACK_CPU, 0)

    @staticmethod
    def from_dlpack(name: str, dlpack_tensor: Any) -> Tensor:
        """A Tensor sharing the memory of ``dlpack_tensor`` (an object with ``__dlpack__``, such
        as a torch tensor or numpy array, or a DLPack capsule). CPU and C-contiguous only."""
        if not hasattr(np, "from_dlpack"):
            raise TritonModelException("Tensor.from_dlpack in the fake pb_utils needs numpy>=1.22")
        source: Any = dlpack_tensor
        if not hasattr(dlpack_tensor, "__dlpack__"):
            if type(dlpack_tensor).__name__ != "PyCapsule":
                raise TritonModelException(
                    f"Tensor.from_dlpack('{name}', ...): expected an object with __dlpack__ or a "
                    f"DLPack capsule, got {type(dlpack_tensor).__name__}"
                )
            source = _CapsuleHolder(dlpack_tensor)
        else:
            device = getattr(dlpack_tensor, "__dlpack_device__", None)
            if device is not None and int(device()[0]) != _DLPACK_CPU:
                raise TritonModelException(
                    f"Tensor.from_dlpack('{name}', ...): the fake pb_utils holds CPU tensors "
                    f"only, got a tensor on DLPack device {tuple(device())}"
                )
        try:
            array = np.from_dlpack(source)
        except (TypeError, ValueError, RuntimeError, BufferError) as exc:
            raise TritonModelException(
                f"Tensor.from_dlpack('{name}', ...): cannot import the DLPack tensor: {exc}"
            ) from exc
        if not array.flags.c_contiguous:
            raise TritonModelException(
                "DLPack tensor is not contiguous. Only contiguous DLPack tensors that are stored "
                "in C-Order are supported."
            )
        tensor = Tensor.__new__(Tensor)
        tensor._name = name
        tensor._array = array
        return tensor

    def _snapshot(self) -> Tensor:
        copy = Tensor.__new__(Tensor)
        copy._name = self._name
        copy._array = self._array.copy()
        return copy

    def __repr__(self) -> str:
        return f"Tensor({self._name!r}, dtype={self._array.dtype}, shape={self.shape()})"


# --------------------------------------------------------------------------------------------
# Responses, response sender, requests
# --------------------------------------------------------------------------------------------


def _params_to_json(parameters: Union[str, Dict[str, Any], None]) -> str:
    if parameters is None:
        return "{}"
    if isinstance(parameters, str):
        json.loads(parameters)  # must be valid JSON
        return parameters
    if not isinstance(parameters, dict):
        raise TypeError(f"parameters must be a dict or JSON string, got {type(parameters)}")
    for key, value in parameters.items():
        if not isinstance(key, str) or not isinstance(value, (bool, int, str)):
            raise TritonModelException(
                f"parameter {key!r}: keys must be str and values bool, int or str"
            )
    return json.dumps(parameters)


class InferenceResponse:
    """One response (``pb_utils.InferenceResponse``). Output data is copied on creation."""

    def __init__(
        self,
        output_tensors: Optional[Sequence[Tensor]] = None,
        error: Optional[TritonError] = None,
        parameters: Union[str, Dict[str, Any], None] = None,
    ) -> None:
        tensors = list(output_tensors) if output_tensors is not None else []
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"InferenceResponse output_tensors must be pb_utils.Tensor objects, "
                    f"got {type(t).__name__}"
                )
        if error is not None and not isinstance(error, TritonError):
            raise TypeError(
                f"InferenceResponse error must be a pb_utils.TritonError, "
                f"got {type(error).__name__}"
            )
        # The real stub copies output data into shared memory; take the same snapshot here.
        self._outputs = [t._snapshot() for t in tensors]
        self._error = error
        self._parameters = _params_to_json(parameters)

    def output_tensors(self) -> List[Tensor]:
        return list(self._outputs)

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> Optional[TritonError]:
        return self._error

    def parameters(self) -> str:
        return self._parameters

    def __repr__(self) -> str:
        if self._error is not None:
            return f"InferenceResponse(error={self._error!r})"
        return f"InferenceResponse({self._outputs!r})"


class ResponseSender:
    """A request's response sender (``request.get_response_sender()``)."""

    def __init__(self, request: InferenceRequest, decoupled: bool = True) -> None:
        self._request = request
        self._decoupled = decoupled
        self._closed = False
        self._final = threading.Event()
        self._lock = threading.Lock()
        #: (response or None, flags) for every successful send, in order
        self.sent: List[Tuple[Optional[InferenceResponse], int]] = []

    def send(self, response: Optional[InferenceResponse] = None, flags: int = 0) -> None:
        with self._lock:
            if self._closed:
                raise TritonModelException(
                    "Unable to send response. Response sender has been closed."
                )
            if response is None and flags == 0:
                raise TritonModelException(
                    "Inference Response object must be provided when the response flags is set "
                    "to zero."
                )
            if response is not None and not isinstance(response, InferenceResponse):
                raise TypeError(
                    f"send() expects a pb_utils.InferenceResponse, got {type(response).__name__}"
                )
            if not self._decoupled:
                sent_responses = sum(1 for r, _ in self.sent if r is not None)
                if response is not None and sent_responses >= 1:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send more than "
                        "one response."
                    )
            self.sent.append((response, int(flags)))
            if flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL:
                self._closed = True
                self._final.set()

    def is_cancelled(self) -> bool:
        return self._request.is_cancelled()

    # -- for the harness -------------------------------------------------------------------
    def _is_closed(self) -> bool:
        return self._closed

    def _wait_final(self, timeout: Optional[float]) -> bool:
        return self._final.wait(timeout)


class PreferredMemory:
    """Where BLS outputs should be placed (``pb_utils.PreferredMemory``)."""

    def __init__(self, preferred_memory_type: int, preferred_device_id: int = 0) -> None:
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class MemoryType(enum.IntEnum):
    TRITONSERVER_MEMORY_GPU = 0
    TRITONSERVER_MEMORY_CPU = 1


TRITONSERVER_MEMORY_GPU = MemoryType.TRITONSERVER_MEMORY_GPU
TRITONSERVER_MEMORY_CPU = MemoryType.TRITONSERVER_MEMORY_CPU

#: BLS targets: model name -> callable(request) returning an InferenceResponse, or (decoupled)
#: an iterable of InferenceResponse. Fill it with :func:`register_bls_model`.
BLSHandler = Callable[["InferenceRequest"], Any]
_bls_models: Dict[str, BLSHandler] = {}


def register_bls_model(name: str, handler: BLSHandler) -> None:
    """Not in the real module: make ``InferenceRequest(model_name=name).exec()`` call
    ``handler(request)`` and ``is_model_ready(name)`` return True."""
    _bls_models[name] = handler


def unregister_bls_model(name: str) -> None:
    """Not in the real module: undo :func:`register_bls_model`."""
    _bls_models.pop(name, None)


class InferenceRequest:
    """An inference request (``pb_utils.InferenceRequest``): what ``execute`` receives, and what
    a model builds for BLS."""

    def __init__(
        self,
        request_id: str = "",
        correlation_id: Union[int, str] = 0,
        inputs: Optional[Sequence[Tensor]] = None,
        requested_output_names: Optional[Iterable[str]] = None,
        model_name: str = "",
        model_version: int = -1,
        flags: int = 0,
        timeout: int = 0,
        preferred_memory: Optional[PreferredMemory] = None,
        trace: Any = None,
        parameters: Union[str, Dict[str, Any], None] = None,
    ) -> None:
        tensors = list(inputs) if inputs is not None else []
        for t in tensors:
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"InferenceRequest inputs must be pb_utils.Tensor objects, "
                    f"got {type(t).__name__}"
                )
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._inputs = tensors
        self._requested_output_names: Set[str] = set(requested_output_names or ())
        self._model_name = model_name
        self._model_version = model_version
        self._flags = flags
        self._timeout = timeout
        self._preferred_memory = preferred_memory or PreferredMemory(TRITONSERVER_MEMORY_CPU, 0)
        self._trace = trace
        self._parameters = _params_to_json(parameters)
        self._cancelled = False
        self._release_flags = TRITONSERVER_REQUEST_RELEASE_ALL
        self._sender: Optional[ResponseSender] = None
        self._decoupled = True

    def inputs(self) -> List[Tensor]:
        return list(self._inputs)

    def request_id(self) -> str:
        return self._request_id

    def correlation_id(self) -> Union[int, str]:
        return self._correlation_id

    def flags(self) -> int:
        return self._flags

    def set_flags(self, flags: int) -> None:
        self._flags = flags

    def timeout(self) -> int:
        return self._timeout

    def parameters(self) -> str:
        return self._parameters

    def trace(self) -> Any:
        return self._trace

    def requested_output_names(self) -> Set[str]:
        return set(self._requested_output_names)

    def get_response_sender(self) -> ResponseSender:
        if self._sender is None:
            self._sender = ResponseSender(self, decoupled=self._decoupled)
        return self._sender

    def is_cancelled(self) -> bool:
        return self._cancelled

    def set_release_flags(self, flags: int) -> None:
        if flags not in (TRITONSERVER_REQUEST_RELEASE_ALL, TRITONSERVER_REQUEST_RELEASE_RESCHEDULE):
            raise TritonModelException(f"invalid request release flags {flags}")
        self._release_flags = flags

    def exec(self, decoupled: bool = False) -> Any:
        """Business-logic scripting: run this request on another model.

        The fake has no server, so the target must be registered with
        :func:`register_bls_model` (``ModelHarness.register_bls_model``)."""
        handler = _bls_models.get(self._model_name)
        if handler is None:
            raise TritonModelException(
                f"BLS request to model '{self._model_name}': the fake pb_utils has no model "
                f"repository, so BLS needs a registry of models; register the target with "
                f"ModelHarness.register_bls_model('{self._model_name}', handler) or "
                f"fake_pb_utils.register_bls_model(...)"
            )
        result = handler(self)
        if decoupled:
            if isinstance(result, InferenceResponse):
                return iter([result])
            return iter(result)
        if not isinstance(result, InferenceResponse):
            raise TritonModelException(
                f"BLS handler for model '{self._model_name}' must return a "
                f"pb_utils.InferenceResponse, got {type(result).__name__}"
            )
        return result

    async def async_exec(self, decoupled: bool = False) -> Any:
        return self.exec(decoupled=decoupled)

    # -- for the harness -------------------------------------------------------------------
    def _cancel(self) -> None:
        """Mark the request cancelled, as a client cancellation would."""
        self._cancelled = True

    def _release_flags_value(self) -> int:
        return self._release_flags

    def __repr__(self) -> str:
        names = [t.name() for t in self._inputs]
        return f"InferenceRequest(request_id={self._request_id!r}, inputs={names})"


# --------------------------------------------------------------------------------------------
# Model repository functions (BLS registry backed)
# --------------------------------------------------------------------------------------------

_model_dir: str = ""


def get_model_dir() -> str:
    """The directory of the model being run (the harness sets it)."""
    return _model_dir


def load_model(model_name: str, config: str = "", files: Optional[Dict[str, bytes]] = None) -> None:
    if model_name in _bls_models:
        return
    raise TritonModelException(
        f"Failed to load model '{model_name}': the fake pb_utils has no model repository; "
        f"register the model with ModelHarness.register_bls_model('{model_name}', handler)"
    )


def unload_model(model_name: str, unload_dependents: bool = False) -> None:
    if model_name not in _bls_models:
        raise TritonModelException(
            f"Failed to unload model '{model_name}': no such model in the fake pb_utils registry"
        )
    _bls_models.pop(model_name)


def is_model_ready(model_name: str, model_version: str = "") -> bool:
    return model_name in _bls_models


# --------------------------------------------------------------------------------------------
# Logger
# --------------------------------------------------------------------------------------------


class LogLevel(enum.IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2
    VERBOSE = 3


class LogRecord(NamedTuple):
    level: LogLevel
    message: str


#: every message logged through :class:`Logger`, in order; clear it with :func:`clear_logs`.
log_records: List[LogRecord] = []

_PY_LEVELS = {
    LogLevel.INFO: logging.INFO,
    LogLevel.WARNING: logging.WARNING,
    LogLevel.ERROR: logging.ERROR,
    LogLevel.VERBOSE: logging.DEBUG,
}


def clear_logs() -> None:
    """Not in the real module: forget the recorded log messages."""
    del log_records[:]


_Level = LogLevel


class Logger:
    """``pb_utils.Logger``: the server log. Here: logging logger ``tritonpy.fake_pb_utils``
    plus :data:`log_records`."""

    LogLevel = LogLevel
    INFO = LogLevel.INFO
    WARNING = LogLevel.WARNING
    ERROR = LogLevel.ERROR
    VERBOSE = LogLevel.VERBOSE

    @staticmethod
    def log(msg: str, level: Union[int, _Level] = _Level.INFO) -> None:
        lvl = _Level(int(level))
        log_records.append(LogRecord(lvl, str(msg)))
        _log.log(_PY_LEVELS[lvl], "%s", msg)

    @staticmethod
    def log_info(msg: str) -> None:
        Logger.log(msg, LogLevel.INFO)

    @staticmethod
    def log_warn(msg: str) -> None:
        Logger.log(msg, LogLevel.WARNING)

    @staticmethod
    def log_error(msg: str) -> None:
        Logger.log(msg, LogLevel.ERROR)

    @staticmethod
    def log_verbose(msg: str) -> None:
        Logger.log(msg, LogLevel.VERBOSE)


# --------------------------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------------------------

#: the model instance name put into metric error messages (the harness sets it)
_instance_name: str = "model_0"
_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


class MetricKind(enum.IntEnum):
    COUNTER = 0
    GAUGE = 1
    HISTOGRAM = 2


_KIND_NAMES = {
    MetricKind.COUNTER: "TRITONSERVER_METRIC_KIND_COUNTER",
    MetricKind.GAUGE: "TRITONSERVER_METRIC_KIND_GAUGE",
    MetricKind.HISTOGRAM: "TRITONSERVER_METRIC_KIND_HISTOGRAM",
}

_families: Dict[str, MetricFamily] = {}


def _server_message(what: str, message: str) -> str:
    return f"{what}: Failed to process the request for model '{_instance_name}', message: {message}"


class LabelledMetric:
    """One labelled metric of a :class:`MetricFamily`."""

    def __init__(
        self,
        family: MetricFamily,
        labels: Dict[str, str],
        buckets: Optional[List[float]],
    ) -> None:
        self._family = family
        self.labels = dict(labels)
        self.buckets = list(buckets) if buckets is not None else None
        self._value = 0.0
        #: every value passed to observe() (histograms), for tests
        self.observations: List[float] = []

    def _unsupported(self, what: str, op: str) -> TritonModelException:
        kind = _KIND_NAMES[self._family.kind]
        return TritonModelException(_server_message(what, f"{kind} does not support {op}"))

    def increment(self, value: float) -> None:
        kind = self._family.kind
        if kind == MetricKind.HISTOGRAM:
            raise self._unsupported("Failed to increment metric value", "Increment")
        if kind == MetricKind.COUNTER and value < 0:
            raise TritonModelException(
                _server_message(
                    "Failed to increment metric value",
                    "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by "
                    "non-negative values.",
                )
            )
        self._value += float(value)

    def set(self, value: float) -> None:
        if self._family.kind != MetricKind.GAUGE:
            raise self._unsupported("Failed to set metric value", "Set")
        self._value = float(value)

    def observe(self, value: float) -> None:
        if self._family.kind != MetricKind.HISTOGRAM:
            raise self._unsupported("Failed to observe metric value", "Observe")
        self.observations.append(float(value))

    def value(self) -> float:
        if self._family.kind == MetricKind.HISTOGRAM:
            raise self._unsupported("Failed to get metric value", "Value")
        return self._value


class MetricFamily:
    """``pb_utils.MetricFamily(name, description, kind)``."""

    COUNTER = MetricKind.COUNTER
    GAUGE = MetricKind.GAUGE
    HISTOGRAM = MetricKind.HISTOGRAM

    def __init__(self, name: str, description: str, kind: Union[int, MetricKind]) -> None:
        kind_ = MetricKind(int(kind))
        if not _METRIC_NAME.match(name):
            raise TritonModelException(
                _server_message("Error when creating MetricFamily", "Invalid metric name")
            )
        existing = _families.get(name)
        if existing is not None and existing.kind != kind_:
            raise TritonModelException(
                _server_message(
                    "Error when creating MetricFamily",
                    "Family name already exists with different type",
                )
            )
        self.name = name
        self.description = description
        self.kind: MetricKind = kind_
        self._metrics: Dict[FrozenSet[Tuple[str, str]], LabelledMetric] = (
            existing._metrics if existing is not None else {}
        )
        _families[name] = self

    def Metric(
        self,
        labels: Optional[Dict[str, str]] = None,
        buckets: Optional[List[float]] = None,
    ) -> LabelledMetric:
        if self.kind == MetricKind.HISTOGRAM and buckets is None:
            raise TritonModelException("Failed to create metric. Missing required buckets.")
        if self.kind != MetricKind.HISTOGRAM and buckets is not None:
            raise TritonModelException("Failed to create metric. Unexpected buckets found.")
        key = frozenset((labels or {}).items())
        metric = self._metrics.get(key)
        if metric is None:
            metric = LabelledMetric(self, dict(labels or {}), buckets)
            self._metrics[key] = metric
        return metric


def clear_metrics() -> None:
    """Not in the real module: forget every metric family."""
    _families.clear()


# --------------------------------------------------------------------------------------------
# Pure-Python helpers (same semantics as the real module's Python part)
# --------------------------------------------------------------------------------------------


def serialize_byte_tensor(input_tensor: np.ndarray[Any, Any]) -> Union[bytes, Tuple[()], None]:
    """Flatten a BYTES tensor (object or ``S`` array) in C order into bytes, each element
    preceded by its 4-byte little-endian length. Empty tensor: ``()``; other dtypes: None
    (both as the real function returns)."""
    if input_tensor.size == 0:
        return ()
    is_object = input_tensor.dtype == np.object_
    if not is_object and input_tensor.dtype.type != np.bytes_:
        return None
    parts: List[bytes] = []
    for item in input_tensor.reshape(-1, order="C").tolist():
        data = item
        if is_object and type(item) is not bytes:
            data = str(item).encode("utf-8")
        parts.append(struct.pack("<I", len(data)))
        parts.append(data)
    return b"".join(parts)


def deserialize_bytes_tensor(encoded_tensor: Any) -> np.ndarray[Any, Any]:
    """Inverse of :func:`serialize_byte_tensor`: a 1-D object array of ``bytes``."""
    buf = memoryview(encoded_tensor).cast("B") if not isinstance(encoded_tensor, bytes) else None
    data = bytes(buf) if buf is not None else encoded_tensor
    items: List[bytes] = []
    offset = 0
    while offset < len(data):
        (length,) = struct.unpack_from("<I", data, offset)
        offset += 4
        if offset + length > len(data):
            raise struct.error(
                f"serialized BYTES tensor is truncated: element of {length} bytes at offset "
                f"{offset} but only {len(data) - offset} bytes left"
            )
        items.append(data[offset : offset + length])
        offset += length
    result = np.empty(len(items), dtype=np.object_)
    result[:] = items
    return result


def get_input_tensor_by_name(inference_request: InferenceRequest, name: str) -> Optional[Tensor]:
    for tensor in inference_request.inputs():
        if tensor.name() == name:
            return tensor
    return None


def get_output_tensor_by_name(inference_response: InferenceResponse, name: str) -> Optional[Tensor]:
    for tensor in inference_response.output_tensors():
        if tensor.name() == name:
            return tensor
    return None


def get_input_config_by_name(model_config: Dict[str, Any], name: str) -> Optional[Dict[str, Any]]:
    for entry in model_config.get("input", []):
        if entry["name"] == name:
            return entry  # type: ignore[no-any-return]
    return None


def get_output_config_by_name(model_config: Dict[str, Any], name: str) -> Optional[Dict[str, Any]]:
    for entry in model_config.get("output", []):
        if entry["name"] == name:
            return entry  # type: ignore[no-any-return]
    return None


def using_decoupled_model_transaction_policy(model_config: Dict[str, Any]) -> bool:
    if "model_transaction_policy" in model_config:
        return bool(model_config["model_transaction_policy"]["decoupled"])
    return False


def triton_to_numpy_type(data_type: int) -> Any:
    return _TRITON_CODE_TO_NUMPY.get(data_type)


def numpy_to_triton_type(data_type: Any) -> Optional[int]:
    for np_type, code in _NUMPY_TO_TRITON_CODE:
        try:
            if data_type == np_type:
                return code
        except TypeError:
            continue
    return None


def triton_string_to_numpy(triton_type_string: str) -> Any:
    return TRITON_STRING_TO_NUMPY[triton_type_string]


class ModelConfig:
    """The model configuration handed to ``auto_complete_config``.

    Only max_batch_size, inputs, outputs, dynamic batching and the transaction policy can be
    changed; the error messages are those of the real module."""

    def __init__(self, model_config: str) -> None:
        self._model_config: Dict[str, Any] = json.loads(model_config)

    def as_dict(self) -> Dict[str, Any]:
        return self._model_config

    def _name(self) -> str:
        return str(self._model_config["name"])

    def set_max_batch_size(self, max_batch_size: int) -> None:
        current = self._model_config["max_batch_size"]
        if current > max_batch_size:
            raise ValueError(
                f"configuration specified max_batch_size {current}, but in auto-complete-config "
                f"function for model '{self._name()}' specified max_batch_size {max_batch_size}"
            )
        self._model_config["max_batch_size"] = max_batch_size

    def set_dynamic_batching(self) -> None:
        for scheduler in ("sequence_batching", "ensemble_scheduling"):
            if scheduler in self._model_config:
                raise ValueError(
                    f"Configuration specified scheduling_choice as '{scheduler}', but "
                    f"auto-complete-config function for model '{self._name()}' tries to set "
                    f"scheduling_choice as 'dynamic_batching'"
                )
        self._model_config.setdefault("dynamic_batching", {})

    def _check_io(self, io: Dict[str, Any], what: str, allowed: Sequence[str]) -> None:
        for prop in io:
            if prop not in allowed:
                if len(allowed) == 4:
                    listed = "'name', 'data_type', 'dims' and 'optional'"
                else:
                    listed = "'name', 'data_type' and 'dims'"
                raise ValueError(
                    f"{what} '{io['name']}' in auto-complete-config function for model "
                    f"'{self._name()}' contains property other than {listed}."
                )
        if "name" not in io:
            raise ValueError(
                f"{what} in auto-complete-config function for model '{self._name()}' is "
                f"missing 'name' property."
            )
        for prop in ("data_type", "dims"):
            if prop not in io:
                raise ValueError(
                    f"{what} '{io['name']}' in auto-complete-config function for model "
                    f"'{self._name()}' is missing '{prop}' property."
                )

    def _merge_io(self, io: Dict[str, Any], what: str, with_optional: bool) -> None:
        section = self._model_config[what]
        for current in section:
            if current["name"] != io["name"]:
                continue
            if current["data_type"] != "TYPE_INVALID" and current["data_type"] != io["data_type"]:
                raise ValueError(
                    f"unable to load model '{self._name()}', configuration expects datatype "
                    f"{current['data_type']} for {what} '{io['name']}', model provides "
                    f"{io['data_type']}"
                )
            if current["dims"] and current["dims"] != io["dims"]:
                raise ValueError(
                    f"model '{self._name()}', tensor '{io['name']}': the model expects dims "
                    f"{io['dims']!s} but the model configuration specifies dims "
                    f"{current['dims']!s}"
                )
            if (
                with_optional
                and "optional" in current
                and "optional" in io
                and current["optional"] != io["optional"]
            ):
                raise ValueError(
                    f"model '{self._name()}', tensor '{io['name']}': the model expects optional "
                    f"{io['optional']!s} but the model configuration specifies optional "
                    f"{current['optional']!s}"
                )
            current["data_type"] = io["data_type"]
            current["dims"] = io["dims"]
            if with_optional and "optional" in io:
                current["optional"] = io["optional"]
            return
        section.append(io)

    def add_input(self, input: Dict[str, Any]) -> None:
        self._check_io(input, "input", ("name", "data_type", "dims", "optional"))
        self._merge_io(input, "input", with_optional=True)

    def add_output(self, output: Dict[str, Any]) -> None:
        self._check_io(output, "output", ("name", "data_type", "dims"))
        self._merge_io(output, "output", with_optional=False)

    def set_model_transaction_policy(self, transaction_policy_dict: Dict[str, Any]) -> None:
        for prop in transaction_policy_dict:
            if prop != "decoupled":
                raise ValueError(
                    f"model transaction property in auto-complete-config function for model "
                    f"'{self._name()}' contains property other than 'decoupled'."
                )
        policy = self._model_config.setdefault("model_transaction_policy", {})
        if "decoupled" in transaction_policy_dict:
            new = transaction_policy_dict["decoupled"]
            if "decoupled" in policy and policy["decoupled"] != new:
                raise ValueError(
                    f"trying to change decoupled property in auto-complete-config for model "
                    f"'{self._name()}', which is already set to '{policy['decoupled']!s}'."
                )
            policy["decoupled"] = new


def reset() -> None:
    """Not in the real module: clear logs, metrics and BLS registrations."""
    clear_logs()
    clear_metrics()
    _bls_models.clear()


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
