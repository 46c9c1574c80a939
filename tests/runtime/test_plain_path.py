"""The plain-tensor path (tritonpy/_runtime/_engine/_plain.py): a model whose inputs and
outputs are plain numpy ``tp.Tensor`` is served by one function the stub calls directly,
answering what the direct and general paths answer (test_direct_path.py compares the answers,
whatever the requests hold and ``infer`` returns). A batched model's call of one request is
served there too; a call of several goes on to the engine, which merges them. Every other
model keeps the engine's dispatch."""

from __future__ import annotations

from typing import Any, Dict, List, Type

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime._engine._plain import _execute, _execute_rows
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


def _is_plain_rows(model: tp.Model) -> bool:
    engine = engine_of(model)
    return getattr(engine.execute, "func", None) is _execute_rows


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

    def infer(self, A: np.ndarray, B: np.ndarray) -> Dict[str, Any]:
        return {"SUM": A + B.shape[1], "DIFF": B * 2}


F24 = np.arange(8, dtype=np.float32).reshape(2, 4)


def _fail(*args: Any) -> Any:
    raise AssertionError("another path was taken")


def test_a_batched_models_single_requests_take_the_plain_path_alone() -> None:
    with ModelHarness(Batched) as harness:
        assert _is_plain_rows(harness.model)
        assert harness.model.execute is engine_of(harness.model).execute
        harness.infer({"A": F24, "B": F24})  # the first call times infer(): no checks after it
        engine = engine_of(harness.model)
        for name in ("serve_direct", "merge_direct", "compute_alone", "respond", "direct_arrays"):
            setattr(engine, name, _fail)
        answers = [
            [_answer(r) for r in harness.model.execute([_request(A=a, B=b)])]
            for a, b in ((F24, F24), (F24[:1], F24[:1, :2]))
        ]
    assert answers == [
        [{"SUM": [[4.0, 5.0, 6.0, 7.0], [8.0, 9.0, 10.0, 11.0]], "DIFF": (F24 * 2).tolist()}],
        [{"SUM": [[2.0, 3.0, 4.0, 5.0]], "DIFF": [[0.0, 2.0]]}],
    ]


def test_a_batched_call_of_several_requests_is_merged_by_the_engine() -> None:
    seen: List[int] = []

    class Counting(Batched):
        def infer(self, A: np.ndarray, B: np.ndarray) -> Dict[str, Any]:
            seen.append(len(A))
            return super().infer(A, B)

    with ModelHarness(Counting) as harness:
        responses = harness.model.execute([_request(A=F24, B=F24), _request(A=F24[:1], B=F24[:1])])
        answers = [_answer(r) for r in responses]
    assert seen == [3]  # one infer() for the rows of both requests
    assert answers[1] == {"SUM": [[4.0, 5.0, 6.0, 7.0]], "DIFF": [[0.0, 2.0, 4.0, 6.0]]}


@pytest.mark.parametrize(
    "request_arrays",
    [
        {"A": F24.astype(np.float64), "B": F24},  # data type
        {"A": F24[:, :3], "B": F24},  # shape
        {"A": F24, "B": F24[:1]},  # rows that differ
        {"A": F4, "B": F4},  # no batch dimension
        {"A": F24},  # an input missing
        {"A": F24, "B": F24, "C": F24},  # an unknown input
    ],
    ids=["dtype", "shape", "rows", "unbatched", "missing", "unknown"],
)
def test_what_the_batched_plain_path_does_not_take_is_answered_as_before(
    request_arrays: Any,
) -> None:
    answers = []
    for plain in (True, False):
        with ModelHarness(Batched) as harness:
            if not plain:
                engine_of(harness.model).direct_inputs = None  # the general path
            answers.append(_answer(harness.model.execute([_request(**request_arrays)])[0]))
    assert answers[0] == answers[1]
    if "C" not in request_arrays:
        assert answers[0][:2] == ("error", int(pb.TritonError.INVALID_ARG))


@pytest.mark.parametrize(
    "result",
    [
        {"SUM": F24.astype(np.float64), "DIFF": F24},  # a dtype to convert
        {"SUM": [[1.0] * 4] * 2, "DIFF": F24},  # a list to convert
        {"SUM": F24[:1], "DIFF": F24},  # rows that differ from the request's
        {"SUM": F24[:, :3], "DIFF": F24},  # a shape that does not fit
        {"SUM": F24, "DIFF": F24[:, :, None]},  # a rank that does not fit ([-1])
        {"SUM": F24, "DIFF": F24[:, :2]},  # a ragged output as it may be: answered
        {"SUM": F24},  # an output missing
        {"SUM": F24, "DIFF": F24, "MORE": F24},  # an output not declared
        [F24, F24],  # not a dict
    ],
    ids=["dtype", "list", "rows", "shape", "rank", "ragged", "missing", "unknown", "not-a-dict"],
)
def test_batched_outputs_it_does_not_take_are_answered_as_before(result: Any) -> None:
    class Returns(Batched):
        def infer(self, A: np.ndarray, B: np.ndarray) -> Any:
            return result

    answers = []
    for plain in (True, False):
        with ModelHarness(Returns) as harness:
            assert _is_plain_rows(harness.model)
            if not plain:
                engine_of(harness.model).direct_inputs = None
            answers.append(_answer(harness.model.execute([_request(A=F24, B=F24)])[0]))
    assert answers[0] == answers[1]


def test_batched_infer_errors_and_cancellation_are_kept() -> None:
    class Picky(Batched):
        check_cancellation = True

        def infer(self, A: np.ndarray, B: np.ndarray) -> Dict[str, Any]:
            if A[0, 0] > 0:
                raise tp.InputError("input 'A': must start at 0")
            return super().infer(A, B)

    with ModelHarness(Picky) as harness:
        assert _is_plain_rows(harness.model)
        refused = _answer(harness.model.execute([_request(A=F24 + 1, B=F24)])[0])
        with pytest.raises(ClientCancelledError) as cancelled:
            harness.infer({"A": F24, "B": F24}, cancel=True)
    assert refused == ("error", int(pb.TritonError.INVALID_ARG), "input 'A': must start at 0")
    answer = cancelled.value.model_result
    assert isinstance(answer, tp.TritonRequestError) and answer.code == "CANCELLED"


class Summing(tp.Model):
    inputs = {"VALUE": tp.Tensor("INT32", [1])}
    outputs = {"SUM": tp.Tensor("INT32", [1])}
    max_batch_size = 8
    sequence = tp.Sequence(strategy="oldest", idle_timeout_s=60)

    def start_sequence(self, sequence: tp.SequenceInfo) -> Any:
        return {"sum": 0}

    def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Dict[str, Any]:
        if int(VALUE.sum()) < 0:
            raise ValueError("negative")
        sequence.state["sum"] += int(VALUE.sum())
        return {"SUM": np.array([[sequence.state["sum"]]], np.int32)}


def _in_sequence(correlation_id: int, flags: int, value: Any) -> Any:
    tensor = pb.Tensor("VALUE", value if isinstance(value, np.ndarray) else np.int32(value))
    return pb.InferenceRequest(correlation_id=correlation_id, flags=flags, inputs=[tensor])


def test_a_stateful_models_requests_take_the_plain_path() -> None:
    with ModelHarness(Summing, config=Summing.declared_config()) as harness:
        engine = engine_of(harness.model)
        harness.infer({"VALUE": np.array([[0]], np.int32)}, correlation_id=1, flags=3)  # timed
        for name in ("serve_direct", "compute_in_sequence", "respond", "direct_arrays"):
            setattr(engine, name, _fail)
        calls = [
            [_in_sequence(7, 1, [[2]]), _in_sequence(8, 1, [[5]])],  # two sequences, one call
            [_in_sequence(7, 0, [[3]])],
            [_in_sequence(8, 2, [[1]]), _in_sequence(7, 2, [[4]])],
        ]
        answers = [[_answer(r) for r in harness.model.execute(call)] for call in calls]
        assert len(engine.sequences or ()) == 0  # both ended
    assert answers == [
        [{"SUM": [[2]]}, {"SUM": [[5]]}],
        [{"SUM": [[5]]}],
        [{"SUM": [[6]]}, {"SUM": [[9]]}],
    ]


def test_what_the_stateful_plain_path_does_not_take_is_answered_as_before() -> None:
    calls = [
        [_in_sequence(7, 1, [[2]])],
        [_in_sequence(7, 0, np.array([[3]], np.int64))],  # data type: refused, the sequence open
        [_in_sequence(7, 0, [[-1]])],  # infer() raises: this request fails alone
        [_in_sequence(9, 0, [[1]])],  # a sequence never started
        [_in_sequence(7, 2, [[4]])],
    ]
    answers = []
    for plain in (True, False):
        with ModelHarness(Summing, config=Summing.declared_config()) as harness:
            if not plain:
                engine_of(harness.model).direct_inputs = None  # the general path
            answers.append([_answer(harness.model.execute(call)[0]) for call in calls])
    assert answers[0] == answers[1]
    assert answers[0][4] == {"SUM": [[6]]}
    assert [a[:2] for a in answers[0][1:4]] == [
        ("error", int(pb.TritonError.INVALID_ARG)),
        ("error", int(pb.TritonError.INTERNAL)),
        ("error", int(pb.TritonError.INVALID_ARG)),
    ]


class Words(tp.Model):
    inputs = {"A": tp.Tensor("FP32", [4]), "T": tp.Text()}
    outputs = {"SUM": tp.Tensor("FP32", [4])}

    def infer(self, A: np.ndarray, T: Any) -> Dict[str, Any]:
        return {"SUM": A}


class Metered(AddSub):
    builtin_metrics = True


class BatchedWords(Words):
    max_batch_size = 8


@pytest.mark.parametrize(
    "model", [Words, Metered, BatchedWords], ids=["text", "metrics", "batched-text"]
)
def test_other_models_keep_the_engines_dispatch(model: Type[tp.Model]) -> None:
    with ModelHarness(model) as harness:
        assert not _is_plain(harness.model) and not _is_plain_rows(harness.model)
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
