"""The execute() contract as tritonserver 24.10's Python backend enforces it, under the harness
(tests/integration/test_conformance_qa_contract.py holds the same cases against the real
server): a breach is the server's INTERNAL error response, with tritonpy's explanation kept
apart; requests answered through their sender keep their answer."""

from __future__ import annotations

import asyncio
import pickle
import time

import numpy as np
import pytest

from tritonpy import TritonRequestError
from tritonpy.testing import ModelBugError, ModelHarness
from tritonpy.testing import fake_pb_utils as pb
from tritonpy.testing._errors import ExecuteContractError
from tritonpy.testing._stub_loop import StubLoop

CFG = {
    "input": [{"name": "X", "data_type": "TYPE_INT32", "dims": [1]}],
    "output": [{"name": "Y", "data_type": "TYPE_INT32", "dims": [1]}],
}
DECOUPLED = {**CFG, "model_transaction_policy": {"decoupled": True}}
X = {"X": np.array([1], np.int32)}
FINAL = pb.TRITONSERVER_RESPONSE_COMPLETE_FINAL
PREFIX = "Failed to process the request(s) for model 'M_0', message: "


def answer(value: int) -> pb.InferenceResponse:
    return pb.InferenceResponse([pb.Tensor("Y", np.array([value], np.int32))])


def model(execute):  # a model class named M (instance 'M_0') with this execute
    return type("M", (), {"execute": execute})


def test_a_breach_is_an_internal_error_response_with_tritonpys_explanation() -> None:
    with ModelHarness(model(lambda self, requests: (answer(1),)), config=CFG) as h:
        with pytest.raises(ExecuteContractError) as error:
            h.infer(X)
        results = h.infer_requests([X, X])
    breach = error.value
    assert (breach.code, breach.message) == (
        "INTERNAL",
        PREFIX + "Expected a list in the execute return, found type '<class 'tuple'>'.",
    )
    assert isinstance(breach, TritonRequestError) and isinstance(breach, ModelBugError)
    assert "return a list" in breach.explanation
    assert str(breach).endswith(f"(tritonpy: {breach.explanation})")
    again = pickle.loads(pickle.dumps(breach))
    assert (again.message, again.explanation, str(again)) == (
        breach.message,
        breach.explanation,
        str(breach),
    )
    # every request of the batch gets it
    assert [(r.code, r.message) for r in results] == [(breach.code, breach.message)] * 2


def test_a_response_for_a_rescheduled_request_fails_even_without_iterative_sequence() -> None:
    # the stub checks the returned list before the scheduler sees the release flags
    def execute(self, requests):
        requests[0].set_release_flags(pb.TRITONSERVER_REQUEST_RELEASE_RESCHEDULE)
        return [answer(1)]

    with ModelHarness(model(execute), config=CFG) as h, pytest.raises(TritonRequestError) as e:
        h.infer(X)
    assert e.value.message == (
        PREFIX + "Expected a None object in the execute function return list for reschduled "
        "request, found type '<class 'c_python_backend_utils.InferenceResponse'>'."
    )


def test_none_in_the_list_is_the_answer_the_sender_gave() -> None:
    def execute(self, requests):
        requests[1].get_response_sender().send(answer(2), flags=FINAL)
        return [answer(1), None]

    with ModelHarness(model(execute), config=CFG) as h:
        assert [r["Y"].tolist() for r in h.infer_requests([X, X])] == [[1], [2]]


def test_a_closed_request_keeps_its_answer_when_execute_then_fails() -> None:
    def execute(self, requests):
        requests[0].get_response_sender().send(answer(7), flags=FINAL)
        requests[1].get_response_sender().send(answer(8))  # no FINAL: a second answer follows
        raise RuntimeError("late failure")

    with ModelHarness(model(execute), config=CFG) as h:
        first, second, third = h.infer_requests([X, X, X])
        streamed = h.infer_stream(X)  # a gRPC stream keeps the first response
    assert first["Y"].tolist() == [7]
    assert (second.code, second.message) == ("INTERNAL", "expected a single response, got 2")
    assert third.message.startswith(PREFIX + "RuntimeError: late failure")
    assert streamed == [{"Y": np.array([7], np.int32)}]


def test_a_decoupled_model_returning_responses() -> None:
    def execute(self, requests):
        requests[0].get_response_sender().send(answer(5))
        return [answer(6)]

    with ModelHarness(model(execute), config=DECOUPLED) as h:
        received = h.infer_stream(X, errors="return")
        with pytest.raises(ExecuteContractError):
            h.infer_stream(X)
    assert received[0]["Y"].tolist() == [5]
    assert received[1].message == (
        PREFIX + "Python model 'M_0' is using the decoupled mode and the execute function "
        "must return None."
    )


def test_an_async_decoupled_execute_returns_are_ignored_and_its_tasks_run_on() -> None:
    # the stub runs it in the background and never looks at what it returns; tasks it
    # leaves keep running on the model's loop after execute() returned
    async def execute(self, requests):
        sender = requests[0].get_response_sender()

        async def later():
            await asyncio.sleep(0.05)
            sender.send(answer(9), flags=FINAL)

        asyncio.get_running_loop().create_task(later())
        return [answer(1)]

    with ModelHarness(model(execute), config=DECOUPLED, stream_timeout=5) as h:
        assert [r["Y"].tolist() for r in h.infer_stream(X)] == [[9]]


def test_the_stub_loop_runs_between_calls_and_closes() -> None:
    loop = StubLoop()
    ticks = []

    async def start():
        async def tick():
            while True:
                ticks.append(1)
                await asyncio.sleep(0.01)

        asyncio.get_running_loop().create_task(tick())
        return "started"

    assert loop.run(start()) == "started"
    time.sleep(0.1)
    assert len(ticks) > 2  # ran while no call was in progress
    loop.close()
    count = len(ticks)
    time.sleep(0.05)
    assert len(ticks) == count
    assert loop.run(asyncio.sleep(0, "again")) == "again"  # a closed loop starts anew
    loop.close()
