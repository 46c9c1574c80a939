"""Responses as the harness handles them: the Python-backend contract checks on what
``execute`` returned or sent, what a client receives for a response, and turning a client's
outputs back into a response for a BLS caller."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import asyncio
import concurrent.futures
import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any, Callable, Dict, List, Literal, Optional, Union

from .._runtime.errors import TritonRequestError
from . import fake_pb_utils as pb
from ._errors import ExecuteContractError, ModelBugError
from ._requests import NDArray, client_view

Outputs = Dict[str, NDArray]
#: what ``infer_stream`` does with an error response: raise it, or return it in its place
StreamErrors = Literal["raise", "return"]
#: frames of the harness's own code, left out of the tracebacks a client sees
_TESTING_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
#: ... and those of the event loop a coroutine execute() runs on (the stub's list has none)
_HIDDEN_DIRS = (
    _TESTING_DIR,
    os.path.dirname(os.path.abspath(asyncio.__file__)) + os.sep,
    os.path.dirname(os.path.abspath(concurrent.futures.__file__)) + os.sep,
)


def client_outputs(response: pb.InferenceResponse, requested: Optional[List[str]]) -> Outputs:
    error = response.error()
    if error is not None:
        raise TritonRequestError(error.code().name, error.message())
    result: Outputs = {}
    for tensor in response.output_tensors():
        if requested is not None and tensor.name() not in requested:
            continue
        result[tensor.name()] = client_view(tensor.as_numpy())
    return result


def outputs_or_error(
    response: Union[pb.InferenceResponse, TritonRequestError], requested: Optional[List[str]]
) -> Union[Outputs, TritonRequestError]:
    """What a client receives for a response: its outputs, or its error (returned); an error
    given in its place is returned as it is."""
    if isinstance(response, TritonRequestError):
        return response
    try:
        return client_outputs(response, requested)
    except TritonRequestError as exc:
        return exc


def execute_failed(instance_name: str, exc: BaseException) -> TritonRequestError:
    """The error a client receives when ``execute`` raised: the stub's message, with the
    model's frames only, innermost first, as the stub lists them."""
    frames = "".join(
        f"  {f.filename}({f.lineno}): {f.name}\n"
        for f in reversed(traceback.extract_tb(exc.__traceback__))
        if not f.filename.startswith(_HIDDEN_DIRS)
    )
    return TritonRequestError(
        "INTERNAL",
        f"Failed to process the request(s) for model '{instance_name}', "
        f"message: {type(exc).__name__}: {exc}\n\nAt:\n{frames}",
    )


#: what the server answers a non-streaming request to a decoupled model (measured, r24.10;
#: both endpoints say UNSUPPORTED: HTTP status 501, gRPC UNIMPLEMENTED)
DECOUPLED_REFUSED = {
    "http": "HTTP end point doesn't support models with decoupled transaction policy",
    "grpc": "ModelInfer RPC doesn't support models with decoupled transaction policy",
}


def decoupled_refused(name: str, protocol: Literal["http", "grpc"] = "http") -> TritonRequestError:
    """The error the server gives for non-streaming inference on decoupled model ``name``."""
    return TritonRequestError("UNSUPPORTED", DECOUPLED_REFUSED[protocol])


def stub_type(value: Any) -> str:
    """``str(type(value))`` as the stub prints it: pb_utils's own classes are its C++ ones."""
    if isinstance(value, pb.InferenceResponse):
        return "<class 'c_python_backend_utils.InferenceResponse'>"
    if isinstance(value, pb.InferenceRequest):
        return "<class 'c_python_backend_utils.InferenceRequest'>"
    kind = type(value)
    package, _, rest = kind.__module__.partition(".")
    module = sys.modules.get(kind.__module__)
    if package.startswith("_tritonpy_model_") and rest and module is not None:
        # the stub imports model.py as a module of its version directory: '1.model'
        version = Path(getattr(module, "__file__", "") or "").parent.name
        return f"<class '{version}.{rest}.{kind.__qualname__}'>"
    return str(kind)


def contract_error(instance_name: str, stub_text: str, explanation: str) -> ExecuteContractError:
    """The error response every request of the batch gets for a contract breach: the stub's
    text behind the prefix it gives every failed execute (pb_stub.cc r24.10)."""
    return ExecuteContractError(
        f"Failed to process the request(s) for model '{instance_name}', message: {stub_text}",
        explanation,
    )


def decoupled_returned(instance_name: str, returned: Any) -> ExecuteContractError:
    """The error of a decoupled model whose (non-async) ``execute`` returned something."""
    return contract_error(
        instance_name,
        f"Python model '{instance_name}' is using the decoupled mode and the execute "
        "function must return None.",
        f"the model is decoupled: execute() returned a {type(returned).__name__}; return "
        "None and send every response through request.get_response_sender()",
    )


def _check_item(instance_name: str, request: pb.InferenceRequest, item: Any) -> None:
    """The stub's checks on one non-None entry of the returned list, in its order."""
    if request.release_flags() == pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE:
        raise contract_error(
            instance_name,
            "Expected a None object in the execute function return list for reschduled "
            f"request, found type '{stub_type(item)}'.",
            "a request released with TRITONSERVER_REQUEST_RELEASE_RESCHEDULE is answered in "
            "a later execute(): put None in its place in the returned list",
        )
    if not isinstance(item, pb.InferenceResponse):
        raise contract_error(
            instance_name,
            "Expected an 'InferenceResponse' object in the execute function return list, "
            f"found type '{stub_type(item)}'.",
            f"execute() returned a {type(item).__name__} in the list; each entry must be a "
            "pb_utils.InferenceResponse (or None for a request answered through its sender)",
        )
    sender = request.created_sender()
    if sender is not None and sender.sent:
        raise contract_error(
            instance_name,
            "Unable to send response. Non-decoupled model cannot send more than one response.",
            f"request '{request.request_id()}' was already answered through its response "
            "sender; put None in its place in the returned list",
        )


def check_returned(
    instance_name: str, requests: List[pb.InferenceRequest], returned: Any, decoupled: bool
) -> None:
    """What the stub checks on what one ``execute`` call returned (ProcessReturnedResponses,
    pb_stub.cc r24.10, in its order); raises the error response every request gets."""
    if returned is None:
        return
    if decoupled:
        raise decoupled_returned(instance_name, returned)
    if not isinstance(returned, list):  # the stub's check: a tuple is refused too
        raise contract_error(
            instance_name,
            f"Expected a list in the execute return, found type '{stub_type(returned)}'.",
            f"execute() returned a {type(returned).__name__}; return a list with one "
            "pb_utils.InferenceResponse per request, in order",
        )
    if len(returned) != len(requests):
        raise contract_error(
            instance_name,
            "Number of InferenceResponse objects do not match the number of InferenceRequest "
            f"objects. InferenceRequest(s) size is:{len(requests)}, and InferenceResponse(s) "
            f"size is:{len(returned)}\n",
            f"execute() got {len(requests)} request(s) and returned {len(returned)} "
            "response(s); return exactly one per request, in order",
        )
    for request, item in zip(requests, returned):
        if item is not None:
            _check_item(instance_name, request, item)


def collect_sent(
    name: str,
    request: pb.InferenceRequest,
    stream_timeout: Optional[float],
    cancel_after: Optional[int] = None,
) -> List[pb.InferenceResponse]:
    """What a request's response sender sent, once the FINAL flag came (a real server would
    wait forever for it; the harness waits ``stream_timeout`` seconds). With ``cancel_after``,
    the first that many responses once the request was cancelled (the client has gone: it
    receives nothing more and waits for no FINAL)."""
    sender = request.created_sender()
    if sender is None:
        raise ModelBugError(
            f"model '{name}': execute() returned None but never used the response "
            f"sender of request '{request.request_id()}'; return one InferenceResponse per "
            f"request, or send through request.get_response_sender()"
        )
    if cancel_after is not None and sender.wait_cancelled(stream_timeout):
        return [r for r, _ in sender.sent if r is not None][:cancel_after]
    if not sender.wait_final(stream_timeout):
        raise ModelBugError(
            f"model '{name}': no response with flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL "
            f"within {stream_timeout}s for request '{request.request_id()}'; a real "
            f"server would wait forever (every request must end with a send() carrying "
            f"flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)"
        )
    return [r for r, _ in sender.sent if r is not None]


def check_responses(
    name: str,
    requests: List[pb.InferenceRequest],
    returned: Any,
    stream_timeout: Optional[float],
) -> List[pb.InferenceResponse]:
    """One response per request for a non-decoupled model, from what ``execute`` returned
    (already checked as the stub checks it: :func:`check_returned`); a request with None in
    its place (or all of them, for None) is answered through its response sender."""
    items = list(returned) if isinstance(returned, list) else [None] * len(requests)
    responses = []
    for request, item in zip(requests, items):
        if item is not None:
            responses.append(item)
            continue
        sent = collect_sent(name, request, stream_timeout)
        if len(sent) != 1:  # the fake's sender refuses a second one, as the stub's does
            raise ModelBugError(
                f"model '{name}': a non-decoupled model must send exactly one "
                f"response per request; request '{request.request_id()}' got {len(sent)}"
            )
        responses.append(sent[0])
    return responses


def stream_until_error(
    request: pb.InferenceRequest,
    requested: Optional[List[str]],
    error: Union[pb.InferenceResponse, TritonRequestError],
    errors: StreamErrors,
) -> List[Any]:
    """What a streaming client receives when ``execute`` failed (``error``): the responses
    sent before, then the error response, unless the request was already closed (its FINAL
    flag sent: the backend answers no closed request again, python_be.cc r24.10). For a model
    that is not decoupled, ``error`` is its one answer (:func:`batch_answers`), maybe a
    response."""
    if isinstance(error, pb.InferenceResponse):
        received: List[Any] = [outputs_or_error(error, requested)]
    else:
        sender = request.created_sender()
        sent = list(sender.sent) if sender is not None else []
        received = [outputs_or_error(r, requested) for r, _ in sent if r is not None]
        if not any(flags & pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL for _, flags in sent):
            received.append(error)
    if errors == "raise":
        for item in received:
            if isinstance(item, TritonRequestError):
                raise item
    return received


Answer = Union[pb.InferenceResponse, TritonRequestError]


#: what a gRPC client of a model that is not decoupled receives when its request got a
#: response (no FINAL flag) and then the error response of a failed execute (measured, 24.10,
#: QA response_sender_error; an HTTP client gets a body it cannot decode)
TWO_RESPONSES = "expected a single response, got 2"


def _answer_after_error(
    request: pb.InferenceRequest, error: TritonRequestError, stream: bool
) -> Answer:
    """A request's answer once ``execute`` failed: the error response, unless its sender had
    sent a response: with the FINAL flag the request is closed and keeps it (the backend
    answers no closed request again, python_be.cc r24.10); without, it gets two responses:
    a gRPC stream keeps the first, a unary call fails (:data:`TWO_RESPONSES`)."""
    sender = request.created_sender()
    sent = list(sender.sent) if sender is not None else []
    responses = [r for r, _ in sent if r is not None]
    if not responses:
        return error
    closed = any(flags & pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL for _, flags in sent)
    if closed or stream:
        return responses[0]
    return ExecuteContractError(
        TWO_RESPONSES,
        f"request '{request.request_id()}' got a response through its sender without "
        "flags=TRITONSERVER_RESPONSE_COMPLETE_FINAL, then execute() failed "
        f"({error.message.splitlines()[0] if error.message else error.code}): the server "
        "sends the error response too. Send the response with the FINAL flag",
    )


def batch_answers(
    name: str,
    requests: List[pb.InferenceRequest],
    run: Callable[[List[pb.InferenceRequest]], Any],
    stream_timeout: Optional[float],
    stream: bool = False,
) -> List[Answer]:
    """Each request's answer from a model that is not decoupled: its response, or the error
    response of a failed ``execute`` (raised, or a contract breach; a request its sender had
    answered keeps that answer, see :func:`_answer_after_error`). ``stream``: a gRPC
    stream's client (QA response_sender over a stream)."""
    try:
        returned = run(requests)
    except TritonRequestError as error:
        return [_answer_after_error(request, error, stream) for request in requests]
    return list(check_responses(name, requests, returned, stream_timeout))


def response_parameters(response: pb.InferenceResponse) -> Dict[str, Any]:
    """The response parameters a client receives (``{}``: none), whatever release runs."""
    parameters: Dict[str, Any] = json.loads(response._parameters)
    return parameters


def response_from(
    outputs: Outputs, parameters: Optional[Dict[str, Any]] = None
) -> pb.InferenceResponse:
    """A response carrying a callee's client view back to a BLS caller (parameters: the
    callee's response parameters, set as its release produced them)."""
    response = pb.InferenceResponse([pb.Tensor(n, a) for n, a in outputs.items()])
    if parameters:
        response._parameters = json.dumps(parameters)
    return response
