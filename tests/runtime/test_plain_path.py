"""The plain-tensor path (tritonpy/_runtime/_engine/_plain.py): a model without batching whose
inputs and outputs are plain numpy ``tp.Tensor`` is served by one function the stub calls
directly, answering what the direct and general paths answer (test_direct_path.py compares
the answers, whatever the requests hold and ``infer`` returns); every other model keeps the
engine's dispatch."""

from __future__ import annotations

from typing import Any, Dict, List, Type

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime._engine._plain import _execute
from tritonpy._runtime._engine.engine import Engine, engine_of
from tritonpy.testing import ClientCancelledError, ModelHarness
from tritonpy.testing import fake_pb_utils as pb

F4 = np.arange(4, dtype=np.float32)


class AddSub(tp.Model):
    inputs = {"A": tp.Tensor("FP32", [4]), "B": tp.Tensor("FP32", [-1])}
    outputs = {"SUM": tp.Tensor("FP32", [4]), "DIFF": tp.Tensor("FP32", [-1])}

    def infer(self, A: np.ndarray, B: np.ndarray) -> Dict[str, Any]:
        return {"SUM": A + len(B), "DIFF": B * 2}


def _request(**arrays: Any) -> Any:
    tensors = [pb.Tensor(name, np.asarray(value)) for name, value in arrays.items()]
    return pb.InferenceRequest(model_name="m", inputs=tensors)


def _answer(response: Any) -> Any:
    if response.has_error():
        return ("error", int(response.error().code()), response.error().message())
    return {t.name(): t.as_numpy().tolist() for t in response.output_tensors()}


def _is_plain(model: tp.Model) -> bool:
    engine = engine_of(model)
    return getattr(engine.execute, "func", None) is _execute


def test_the_stub_calls_the_plain_path_without_the_models_frame() -> None:
    with ModelHarness(AddSub) as harness:
        engine = engine_of(harness.model)
        assert _is_plain(harness.model)
        assert harness.model.execute is engine.execute  # bound on the instance
        outputs = harness.infer({"A": F4, "B": F4})
    assert outputs["SUM"].tolist() == [4.0, 5.0, 6.0, 7.0]
    assert outputs["DIFF"].tolist() == [0.0, 2.0, 4.0, 6.0]


def test_good_calls_are_answered_by_the_plain_path_alone() -> None:
    def fail(*args: Any) -> Any:
        raise AssertionError("another path was taken")

    with ModelHarness(AddSub) as harness:
        harness.infer({"A": F4, "B": F4})  # the first call times infer(): no checks after it
        engine = engine_of(harness.model)
        for name in ("serve_direct", "compute_alone", "respond", "direct_arrays"):
            setattr(engine, name, fail)
        calls = [[_request(A=F4, B=F4)], [_request(A=F4, B=F4[:2]), _request(B=F4, A=F4 + 1)]]
        answers = [[_answer(r) for r in harness.model.execute(call)] for call in calls]
    assert answers == [
        [{"SUM": [4.0, 5.0, 6.0, 7.0], "DIFF": [0.0, 2.0, 4.0, 6.0]}],
        [
            {"SUM": [2.0, 3.0, 4.0, 5.0], "DIFF": [0.0, 2.0]},
            {"SUM": [5.0, 6.0, 7.0, 8.0], "DIFF": [0.0, 2.0, 4.0, 6.0]},
        ],
    ]


@pytest.mark.parametrize(
    "request_arrays",
    [
        {"A": F4.astype(np.float64), "B": F4},  # data type
        {"A": F4[:3], "B": F4},  # shape
        {"A": F4},  # an input missing
        {"A": F4, "B": F4, "C": F4},  # an unknown input
    ],
    ids=["dtype", "shape", "missing", "unknown"],
)
def test_what_the_plain_path_does_not_take_is_answered_as_before(request_arrays: Any) -> None:
    answers = []
    for plain in (True, False):
        with ModelHarness(AddSub) as harness:
            if not plain:
                engine_of(harness.model).direct_inputs = None  # the general path
            answers.append(_answer(harness.model.execute([_request(**request_arrays)])[0]))
    assert answers[0] == answers[1]
    if "C" not in request_arrays:  # (an input the model does not declare is left aside)
        assert answers[0][:2] == ("error", int(pb.TritonError.INVALID_ARG))


def test_outputs_to_convert_take_the_direct_path() -> None:
    class Converts(AddSub):
        def infer(self, A: np.ndarray, B: np.ndarray) -> Dict[str, Any]:
            return {"SUM": (A + B).astype(np.float64), "DIFF": [1.0, 2.0]}

    with ModelHarness(Converts) as harness:
        assert _is_plain(harness.model)
        outputs = harness.infer({"A": F4, "B": F4})
    assert outputs["SUM"].dtype == np.float32 and outputs["DIFF"].tolist() == [1.0, 2.0]


def test_cancelled_requests_are_still_checked() -> None:
    class Checks(AddSub):
        check_cancellation = True

    with ModelHarness(Checks) as harness:
        assert _is_plain(harness.model)
        with pytest.raises(ClientCancelledError) as cancelled:
            harness.infer({"A": F4, "B": F4}, cancel=True)
    answer = cancelled.value.model_result
    assert isinstance(answer, tp.TritonRequestError) and answer.code == "CANCELLED"


def test_infer_errors_stay_with_their_request() -> None:
    class Picky(AddSub):
        def infer(self, A: np.ndarray, B: np.ndarray) -> Dict[str, Any]:
            if A[0] > 0:
                raise tp.InputError("input 'A': must start at 0")
            if A[0] < 0:
                raise RuntimeError("boom")
            return super().infer(A, B)

    with ModelHarness(Picky) as harness:
        answers = [
            _answer(r)
            for r in harness.model.execute(
                [_request(A=F4 + 1, B=F4), _request(A=F4 - 1, B=F4), _request(A=F4, B=F4)]
            )
        ]
    assert answers[0] == ("error", int(pb.TritonError.INVALID_ARG), "input 'A': must start at 0")
    assert answers[1][:2] == ("error", int(pb.TritonError.INTERNAL))
    assert "RuntimeError" in answers[1][2] and "boom" in answers[1][2]
    assert answers[2] == {"SUM": [4.0, 5.0, 6.0, 7.0], "DIFF": [0.0, 2.0, 4.0, 6.0]}


class Batched(AddSub):
    max_batch_size = 8


class Words(tp.Model):
    inputs = {"A": tp.Tensor("FP32", [4]), "T": tp.Text()}
    outputs = {"SUM": tp.Tensor("FP32", [4])}

    def infer(self, A: np.ndarray, T: Any) -> Dict[str, Any]:
        return {"SUM": A}


class Metered(AddSub):
    builtin_metrics = True


@pytest.mark.parametrize("model", [Batched, Words, Metered], ids=["batched", "text", "metrics"])
def test_other_models_keep_the_engines_dispatch(model: Type[tp.Model]) -> None:
    with ModelHarness(model) as harness:
        assert not _is_plain(harness.model)
        assert harness.model.execute == engine_of(harness.model).execute
        assert type(engine_of(harness.model)).execute is Engine.execute


def test_a_model_that_defines_execute_keeps_it() -> None:
    seen: List[int] = []

    class Counting(AddSub):
        def execute(self, requests: Any) -> Any:
            seen.append(len(requests))
            return super().execute(requests)

    with ModelHarness(Counting) as harness:
        outputs = harness.infer({"A": F4, "B": F4})
        assert "execute" not in vars(harness.model)
    assert seen == [1] and outputs["SUM"].tolist() == [4.0, 5.0, 6.0, 7.0]
