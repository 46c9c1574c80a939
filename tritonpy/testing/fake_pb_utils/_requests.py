"""pb_utils requests and responses: ``InferenceRequest``, ``InferenceResponse``, the response
sender, ``PreferredMemory`` and the request/response flag constants."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import asyncio
import enum
import functools
import inspect
import sys
import threading
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple, Union

from ..._tooling.release_facts import API_ITERATOR_CANCEL, API_RESPONSE_PARAMETERS
from ._binding import (
    dict_parameters,
    lenient_arguments,
    request_arguments,
    request_parameters,
    request_refused,
)
from ._errors import TritonError, TritonModelException
from ._models import bls_refusal, in_model_code, loaded_handler
from ._release import STUB_MODULE, ReleaseMethod, constructor_refused, has_api
from ._tensor import Tensor

TRITONSERVER_REQUEST_FLAG_SEQUENCE_START = 1
TRITONSERVER_REQUEST_FLAG_SEQUENCE_END = 2
TRITONSERVER_RESPONSE_COMPLETE_FINAL = 1
TRITONSERVER_REQUEST_RELEASE_ALL = 1
TRITONSERVER_REQUEST_RELEASE_RESCHEDULE = 2


def _tensors(values: Optional[Sequence[Tensor]], what: str) -> List[Tensor]:
    """The tensors given to a constructor (none: empty); TypeError for anything else."""
    tensors = list(values) if values is not None else []
    for tensor in tensors:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"{what} must be pb_utils.Tensor objects, got {type(tensor).__name__}")
    return tensors


def _not_ready(model_name: str) -> str:
    return (
        f"Model {model_name} - Error when running inference: Failed for execute the inference "
        f"request. Model '{model_name}' is not ready."
    )


def _not_decoupled_call(model_name: str) -> str:
    return (
        f"Model {model_name} - Error when running inference: Model {model_name} is using the "
        "decoupled. The current BLS request call doesn't support models using the decoupled "
        "transaction policy. Please use 'decoupled=True' argument to the 'exec' or "
        "'async_exec' calls for decoupled models.'"
    )


#: the 24.10 binding's constructor, as pybind11 shows it (measured)
_RESPONSE_SIGNATURE_24_10 = (
    f"output_tensors: List[{STUB_MODULE}.Tensor] = [], error: {STUB_MODULE}.TritonError = None"
)


class InferenceResponse:
    """One response (``pb_utils.InferenceResponse``). Output data is copied on creation.

    ``parameters`` (a dict of str to bool/int/str) and :meth:`parameters` exist from release
    25.02 (python_backend r25.02 src/pb_stub.cc); on the release the fake shows before that
    (24.10 by default) the constructor refuses ``parameters`` with pybind11's TypeError and
    the object has no ``parameters`` attribute, as measured on the 24.10 server."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # (output_tensors=None, error=None, parameters=None); read by hand so that a release
        # without parameters can say how the call passed its arguments, as pybind11 does
        if (len(args) > 2 or "parameters" in kwargs) and not has_api(API_RESPONSE_PARAMETERS):
            raise constructor_refused(
                "InferenceResponse", _RESPONSE_SIGNATURE_24_10, args, list(kwargs.items())
            )
        self._init(*args, **kwargs)

    def _init(
        self,
        output_tensors: Optional[Sequence[Tensor]] = None,
        error: Optional[TritonError] = None,
        parameters: Any = None,
    ) -> None:
        tensors = _tensors(output_tensors, "InferenceResponse output_tensors")
        if error is not None and not isinstance(error, TritonError):
            raise TypeError(
                f"InferenceResponse error must be a pb_utils.TritonError, "
                f"got {type(error).__name__}"
            )
        #: the JSON text of the response parameters ("{}": none); read it through
        #: parameters() in model code, as the release allows
        self._parameters = dict_parameters(parameters)
        # The real stub copies output data into shared memory; take the same snapshot here.
        self._outputs = [t._snapshot() for t in tensors]
        self._error = error

    def output_tensors(self) -> List[Tensor]:
        return list(self._outputs)

    def has_error(self) -> bool:
        return self._error is not None

    def error(self) -> Optional[TritonError]:
        return self._error

    def _parameters_json(self) -> str:
        """The response parameters as JSON text (``"{}"`` when none were given)."""
        return self._parameters

    parameters = ReleaseMethod(API_RESPONSE_PARAMETERS, _parameters_json)

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
        self._sends = 0
        self._sent_event = threading.Event()  # set on every send (the harness waits on it)
        self._cancel_after: Optional[int] = None  # see cancel_after()
        self._cancelled_event = threading.Event()
        #: (response or None, flags) for every successful send, in order
        self.sent: List[Tuple[Optional[InferenceResponse], int]] = []

    def send(self, response: Optional[InferenceResponse] = None, flags: int = 0) -> None:
        # the checks and their order are the stub's (response_sender.cc, r24.10)
        if flags not in (0, TRITONSERVER_RESPONSE_COMPLETE_FINAL):
            raise TritonModelException("Unable to send response. Unsupported flag provided.")
        if response is None and flags == 0:
            raise TritonModelException(
                "Inference Response object must be provided when the response flags is set to zero."
            )
        if response is not None and not isinstance(response, InferenceResponse):
            raise TypeError(
                f"send() expects a pb_utils.InferenceResponse, got {type(response).__name__}"
            )
        with self._lock:
            if not self._decoupled:
                # a flags-only send counts as a send, as in the stub
                if response is not None and self._sends > 0:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send more than "
                        "one response."
                    )
                if response is None and self._sends == 0:
                    raise TritonModelException(
                        "Unable to send response. Non-decoupled model cannot send complete "
                        "final before sending a response."
                    )
            if self._closed:
                raise TritonModelException(
                    "Unable to send response. Response sender has been closed."
                )
            self._sends += 1
            self.sent.append((response, int(flags)))
            # the harness's client cancels once it has received that many responses
            limit = self._cancel_after
            if limit is not None and sum(1 for r, _ in self.sent if r is not None) >= limit:
                self._request.cancel_as_client()
                self._cancelled_event.set()
            if flags & TRITONSERVER_RESPONSE_COMPLETE_FINAL:
                self._closed = True
                self._final.set()
            self._sent_event.set()

    def is_cancelled(self) -> bool:
        return self._request.is_cancelled()

    # -- not in pb_utils: for the harness ------------------------------------------------
    def cancel_after(self, responses: int) -> None:
        """Cancel the request once ``responses`` responses were sent, as a streaming client
        that stops after its n-th response does (``ModelHarness.infer_stream``)."""
        self._cancel_after = responses

    def wait_final(self, timeout: Optional[float]) -> bool:
        """Until the FINAL flag was sent (False when ``timeout`` seconds passed first)."""
        return self._final.wait(timeout)

    def wait_cancelled(self, timeout: Optional[float]) -> bool:
        """Until the harness's client cancelled, or the FINAL flag came first (False)."""
        waited = 0.0
        step = 0.01
        while not self._cancelled_event.is_set():
            if self._final.is_set() or (timeout is not None and waited >= timeout):
                return self._cancelled_event.is_set()
            self._final.wait(step)
            waited += step
        return True


class ResponseIterator:
    """What ``request.exec(decoupled=True)`` returns: the callee's responses, in order, the
    last one empty (the FINAL flag), as the stub's ``ResponseIterator``.

    ``cancel()`` exists from release 25.04 (python_backend r25.04 src/pb_response_iterator.cc):
    once the iterator is finished it does nothing, else it cancels the callee's request (its
    ``is_cancelled()`` turns True). In the fake, a harness target has run to its end when
    ``exec`` returns, so only a target that produces its responses lazily (a ``RawTarget``
    generator checking ``request.is_cancelled()``) sees it."""

    def __init__(self, request: InferenceRequest, responses: Iterable[InferenceResponse]) -> None:
        self._request = request
        self._responses = iter(responses)
        self._finished = False

    def __iter__(self) -> ResponseIterator:
        return self

    def __next__(self) -> InferenceResponse:
        try:
            return next(self._responses)
        except StopIteration:
            self._finished = True
            raise

    def _cancel(self) -> None:
        """Cancel the callee's request, unless every response has been read already."""
        if not self._finished:
            self._request.cancel_as_client()

    cancel = ReleaseMethod(API_ITERATOR_CANCEL, _cancel)

    def __repr__(self) -> str:
        return f"<{STUB_MODULE}.ResponseIterator object at {hex(id(self))}>"


class PreferredMemory:
    """Where BLS outputs should be placed (``pb_utils.PreferredMemory``)."""

    def __init__(self, preferred_memory_type: int, preferred_device_id: int = 0) -> None:
        self.preferred_memory_type = preferred_memory_type
        self.preferred_device_id = preferred_device_id


class InferenceTrace:
    """A request's trace (``request.trace()``; pass it on with ``InferenceRequest(trace=)``):
    the fake traces nothing, so ``get_context()`` is None, as the stub's answer for a
    request without an OpenTelemetry context (python_backend r24.10 src/pb_stub.cc)."""

    def __init__(self, context: str = "") -> None:
        self._context = context

    def get_context(self) -> Optional[str]:
        return self._context or None

    def __repr__(self) -> str:
        return f"<{STUB_MODULE}.InferenceTrace object at {hex(id(self))}>"


class MemoryType(enum.IntEnum):
    TRITONSERVER_MEMORY_GPU = 0
    TRITONSERVER_MEMORY_CPU = 1


TRITONSERVER_MEMORY_GPU = MemoryType.TRITONSERVER_MEMORY_GPU
TRITONSERVER_MEMORY_CPU = MemoryType.TRITONSERVER_MEMORY_CPU


class InferenceRequest:
    """An inference request (``pb_utils.InferenceRequest``): what ``execute`` receives, and what
    a model builds for BLS.

    Built by model code (inside ``initialize``, ``execute`` or ``finalize``), it takes its
    arguments as the stub's binding does (python_backend r24.10 src/pb_stub.cc): ``inputs``,
    ``requested_output_names`` and ``model_name`` are required (pybind11's TypeError
    without them, measured on 24.10), names may be bytes, and ``parameters`` is a dict of
    str to bool/int/str (a JSON string is refused, as the stub refuses it). Built outside
    model code (a test handing ``execute`` a request the server would build), missing
    arguments default to empty and ``parameters`` may be JSON text.

    Example::

        request = pb_utils.InferenceRequest(
            model_name="scale", inputs=[pb_utils.Tensor("X", x)],
            requested_output_names=["Y"], parameters={"factor": 2},
        )
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith("tritonpy.testing._") or not in_model_code():
            # built outside model code: by the harness or a test, standing for the request
            # the server hands execute() (parameters may be its JSON text)
            self._init(**lenient_arguments(args, kwargs), server_json=True)
            return
        named = request_arguments(args, kwargs)
        if named is None:
            raise request_refused(args, kwargs)
        self._init(**named)

    def _init(
        self,
        inputs: Sequence[Tensor],
        requested_output_names: Iterable[str],
        model_name: str,
        request_id: str = "",
        correlation_id: Union[int, str] = 0,
        model_version: int = -1,
        flags: int = 0,
        timeout: int = 0,
        preferred_memory: Optional[PreferredMemory] = None,
        trace: Optional[InferenceTrace] = None,
        parameters: Union[str, Dict[str, Any], None] = None,
        server_json: bool = False,
    ) -> None:
        tensors = _tensors(inputs, "InferenceRequest inputs")
        if not isinstance(correlation_id, (int, str)):
            # the binding's own check (python_backend r24.10 src/pb_stub.cc)
            raise TritonModelException("Correlation ID must be integer or string")
        self._request_id = request_id
        self._correlation_id = correlation_id
        self._inputs = tensors
        self._requested_output_names: Set[str] = set(requested_output_names or ())
        self._model_name = model_name
        self._model_version = model_version
        self._flags = flags
        self._timeout = timeout
        self._preferred_memory = preferred_memory or PreferredMemory(TRITONSERVER_MEMORY_CPU, 0)
        self._trace = trace if trace is not None else InferenceTrace()
        self._parameters = request_parameters(parameters, server_json)
        self._cancelled = False
        #: called on each is_cancelled() (the harness's CancelAt(check=k) counts them)
        self._on_cancel_check: Optional[Callable[[], None]] = None
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

    def trace(self) -> InferenceTrace:
        return self._trace

    def requested_output_names(self) -> Set[str]:
        return set(self._requested_output_names)

    def get_response_sender(self) -> ResponseSender:
        if self._sender is None:
            self._sender = ResponseSender(self, decoupled=self._decoupled)
        return self._sender

    def is_cancelled(self) -> bool:
        if self._on_cancel_check is not None:
            self._on_cancel_check()
        return self._cancelled

    def set_release_flags(self, flags: int) -> None:
        if flags not in (TRITONSERVER_REQUEST_RELEASE_ALL, TRITONSERVER_REQUEST_RELEASE_RESCHEDULE):
            raise TritonModelException(f"invalid request release flags {flags}")
        self._release_flags = flags

    def exec(self, decoupled: bool = False) -> Any:
        """Business-logic scripting: run this request on another model.

        The fake has no server, so the target must be registered with
        :func:`register_bls_model` (``ModelHarness.register_bls_model``). As in the stub
        (python_backend r24.10 src/infer_request.cc ``InferRequest::Exec``), a call from a
        model's ``initialize`` or ``finalize`` raises TritonModelException("BLS is only
        supported during the 'execute' function.") (from ``initialize`` it is also a
        ModelLoadError: the model fails to load)."""
        refusal = bls_refusal()
        if refusal is not None:
            raise refusal
        handler = loaded_handler(self._model_name)
        if handler is None:
            # the server's answer for a model it does not have (measured, r24.10): an error
            # response, not an exception. Under the harness, register the target with
            # ModelHarness(targets={name: ...}) or ModelHarness.register_bls_model().
            error = InferenceResponse(error=TritonError(_not_ready(self._model_name)))
            return ResponseIterator(self, [error]) if decoupled else error
        result = handler(self)
        if decoupled:
            if isinstance(result, InferenceResponse):
                return ResponseIterator(self, [result])
            return ResponseIterator(self, result)
        if isinstance(result, (list, tuple)) or inspect.isgenerator(result):
            # a decoupled target (its handler answers with a stream) asked without
            # decoupled=True: the server's error response (measured, 24.10, stray quote too)
            return InferenceResponse(error=TritonError(_not_decoupled_call(self._model_name)))
        if not isinstance(result, InferenceResponse):
            raise TritonModelException(
                f"BLS handler for model '{self._model_name}' must return a "
                f"pb_utils.InferenceResponse, got {type(result).__name__}"
            )
        return result

    def async_exec(self, decoupled: bool = False) -> Any:
        """As in the stub: needs a running event loop (``RuntimeError: no running event loop``
        otherwise) and returns a future that runs :meth:`exec` in the loop's executor."""
        loop = asyncio.get_running_loop()
        refusal = bls_refusal()  # checked here: exec() runs on an executor thread
        if refusal is not None:
            raise refusal
        return loop.run_in_executor(None, functools.partial(self.exec, decoupled=decoupled))

    # -- not in pb_utils: for the harness ------------------------------------------------
    def set_decoupled(self, decoupled: bool) -> None:
        """Whether the model serving this request is decoupled (its response sender then
        accepts any number of responses); the harness sets it from the configuration."""
        self._decoupled = decoupled

    def cancel_as_client(self) -> None:
        """Mark the request cancelled, as a client cancellation would."""
        self._cancelled = True

    def watch_cancel_checks(self, hook: Optional[Callable[[], None]]) -> None:
        """Call ``hook`` on each ``is_cancelled()`` (of the request or its response sender)
        before it answers (None: stop); ``cancelled_by_client`` reads the flag uncounted."""
        self._on_cancel_check = hook

    def cancelled_by_client(self) -> bool:
        """Whether the client cancelled, without counting as one of the model's checks."""
        return self._cancelled

    def release_flags(self) -> int:
        """The flags of the last ``set_release_flags`` (RELEASE_ALL by default)."""
        return self._release_flags

    def created_sender(self) -> Optional[ResponseSender]:
        """The response sender, if the model asked for it (None otherwise)."""
        return self._sender

    def target_model(self) -> Tuple[str, int]:
        """(model name, model version) a BLS request is addressed to (-1: any version)."""
        return self._model_name, self._model_version

    def __repr__(self) -> str:
        names = [t.name() for t in self._inputs]
        return f"InferenceRequest(request_id={self._request_id!r}, inputs={names})"


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
