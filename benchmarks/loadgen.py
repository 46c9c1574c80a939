"""gRPC helpers of the benchmark beside the load itself (the closed-loop load generator, its
sequence callers and the CPU accounting are tritonpy's own: :mod:`tritonpy.perf._engine`,
:mod:`tritonpy.perf._sequences`, :mod:`tritonpy.perf._cpu`): the clients of a sequence model
kept across a round's slices, the check that every variant answers one request (or one whole
sequence) as raw does, and a wait for models to be ready.

Example::

    wait_model_ready("127.0.0.1:8001", ["add_sub_pytriton"])
    outputs = grpc_infer_once("127.0.0.1:8001", "add_sub_raw", payload)
    steps = grpc_sequence_once("127.0.0.1:8001", "sequence_raw", payloads, length=20,
                               sequence_id=SEQUENCE_IDS.take())
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from numpy.typing import NDArray

from benchmarks.workloads import Workload, expected_equal
from tritonpy.perf._engine import GRPC_CHANNEL_OPTIONS, Caller, Outcome, finish_caller, grpc_request
from tritonpy.perf._sequences import SequenceIds, sequence_caller_factory
from tritonpy.perf._stream import ENABLE_EMPTY_FINAL, FINAL_PARAMETER, set_sequence

__all__ = [
    "SEQUENCE_IDS",
    "HeldCaller",
    "check_outputs",
    "close_clients",
    "grpc_infer_once",
    "grpc_sequence_once",
    "grpc_stream_once",
    "sequence_clients",
    "wait_model_ready",
]

Outputs = Dict[str, NDArray[Any]]
#: the correlation ids of a whole run (every model, round and check): numeric, from 1, never
#: reused, so that no sequence can ever meet another one's state
SEQUENCE_IDS = SequenceIds(start=1)


def _stub(url: str) -> Any:
    import grpc
    from tritonclient.grpc import service_pb2_grpc

    channel = grpc.insecure_channel(url, options=GRPC_CHANNEL_OPTIONS)
    return service_pb2_grpc.GRPCInferenceServiceStub(channel)


def _outputs(response: Any) -> Outputs:
    from tritonclient.grpc import InferResult

    result = InferResult(response)
    return {out.name: result.as_numpy(out.name) for out in response.outputs}


def grpc_infer_once(url: str, model: str, payload: Mapping[str, NDArray[Any]]) -> Outputs:
    """Send one request and return its outputs as numpy arrays (BYTES as object arrays)."""
    return _outputs(_stub(url).ModelInfer(grpc_request(model, payload), timeout=120.0))


def grpc_sequence_once(
    url: str,
    model: str,
    payloads: Sequence[Mapping[str, NDArray[Any]]],
    *,
    length: int,
    sequence_id: Union[int, str],
) -> List[Outputs]:
    """Send one whole sequence of ``length`` requests (``payloads`` in rotation, START on the
    first, END on the last) and return each request's outputs, in order."""
    stub = _stub(url)
    answers = []
    for index in range(length):
        request = grpc_request(model, payloads[index % len(payloads)])
        set_sequence(request, (sequence_id, index == 0, index == length - 1))
        answers.append(_outputs(stub.ModelInfer(request, timeout=120.0)))
    return answers


def grpc_stream_once(
    url: str, model: str, payload: Mapping[str, NDArray[Any]], *, timeout: float = 120.0
) -> List[Outputs]:
    """Send one request to a decoupled model over a gRPC stream and return the outputs of
    each of its responses, in order, up to the final flag (the server sends a flags-only
    final response when asked to, so the end is known without a timeout)."""
    request = grpc_request(model, payload)
    request.parameters[ENABLE_EMPTY_FINAL].bool_param = True
    answers: List[Outputs] = []
    replies = _stub(url).ModelStreamInfer(iter([request]), timeout=timeout)
    try:
        for reply in replies:
            if reply.error_message:
                raise RuntimeError(f"{model}: error response: {reply.error_message}")
            response = reply.infer_response
            if response.outputs:
                answers.append(_outputs(response))
            final = response.parameters.get(FINAL_PARAMETER)
            if final is not None and final.bool_param:
                return answers
    finally:
        replies.cancel()
    raise RuntimeError(f"{model}: the stream ended before its final response")


class HeldCaller:
    """A caller kept, with what it holds open (a channel, a gRPC stream, a sequence), across
    the slices of a round. The load engine calls a caller's ``finish()`` when a window stops:
    a sequence caller then sends END and closes its channel, a stream caller closes its
    stream for good, so the variant's next slice would only fail. This holder has no
    ``finish``; :meth:`close` ends the caller (``finish()``) when the round is over."""

    def __init__(self, caller: Caller) -> None:
        self._caller = caller

    def __call__(self) -> Optional[Outcome]:
        return self._caller()

    def close(self) -> None:
        finish_caller(self._caller)


def sequence_clients(
    url: str, model: str, payloads: Sequence[Mapping[str, NDArray[Any]]], *, length: int,
    concurrency: int,
) -> List[Caller]:  # fmt: skip
    """``concurrency`` clients of a sequence model, each running sequences of ``length``
    requests one after the other (ids from :data:`SEQUENCE_IDS`, one request of its sequence
    in flight at a time): ``concurrency`` sequences live at once."""
    make = sequence_caller_factory(url, "grpc", model, payloads, length=length, ids=SEQUENCE_IDS)
    return [HeldCaller(make(index)) for index in range(concurrency)]


def close_clients(clients: Sequence[Any]) -> None:
    """Close the clients that hold something open (:class:`HeldCaller`); others have
    nothing to close."""
    for client in clients:
        close = getattr(client, "close", None)
        if callable(close):
            close()


def _answers(url: str, workload: Workload, model: str) -> List[Outputs]:
    """A variant's outputs for the check: for the workload's first payload, for each request
    of one whole sequence (a sequence model) or for each response of the first payload's
    stream (a decoupled model)."""
    if workload.sequence_length:
        return grpc_sequence_once(
            url,
            model,
            workload.payloads,
            length=workload.sequence_length,
            sequence_id=SEQUENCE_IDS.take(),
        )
    if workload.stream_responses:
        return grpc_stream_once(url, model, workload.payloads[0])
    return [grpc_infer_once(url, model, workload.payloads[0])]


def check_outputs(workloads: Sequence[Workload], url_of: Callable[[str], str]) -> List[str]:
    """Send each workload's first payload (a sequence model: one whole sequence) to every
    variant (served at ``url_of(variant)``); report outputs that differ from raw's, and
    requests that failed."""
    problems: List[str] = []
    for workload in workloads:
        answers = {}
        for variant, model in workload.models.items():
            url = url_of(variant)
            try:
                answers[variant] = _answers(url, workload, model)
            except Exception as exc:
                problems.append(f"{workload.name}/{variant}: {type(exc).__name__}: {exc}")
        reference = answers.get("raw")
        for variant, steps in answers.items():
            if reference is None or variant == "raw":
                continue
            tolerance = workload.mean_abs_tolerance if variant == "tritonpy" else None
            for index, (expected, got) in enumerate(zip(reference, steps)):
                where = f"{workload.name}/{variant}"
                if len(reference) > 1:
                    where += f" request {index + 1}"
                problems += expected_equal(where, expected, got, tolerance)
    return problems


def wait_model_ready(url: str, models: Sequence[str], timeout: float = 180.0) -> None:
    """Poll until ``models`` are ready at ``url`` (gRPC), or raise TimeoutError."""
    import grpc
    from tritonclient.grpc import service_pb2

    stub = _stub(url)
    deadline = time.monotonic() + timeout
    pending = list(models)
    while pending:
        try:
            reply = stub.ModelReady(service_pb2.ModelReadyRequest(name=pending[0]), timeout=5.0)
            if reply.ready:
                pending.pop(0)
                continue
        except grpc.RpcError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"models {pending} not ready at {url} after {timeout:.0f} s")
        time.sleep(0.5)
