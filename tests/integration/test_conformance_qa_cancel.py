"""Conformance of the harness's cancellation on Triton's cancellation model (tests/integration/
qa_cancel_models, renditions of ``qa/python_models/execute_cancel``; its README says what each
stands for): a request cancelled while ``execute()`` runs, by tritonclient's gRPC client on a
real tritonserver 24.10 (``async_infer(...).cancel()``; ``stop_stream(cancel_requests=True)``
on a stream) and by the harness's ``cancel=CancelAt(...)``. Both clients see their own
cancellation, code CANCELLED with the same message, and the model sees ``is_cancelled()``.
"""

from __future__ import annotations

import queue
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from tritonpy import TritonRequestError
from tritonpy.client import request_error
from tritonpy.server import TritonServer
from tritonpy.testing import CancelAt, ClientCancelledError, ModelHarness
from tritonpy.testing import fake_pb_utils as pb

pytestmark = pytest.mark.integration

#: what tritonclient's gRPC client reports for a request it cancelled (measured, 24.10)
CLIENT_SEES = ("CANCELLED", "Locally cancelled by application!")

MODELS = Path(__file__).parent / "qa_cancel_models"
PLAIN, STREAM, BLS = "qa_execute_cancel", "qa_execute_cancel_stream", "qa_execute_cancel_bls"


@pytest.fixture(scope="module")
def server(
    triton_server_factory: Callable[..., TritonServer],
    repository_builder: Callable[..., Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> TritonServer:
    repo = tmp_path_factory.mktemp("qa_cancel") / "repo"
    return triton_server_factory(repository_builder(repo, PLAIN, STREAM, BLS, source=MODELS))


def _input(name: str, value: Any, dtype: Any) -> List[Any]:
    array = np.array([[value]], dtype)
    tensor = grpcclient.InferInput(name, [1, 1], "FP32" if dtype is np.float32 else "INT32")
    tensor.set_data_from_numpy(array)
    return [tensor]


def _server_cancel(
    server: TritonServer, delay: float, cancel_s: float, model: str = PLAIN
) -> Tuple[str, str]:
    """lifecycle_test's way: async_infer, cancel the future while execute() runs."""
    answers: queue.Queue[Any] = queue.Queue()
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as client:
        future = client.async_infer(
            model,
            _input("EXECUTE_DELAY", delay, np.float32),
            lambda result, error: answers.put((result, error)),
        )
        time.sleep(cancel_s)
        assert answers.empty(), "the server answered before the cancel"
        future.cancel()
        result, error = answers.get(timeout=10)
    assert result is None
    exc = request_error(error)
    return exc.code, exc.message


def _server_stream_cancel(server: TritonServer, after: int) -> List[Any]:
    """decoupled_test's way: a stream, stopped with cancel_requests=True once ``after``
    responses came."""
    got: queue.Queue[Any] = queue.Queue()
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as client:
        client.start_stream(callback=lambda result, error: got.put((result, error)))
        client.async_stream_infer(STREAM, _input("STEPS", 20, np.int32))
        parts: List[Any] = []
        while len(parts) < after:
            result, error = got.get(timeout=10)
            assert error is None, error
            parts.append(result.as_numpy("STEP").tolist())
        client.stop_stream(cancel_requests=True)
    while not got.empty():
        result, error = got.get()
        parts.append(request_error(error) if error is not None else result.as_numpy("STEP"))
    return parts


def _agrees(harness: TritonRequestError, code: str, message: str) -> bool:
    """The server's code and message; the harness's account only added after it."""
    return harness.code == code and (
        harness.message == message or harness.message.startswith(message + " (")
    )


def test_cancel_while_execute_runs(server: TritonServer) -> None:
    code, message = _server_cancel(server, delay=3.0, cancel_s=0.7)
    assert (code, message) == ("CANCELLED", "Locally cancelled by application!")
    for plan in (CancelAt(after_s=0.7), CancelAt(check=3)):
        with ModelHarness(MODELS / PLAIN) as harness:
            with pytest.raises(ClientCancelledError) as info:
                harness.infer({"EXECUTE_DELAY": np.array([[3.0]], np.float32)}, cancel=plan)
        assert _agrees(info.value, code, message), (plan, info.value)
        # what the model answered (a client never receives it) is in tritonpy's account
        assert "answered [CANCELLED] work stopped: cancelled" in info.value.explanation


def _logged(server: TritonServer, mark: str) -> List[str]:
    assert server.log_path is not None
    return [line for line in Path(server.log_path).read_text().splitlines() if mark in line]


def _harness_logged(mark: str) -> List[str]:
    return [r.message for r in pb.log_records if mark in r.message]


def test_the_model_sees_the_cancel_in_both(server: TritonServer) -> None:
    _server_cancel(server, delay=3.0, cancel_s=0.5)
    time.sleep(0.5)  # the model's next poll
    assert _logged(server, "[qa_execute_cancel] cancel seen at poll")
    pb.clear_logs()
    with ModelHarness(MODELS / PLAIN) as harness, pytest.raises(ClientCancelledError):
        harness.infer({"EXECUTE_DELAY": np.array([[3.0]], np.float32)}, cancel=CancelAt(check=3))
    assert _harness_logged("[qa_execute_cancel] cancel seen at poll") == [
        "[qa_execute_cancel] cancel seen at poll 3"
    ]


def test_a_bls_callee_is_not_cancelled_with_its_caller(server: TritonServer) -> None:
    """24.10: the client's cancel reaches the caller's request only; the callee runs to its
    end (its request is a new one), and the client still sees its own cancellation."""
    mark = "[qa_execute_cancel_bls]"
    assert _server_cancel(server, delay=2.0, cancel_s=0.7, model=BLS) == CLIENT_SEES
    time.sleep(2.0)  # the callee's end and the caller's log line
    (served,) = _logged(server, mark)
    assert "callee ran to its end; caller cancelled: True" in served
    pb.clear_logs()
    with ModelHarness(MODELS / PLAIN) as callee:
        with ModelHarness(MODELS / BLS, targets={PLAIN: callee}) as caller:
            with pytest.raises(ClientCancelledError) as info:
                delay = {"EXECUTE_DELAY": np.array([[2.0]], np.float32)}
                caller.infer(delay, cancel=CancelAt(after_s=0.7))
    assert _agrees(info.value, *CLIENT_SEES)
    assert _harness_logged(mark) == [f"{mark} callee ran to its end; caller cancelled: True"]


def test_a_cancel_after_the_answer_changes_nothing(server: TritonServer) -> None:
    with grpcclient.InferenceServerClient(f"127.0.0.1:{server.grpc_port}") as client:
        served = client.infer(PLAIN, _input("EXECUTE_DELAY", 0.5, np.float32)).as_numpy("POLLS")
    assert served.tolist() == [[3]]
    with ModelHarness(MODELS / PLAIN) as harness:
        delay = {"EXECUTE_DELAY": np.array([[0.5]], np.float32)}
        # the timer would fire after the answer; the model checks 3 times, never a 4th
        for plan in (CancelAt(after_s=5), CancelAt(check=4)):
            assert harness.infer(delay, cancel=plan)["POLLS"].tolist() == served.tolist()


def test_cancel_a_stream(server: TritonServer) -> None:
    served = _server_stream_cancel(server, after=2)
    assert served[:2] == [[[0]], [[1]]]
    (error,) = served[2:]
    assert (error.code, error.message) == ("CANCELLED", "Locally cancelled by application!")
    # the model's 3rd check answers True: the client had steps 0 and 1
    with ModelHarness(MODELS / STREAM) as harness:
        steps: Dict[str, Any] = {"STEPS": np.array([[20]], np.int32)}
        parts = harness.infer_stream(steps, cancel=CancelAt(check=3), errors="return")
        assert [p["STEP"].tolist() for p in parts[:2]] == [[[0]], [[1]]]
        assert _agrees(parts[2], error.code, error.message) and len(parts) == 3
        with pytest.raises(TritonRequestError) as info:
            harness.infer_stream(steps, cancel=CancelAt(after_s=0.45))
        assert _agrees(info.value, error.code, error.message)
