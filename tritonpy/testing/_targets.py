"""What a model under the harness may call (BLS targets), answered as Triton 24.10 answers a
BLS request.

``bls_handler(target)`` turns a target into the fake pb_utils' BLS handler
(``handler(pb_utils.InferenceRequest) -> InferenceResponse | list of responses``):

* a :class:`~tritonpy.testing.ModelHarness`: the request runs on it;
* a model class (a ``tp.Model`` subclass or any ``TritonPythonModel`` class with an
  ``auto_complete_config``) or a model directory: a ModelHarness is built for it, and closed
  when the handler is dropped (when the harness that registered it closes);
* a plain callable on numpy inputs, ``fn(inputs: dict) -> dict of outputs``: raising
  ``tp.InputError`` or ``TritonRequestError`` answers an error response;
* :class:`RawTarget` ``(fn)``: ``fn`` takes the ``pb_utils.InferenceRequest`` and returns the
  ``InferenceResponse`` (or, for a decoupled target, a list of them) itself.

What the caller sees matches the real server (measured on 24.10): every error reaches the caller
with code ``INTERNAL``; errors the server finds before the target runs (data type, shape,
unknown input or output) read ``Model <name> - Error when running inference: <server
message>``; a decoupled target's responses end with an empty response (the FINAL flag), and an
error response it sends after some parts does not reach the caller: the stream just ends.
An error response sent *with* the FINAL flag never reaches the caller either, and neither
does the end of the stream: the caller waits forever. The harness raises
:class:`~tritonpy.testing.ModelBugError` naming that rule instead of hanging.
"""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import json
import os
import weakref
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional

import numpy as np

from .._runtime.errors import InputError, TritonRequestError
from . import fake_pb_utils as pb
from ._errors import ModelBugError
from ._loading import target_version
from ._requests import check_requested_outputs, client_view, validate_request
from ._responses import response_from

if TYPE_CHECKING:
    from ._harness import ModelHarness

Handler = Callable[[pb.InferenceRequest], Any]


class RawTarget:
    """A BLS target written against pb_utils: ``fn(request) -> InferenceResponse`` (a list of
    responses for a decoupled target). Use it where the target must see the request itself.

    Example::

        def echo(request):
            return pb.InferenceResponse(request.inputs())

        harness.register_bls_model("echo", RawTarget(echo))
    """

    def __init__(self, fn: Handler) -> None:
        if not callable(fn):
            raise TypeError(f"RawTarget needs a callable, got {fn!r}")
        self.fn = fn


def server_error(model: str, message: str) -> pb.InferenceResponse:
    """The error response a BLS caller gets when the server refuses a request to ``model``
    before the model runs (24.10 wording; the code is always INTERNAL)."""
    return pb.InferenceResponse(
        error=pb.TritonError(f"Model {model} - Error when running inference: {message}")
    )


def _model_error(message: str) -> pb.InferenceResponse:
    # 24.10's BLS path keeps only the message of the target's error: the code becomes INTERNAL
    return pb.InferenceResponse(error=pb.TritonError(message))


def bls_handler(target: Any) -> Handler:
    """The fake's BLS handler for ``target`` (see the module documentation)."""
    from ._harness import ModelHarness  # the harness imports this module

    if isinstance(target, RawTarget):
        return target.fn
    if isinstance(target, ModelHarness):
        return _harness_handler(target)
    if isinstance(target, (str, os.PathLike, type)):
        owned = ModelHarness(target)
        handler = _harness_handler(owned)
        weakref.finalize(handler, owned.close)  # closed once the registration is dropped
        return handler
    if callable(target):
        return _callable_handler(target)
    raise TypeError(
        f"a BLS target must be a ModelHarness, a model class, a model directory, a callable "
        f"fn(inputs: dict) -> dict, or RawTarget(fn); got {target!r}"
    )


def versioned_handler(target: Any) -> Handler:
    """:func:`bls_handler`, ready for the version the target has (``is_model_ready(name,
    version)`` answers for it), as ``ModelHarness.register_bls_model`` registers it."""
    handler = bls_handler(target)
    version = target_version(target)
    if version is not None and not hasattr(handler, "model_version"):
        with suppress(AttributeError):
            handler.model_version = version  # type: ignore[attr-defined]
    return handler


def _inputs_of(request: pb.InferenceRequest) -> Dict[str, Any]:
    return {t.name(): client_view(t.as_numpy()) for t in request.inputs()}


def _harness_handler(harness: ModelHarness) -> Handler:
    def handler(request: pb.InferenceRequest) -> Any:
        inputs = _inputs_of(request)
        names = sorted(request.requested_output_names()) or None
        _, version = request.target_model()
        if version not in (-1, harness.version):
            return server_error(
                harness.name,
                f"Failed for execute the inference request. Model '{harness.name}' is not ready.",
            )
        try:  # what the server checks before the model runs, with its wording
            validate_request(harness.config, harness.name, inputs, request.request_id())
            check_requested_outputs(harness.config, harness.name, names)
        except TritonRequestError as exc:
            # on the BLS path the server names an unknown input without the request id
            # (measured, 24.10), unlike its answer to a client
            message = exc.message
            unknown = f"[request id: {request.request_id() or '<id_unknown>'}] unexpected "
            if message.startswith(unknown):
                message = message[len(unknown) - len("unexpected ") :]
            return server_error(harness.name, message)
        if harness.decoupled:
            return _stream(harness, request, inputs, names)
        try:
            return response_from(
                *harness.infer_with_parameters(
                    inputs, requested_outputs=names, parameters=_parameters_of(request)
                )
            )
        except TritonRequestError as exc:
            return _model_error(exc.message)

    return handler


def _stream(
    harness: ModelHarness,
    request: pb.InferenceRequest,
    inputs: Mapping[str, Any],
    names: Optional[List[str]],
) -> List[pb.InferenceResponse]:
    try:
        sent = harness.stream_responses(
            inputs,
            requested_outputs=names,
            parameters=_parameters_of(request),
            request_id=request.request_id(),
        )
    except TritonRequestError as exc:
        return [_model_error(exc.message)]
    parts: List[pb.InferenceResponse] = []
    for response, flags in sent:
        if response is None:
            # a flags-only FINAL reaches the caller as an empty response (measured, 24.10)
            parts.append(pb.InferenceResponse())
            break
        if response.has_error():
            if flags & pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL:
                raise ModelBugError(final_error_hangs(harness.name, response))
            parts.append(pb.InferenceResponse())  # the stream just ends (24.10)
            break  # 24.10 does not hand a decoupled target's error response to the caller
        parts.append(response)
        if flags & pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL:
            # a data response sent with the FINAL flag is the last one: no empty response
            # follows it (measured, 24.10: QA async_execute_decouple_bls)
            break
    else:
        parts.append(pb.InferenceResponse())  # the stream's end, as an empty response
    return parts


def _parameters_of(request: pb.InferenceRequest) -> Dict[str, Any]:
    """The parameters a BLS request carries, as the target receives them (the server hands
    the callee the caller's ``parameters=``; measured, 24.10: QA bls_parameters)."""
    parsed = json.loads(request.parameters() or "{}")
    return dict(parsed) if isinstance(parsed, dict) else {}


def final_error_hangs(model: str, response: pb.InferenceResponse) -> str:
    """Why a BLS caller of ``model`` would wait forever (measured on 24.10)."""
    error = response.error()
    message = error.message() if error is not None else ""
    return (
        f"model '{model}' ended its stream with an error response carrying the FINAL flag "
        f"({message!r}); Triton 24.10 never delivers that response to a BLS caller, whose "
        f"call_stream() / exec(decoupled=True) then waits forever. Send the error response "
        f"without flags, then close the stream with send(flags="
        f"pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)"
    )


def _callable_handler(fn: Callable[[Dict[str, Any]], Any]) -> Handler:
    def handler(request: pb.InferenceRequest) -> Any:
        try:
            outputs = fn(_inputs_of(request))
        except (InputError, TritonRequestError) as exc:
            return _model_error(getattr(exc, "message", None) or str(exc))
        if not isinstance(outputs, Mapping):
            raise TypeError(
                f"BLS target {fn!r} for model '{request.target_model()[0]}' must return a dict "
                f"{{output name: value}}, got {type(outputs).__name__}"
            )
        wanted = request.requested_output_names()
        return pb.InferenceResponse(
            [
                pb.Tensor(name, _as_tensor_data(value))
                for name, value in outputs.items()
                if not wanted or name in wanted
            ]
        )

    return handler


def _as_tensor_data(value: Any) -> Any:
    array = np.asarray(value)
    if array.dtype.kind in ("U", "S"):
        out = np.empty(array.shape, dtype=object)
        out.ravel()[:] = [v.encode() if isinstance(v, str) else bytes(v) for v in array.ravel()]
        return out
    return array
