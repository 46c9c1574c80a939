"""Conformance of the harness on the execute() contract (issue 33): what a client receives
when ``execute`` returns something other than one response per request, when a decoupled
model returns responses, and when a model that is not decoupled answers through its response
sender, in a batch or failing after it sent. Each case goes to a real tritonserver 24.10 (gRPC:
unary calls, and a stream for the decoupled model) and to the harness; outputs, error codes and
messages must be identical (tritonpy's explanation of a contract breach is kept apart, in
``ExecuteContractError.explanation``).

The models (tests/integration/qa_contract_models) stand for Triton's QA models
``execute_return_error``, ``wrong_return_type``, ``response_sender``,
``response_sender_error`` and ``bls_request_rescheduling`` (server repository,
``qa/python_models``, r24.10), written for this repository. The stub's texts come from
python_backend r24.10 src/pb_stub.cc (ProcessReturnedResponses) and src/response_sender.cc.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Tuple, Union

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from tritonclient.utils import InferenceServerException

from tritonpy import TritonRequestError
from tritonpy.server import TritonServer
from tritonpy.testing import ModelHarness
from tritonpy.testing._errors import ExecuteContractError
from tritonpy.testing._repository import RepositoryHarness

pytestmark = pytest.mark.integration

MODELS = Path(__file__).parent / "qa_contract_models"
MODEL_NAMES = ["qc_returns", "qc_decoupled_returns", "qc_sender", "qc_bls_caller"]
#: what a client gets: outputs (as lists), or (code, message)
Answer = Union[Dict[str, Any], Tuple[str, str]]

FAILED = "Failed to process the request(s) for model '{}_0_0', message: "


def mode(value: int, batched: bool = False) -> Dict[str, np.ndarray]:
    return {"MODE": np.array([[value]] if batched else [value], np.int32)}


def _outputs(outputs: Dict[str, np.ndarray]) -> Dict[str, Any]:
    return {k: np.asarray(v).tolist() for k, v in outputs.items()}


def _grpc_inputs(inputs: Dict[str, np.ndarray]) -> List[grpcclient.InferInput]:
    result = []
    for name, array in inputs.items():
        item = grpcclient.InferInput(name, list(array.shape), "INT32")
        item.set_data_from_numpy(array)
        result.append(item)
    return result


def _read(result: Any) -> Dict[str, Any]:
    return {o.name: result.as_numpy(o.name).tolist() for o in result.get_response().outputs}


def _error(exc: InferenceServerException) -> Tuple[str, str]:
    return (str(exc.status()).replace("StatusCode.", ""), exc.message())


def server_unary(server: TritonServer, model: str, inputs: Dict[str, np.ndarray]) -> Answer:
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        try:
            return _read(client.infer(model, _grpc_inputs(inputs), client_timeout=30))
        except InferenceServerException as exc:
            return _error(exc)


def server_batch(server: TritonServer, model: str, batch: List[Dict[str, np.ndarray]]) -> list:
    """Requests sent together (the dynamic batcher puts them in one execute)."""
    answers: Dict[int, Answer] = {}
    done = threading.Event()

    def callback(index: int) -> Callable[[Any, Any], None]:
        def receive(result: Any, error: Any) -> None:
            answers[index] = _error(error) if error is not None else _read(result)
            if len(answers) == len(batch):
                done.set()

        return receive

    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        for index, inputs in enumerate(batch):
            client.async_infer(model, _grpc_inputs(inputs), callback(index))
        assert done.wait(30), f"the server answered {len(answers)} of {len(batch)}"
    return [answers[i] for i in range(len(batch))]


def server_stream(server: TritonServer, model: str, inputs: Dict[str, np.ndarray]) -> list:
    """What a gRPC stream's callback receives for one request, until 1 s passes quietly."""
    received: List[Answer] = []
    with grpcclient.InferenceServerClient(server.grpc_url) as client:
        client.start_stream(
            lambda result, error: received.append(
                _error(error) if error is not None else _read(result)
            )
        )
        client.async_stream_infer(model, _grpc_inputs(inputs))
        seen = -1
        while seen != len(received):
            seen = len(received)
            time.sleep(1.0)
        client.stop_stream()
    # a stream's error response carries its message only (tritonclient gives no status); the
    # backend sends it as TRITONSERVER_ERROR_INTERNAL (python_be.cc r24.10)
    return [("INTERNAL", r[1]) if isinstance(r, tuple) and r[0] == "None" else r for r in received]


def harness_answer(call: Callable[[], Dict[str, np.ndarray]]) -> Answer:
    try:
        return _outputs(call())
    except TritonRequestError as exc:
        return (exc.code, exc.message)


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = tmp_path_factory.mktemp("qa_contract") / "repo"
    return triton_server_factory(repository_builder(repo, *MODEL_NAMES, source=MODELS))


@pytest.fixture(scope="module")
def repo() -> Iterator[RepositoryHarness]:
    with RepositoryHarness(MODELS) as harness:
        yield harness


RETURNS = [
    (0, {"OUT": [0]}),
    (1, ("INTERNAL", "Expected a list in the execute return, found type '<class 'tuple'>'.")),
    (2, ("INTERNAL", "Expected a list in the execute return, found type '<class 'str'>'.")),
    (
        3,
        (
            "INTERNAL",
            "Number of InferenceResponse objects do not match the number of InferenceRequest "
            "objects. InferenceRequest(s) size is:1, and InferenceResponse(s) size is:2\n",
        ),
    ),
    (
        4,
        (
            "INTERNAL",
            "Expected an 'InferenceResponse' object in the execute function return list, "
            "found type '<class 'int'>'.",
        ),
    ),
    (
        5,
        (
            "INTERNAL",
            "Expected an 'InferenceResponse' object in the execute function return list, "
            "found type '<class '1.model.Answer'>'.",
        ),
    ),
    (
        6,
        (
            "INTERNAL",
            "Expected a list in the execute return, found type "
            "'<class 'c_python_backend_utils.InferenceResponse'>'.",
        ),
    ),
]


def _prefixed(model: str, answer: Answer) -> Answer:
    if isinstance(answer, tuple):
        return (answer[0], FAILED.format(model) + answer[1])
    return answer


@pytest.mark.parametrize(("value", "expected"), RETURNS, ids=[f"mode{v}" for v, _ in RETURNS])
def test_wrong_returns_are_the_servers_error_responses(
    server: TritonServer, value: int, expected: Answer
) -> None:
    expected = _prefixed("qc_returns", expected)
    assert server_unary(server, "qc_returns", mode(value)) == expected
    with ModelHarness(MODELS / "qc_returns") as h:
        assert harness_answer(lambda: h.infer(mode(value))) == expected
        if isinstance(expected, tuple):
            with pytest.raises(ExecuteContractError) as error:
                h.infer(mode(value))
            assert error.value.explanation and "(tritonpy: " in str(error.value)


@pytest.mark.parametrize(("value", "expected"), RETURNS, ids=[f"mode{v}" for v, _ in RETURNS])
def test_through_bls_the_caller_gets_an_error_response(
    server: TritonServer, repo: RepositoryHarness, value: int, expected: Answer
) -> None:
    # the caller's has_error() / error().message(): the callee's message, not an exception
    if isinstance(expected, tuple):
        text = f"error: {FAILED.format('qc_returns')}{expected[1]}"
    else:
        text = f"value: {expected['OUT'][0]}"
    assert server_unary(server, "qc_bls_caller", mode(value)) == {"RESULT": [text.encode()]}
    harness = repo.infer("qc_bls_caller", mode(value))
    assert harness["RESULT"].tolist() == [text.encode()]


DECOUPLED_RETURNED = (
    "INTERNAL",
    FAILED.format("qc_decoupled_returns") + "Python model 'qc_decoupled_returns_0_0' is using "
    "the decoupled mode and the execute function must return None.",
)

DECOUPLED = [
    ("returns", 0, [DECOUPLED_RETURNED]),
    ("sends-then-returns", 1, [{"OUT": [10]}, DECOUPLED_RETURNED]),
    ("closes-then-returns", 2, [{"OUT": [20]}]),  # a closed request gets no error response
    ("sends-and-closes", 3, [{"OUT": [30]}]),
]


@pytest.mark.parametrize(("case", "value", "expected"), DECOUPLED, ids=[c[0] for c in DECOUPLED])
def test_a_decoupled_model_returning_responses(
    server: TritonServer, case: str, value: int, expected: list
) -> None:
    assert server_stream(server, "qc_decoupled_returns", mode(value)) == expected
    with ModelHarness(MODELS / "qc_decoupled_returns") as h:
        received = h.infer_stream(mode(value), errors="return")
    assert [
        (r.code, r.message) if isinstance(r, TritonRequestError) else _outputs(r) for r in received
    ] == expected


SENDER_SINGLE = [
    ("returned", 0, {"OUT": [[100]]}),
    ("sent-final", 1, {"OUT": [[200]]}),
    ("sent-final-and-returned", 2, {"OUT": [[300]]}),  # the returned one is refused, unseen
    ("sent-then-raised", 3, ("INTERNAL", "expected a single response, got 2")),
    (
        "final-flag-first",
        4,
        (
            "INTERNAL",
            FAILED.format("qc_sender") + "TritonModelException: Unable to send response. "
            "Non-decoupled model cannot send complete final before sending a response.",
        ),
    ),
    ("sent-twice", 5, ("INTERNAL", "expected a single response, got 2")),
]


def _same(server_answer: Answer, harness_answer: Answer) -> bool:
    """Equal; an error's traceback ('At:' list, the model file's path) is left out."""
    if isinstance(server_answer, tuple) and isinstance(harness_answer, tuple):
        return server_answer[0] == harness_answer[0] and (
            server_answer[1].split("\n\nAt:")[0] == harness_answer[1].split("\n\nAt:")[0]
        )
    return server_answer == harness_answer


@pytest.mark.parametrize(
    ("case", "value", "expected"), SENDER_SINGLE, ids=[c[0] for c in SENDER_SINGLE]
)
def test_a_model_answering_through_its_sender(
    server: TritonServer, case: str, value: int, expected: Answer
) -> None:
    served = server_unary(server, "qc_sender", mode(value, batched=True))
    assert _same(served, expected), served
    with ModelHarness(MODELS / "qc_sender") as h:
        answered = harness_answer(lambda: h.infer(mode(value, batched=True)))
    assert _same(served, answered), (served, answered)


BATCHES = [
    # QA response_sender's non-decoupled batch: each request answered its own way
    ("returned-sent-sent", [0, 1, 1], [{"OUT": [[100]]}, {"OUT": [[200]]}, {"OUT": [[200]]}]),
    # a response returned for a request its sender closed fails the whole execute: the
    # closed ones keep their answer, the others get the stub's error
    (
        "returned-sent-both",
        [0, 1, 2],
        [
            (
                "INTERNAL",
                FAILED.format("qc_sender") + "Unable to send response. Non-decoupled model "
                "cannot send more than one response.",
            ),
            {"OUT": [[200]]},
            {"OUT": [[300]]},
        ],
    ),
]


@pytest.mark.parametrize(("case", "modes", "expected"), BATCHES, ids=[c[0] for c in BATCHES])
def test_a_batch_answered_partly_through_senders(
    server: TritonServer, case: str, modes: List[int], expected: list
) -> None:
    batch = [mode(v, batched=True) for v in modes]
    assert server_batch(server, "qc_sender", batch) == expected
    with ModelHarness(MODELS / "qc_sender") as h:
        answered = h.infer_requests(batch)
    assert [
        (r.code, r.message) if isinstance(r, TritonRequestError) else _outputs(r) for r in answered
    ] == expected
