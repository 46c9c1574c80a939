"""Responses as the harness handles them: the Python-backend contract checks on what
``execute`` returned or sent, what a client receives for a response, and turning a client's
outputs back into a response for a BLS caller."""

from __future__ import annotations

#: pytest leaves this module's frames out of a failing test's traceback, so that a user's
#: test shows its own frames and its model's (``pytest --full-trace`` shows them all)
__tracebackhide__ = True

import json
import os
import traceback
from typing import Any, Dict, List, Literal, Optional, Union

from .._runtime.errors import TritonRequestError
from . import fake_pb_utils as pb
from ._errors import ModelBugError
from ._requests import NDArray, client_view

Outputs = Dict[str, NDArray]
#: what ``infer_stream`` does with an error response: raise it, or return it in its place
StreamErrors = Literal["raise", "return"]
#: frames of the harness's own code, left out of the tracebacks a client sees
_TESTING_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


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
    response: pb.InferenceResponse, requested: Optional[List[str]]
) -> Union[Outputs, TritonRequestError]:
    """What a client receives for a response: its outputs, or its error (returned)."""
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
        if not f.filename.startswith(_TESTING_DIR)
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


def decoupled_returned(name: str, returned: Any) -> ModelBugError:
    """The contract breach of a decoupled model whose ``execute`` returned responses."""
    return ModelBugError(
        f"model '{name}' is decoupled: execute() must return None and send responses through "
        f"request.get_response_sender(), got {type(returned).__name__}"
    )


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
    """One response per request for a non-decoupled model."""
    if returned is None:
        responses = []
        for request in requests:
            sent = collect_sent(name, request, stream_timeout)
            if len(sent) != 1:
                raise ModelBugError(
                    f"model '{name}': a non-decoupled model must send exactly one "
                    f"response per request; request '{request.request_id()}' got {len(sent)}"
                )
            responses.append(sent[0])
        return responses
    if not isinstance(returned, (list, tuple)):
        raise ModelBugError(
            f"model '{name}': execute() must return a list of InferenceResponse, "
            f"got {type(returned).__name__}"
        )
    if len(returned) != len(requests):
        raise ModelBugError(
            f"model '{name}': execute() got {len(requests)} request(s) but returned "
            f"{len(returned)} response(s); return exactly one InferenceResponse per request, "
            f"in order"
        )
    for item in returned:
        if not isinstance(item, pb.InferenceResponse):
            raise ModelBugError(
                f"model '{name}': execute() returned a {type(item).__name__} where a "
                f"pb_utils.InferenceResponse was expected"
            )
    return list(returned)


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
