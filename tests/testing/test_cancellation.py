"""The harness's client cancelling a request while ``execute()`` runs (``CancelAt``): at the
model's k-th ``is_cancelled()`` or after some wall time, with the answer tritonserver 24.10's
gRPC clients get (tests/integration/test_conformance_qa_cancel.py compares it with the real
server)."""

from __future__ import annotations

import threading
import time
from typing import Any, Dict, List

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.testing import CancelAt, ClientCancelledError, HarnessError, ModelHarness
from tritonpy.testing import fake_pb_utils as pb

CONFIG: Dict[str, Any] = {
    "input": [{"name": "STEPS", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "DONE", "data_type": "TYPE_INT32", "dims": [1]}],
}
STREAM_CONFIG = {**CONFIG, "model_transaction_policy": {"decoupled": True}}
CANCELLED = ("CANCELLED", "Locally cancelled by application!")


def steps(n: int) -> Dict[str, Any]:
    return {"STEPS": np.array([n], np.int32)}


def count(request: Any) -> int:
    tensor = pb.get_input_tensor_by_name(request, "STEPS")
    assert tensor is not None
    return int(tensor.as_numpy().reshape(-1)[0])


class Polling:
    """Checks is_cancelled() STEPS times (0.02 s apart); answers how many checks said False,
    or its own CANCELLED error (which a client that cancelled never receives)."""

    answers: List[bool] = []

    def execute(self, requests: List[Any]) -> List[Any]:
        responses = []
        for request in requests:
            total = count(request)
            done = 0
            while done < total:
                cancelled = request.is_cancelled()
                type(self).answers.append(cancelled)
                if cancelled:
                    error = pb.TritonError("stopped", pb.TritonError.CANCELLED)
                    responses.append(pb.InferenceResponse(error=error))
                    break
                done += 1
                time.sleep(0.02)
            else:
                responses.append(pb.InferenceResponse([pb.Tensor("DONE", np.array([done]))]))
        return responses


class Streaming:
    """Decoupled: per step asks its response sender, then sends the step number."""

    def execute(self, requests: List[Any]) -> None:
        for request in requests:
            sender = request.get_response_sender()
            total = count(request)
            for step in range(total):
                if sender.is_cancelled():
                    sender.send(pb.InferenceResponse(error=pb.TritonError("stopped")))
                    break
                sender.send(pb.InferenceResponse([pb.Tensor("DONE", np.array([step]))]))
                time.sleep(0.02)
            sender.send(flags=pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL)


@pytest.fixture
def polling() -> Any:
    Polling.answers = []
    with ModelHarness(Polling, config=CONFIG) as harness:
        yield harness


def test_the_kth_check_is_the_first_to_answer_true(polling: ModelHarness) -> None:
    with pytest.raises(ClientCancelledError) as info:
        polling.infer(steps(10), cancel=CancelAt(check=4))
    assert Polling.answers == [False, False, False, True]
    assert (info.value.code, info.value.message) == CANCELLED
    assert isinstance(info.value, TritonRequestError)
    explanation = info.value.explanation
    assert "model 'Polling'" in explanation and "check number 4" in explanation
    assert "answered [CANCELLED] stopped" in explanation and explanation in str(info.value)
    assert info.value.model_answer == "[CANCELLED] stopped"


def test_a_point_in_wall_time_is_seen_by_a_model_sleeping_and_polling(
    polling: ModelHarness,
) -> None:
    started = time.monotonic()
    with pytest.raises(ClientCancelledError) as info:
        polling.infer(steps(500), cancel=CancelAt(after_s=0.2))
    assert 0.2 <= time.monotonic() - started < 2
    assert Polling.answers[-1] is True and 3 <= len(Polling.answers) < 100
    assert "0.2 s after sending it" in info.value.explanation


def test_a_model_that_answers_first_gets_its_answer_through(polling: ModelHarness) -> None:
    assert polling.infer(steps(3), cancel=CancelAt(check=4))["DONE"].tolist() == [3]
    assert polling.infer(steps(2), cancel=CancelAt(after_s=5))["DONE"].tolist() == [2]
    assert not any(Polling.answers)
    # the timer is gone with its request: a later request is not cancelled by it
    assert polling.infer(steps(2))["DONE"].tolist() == [2]
    assert not [t for t in threading.enumerate() if t.name == "tritonpy-cancel-timer"]


def test_a_failing_execute_after_the_cancel_still_shows_the_clients_cancel() -> None:
    class Raises:
        def execute(self, requests: List[Any]) -> List[Any]:
            while not requests[0].is_cancelled():
                pass
            raise ValueError("gave up")

    with ModelHarness(Raises, config=CONFIG) as harness:
        with pytest.raises(ClientCancelledError) as info:
            harness.infer(steps(1), cancel=CancelAt(check=2))
    assert (info.value.code, info.value.message) == CANCELLED
    assert "ValueError: gave up" in info.value.explanation
    assert isinstance(info.value.__cause__, TritonRequestError)


def test_a_stream_gives_the_parts_before_then_the_cancel() -> None:
    with ModelHarness(Streaming, config=STREAM_CONFIG) as harness:
        parts = harness.infer_stream(steps(10), cancel=CancelAt(check=3), errors="return")
        assert [p["DONE"].tolist() for p in parts[:2]] == [[0], [1]]
        (error,) = parts[2:]
        assert isinstance(error, ClientCancelledError)
        assert (error.code, error.message) == CANCELLED
        assert "after 2 response(s)" in error.explanation
        with pytest.raises(ClientCancelledError):
            harness.infer_stream(steps(100), cancel=CancelAt(after_s=0.1))
        # FINAL before the cancel point: every part, no error
        whole = harness.infer_stream(steps(2), cancel=CancelAt(check=5))
        assert [p["DONE"].tolist() for p in whole] == [[0], [1]]


def test_infer_on_a_decoupled_model_is_refused_as_without_cancel() -> None:
    with ModelHarness(Streaming, config=STREAM_CONFIG) as harness:
        with pytest.raises(TritonRequestError) as info:
            harness.infer(steps(1), cancel=CancelAt(check=1))
    assert info.value.code == "UNSUPPORTED"


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({}, "give exactly one"),
        ({"check": 2, "after_s": 1.0}, "give exactly one"),
        ({"check": 0}, "check number >= 1"),
        ({"check": True}, "check number >= 1"),
        ({"after_s": -1.0}, "seconds >= 0"),
    ],
)
def test_a_cancel_point_that_cannot_be_is_refused(kwargs: Dict[str, Any], says: str) -> None:
    with pytest.raises(HarnessError, match=says):
        CancelAt(**kwargs)


def test_cancel_true_still_cancels_before_execute() -> None:
    with ModelHarness(Streaming, config=STREAM_CONFIG) as harness:
        parts = harness.infer_stream(steps(3), cancel=True, errors="return")
    # the client sees only its own cancellation; the model's answer is kept in the error
    (cancelled,) = parts
    assert isinstance(cancelled, ClientCancelledError)
    assert (cancelled.code, cancelled.message) == CANCELLED
    assert [p.message for p in cancelled.model_result] == ["stopped"]
    assert cancelled.parts == []


def test_infer_cancel_true_runs_execute_but_the_client_sees_its_cancel() -> None:
    Polling.answers = []
    with ModelHarness(Polling, config=CONFIG) as harness:
        with pytest.raises(ClientCancelledError) as info:
            harness.infer(steps(3), cancel=True)
    assert (info.value.code, info.value.message) == CANCELLED
    assert Polling.answers == [True]  # execute() ran, its first check said cancelled
    assert info.value.model_answer == "[CANCELLED] stopped"
    assert isinstance(info.value.model_result, TritonRequestError)
    assert "before execute()" in info.value.explanation


def test_cancel_after_raises_the_clients_cancel_with_the_parts_read() -> None:
    with ModelHarness(Streaming, config=STREAM_CONFIG) as harness:
        with pytest.raises(ClientCancelledError) as info:
            harness.infer_stream(steps(4), cancel_after=2)
        assert [p["DONE"].tolist() for p in info.value.parts] == [[0], [1]]
        # model_result: what the model had sent when the client left (later sends never count)
        assert [p["DONE"].tolist() for p in info.value.model_result] == [[0], [1]]
        # a stream that ends before its n-th response is returned as without cancel_after
        assert len(harness.infer_stream(steps(1), cancel_after=3)) == 1


def test_one_request_of_a_batch_cancelled_while_execute_runs() -> None:
    Polling.answers = []
    config = {**CONFIG, "max_batch_size": 4}
    batch = [{"STEPS": np.array([[3]], np.int32)}, {"STEPS": np.array([[3]], np.int32)}]
    with ModelHarness(Polling, config=config) as harness:
        # the model polls request 0 three times, then request 1: its 2nd check is the 5th
        first, second = harness.infer_requests(batch, cancelled={1: CancelAt(check=2)})
        assert isinstance(first, dict) and first["DONE"].tolist() == [3]
        assert isinstance(second, ClientCancelledError)
        assert (second.code, second.message) == CANCELLED
        assert "answered [CANCELLED] stopped" in second.explanation
        # a plain list still cancels before execute(); a point never reached changes nothing
        before, _ = harness.infer_requests(batch, cancelled=[0])
        assert (
            isinstance(before, ClientCancelledError) and (before.code, before.message) == CANCELLED
        )
        assert before.model_result.message == "stopped"  # what the model answered
        untouched = harness.infer_requests(batch, cancelled={0: CancelAt(check=9)})
        assert [a["DONE"].tolist() for a in untouched if isinstance(a, dict)] == [[3], [3]]
