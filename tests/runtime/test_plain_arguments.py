"""How the plain-tensor path (tritonpy/_runtime/_engine/_plain.py) calls ``infer`` and what it
checks: arguments by position when the signature allows it (by name otherwise, with the same
answers), the inputs' checks left to tritonserver only where the server made them, and a
stateful model's requests found in their sequences without the general lookup."""

from __future__ import annotations

import functools
from typing import Any, Dict, List

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime._engine import _plain
from tritonpy._runtime._engine._plain import positional_order, server_checks_inputs
from tritonpy._runtime._engine._sequences import execute_plain_sequences
from tritonpy._runtime._engine.engine import engine_of
from tritonpy.testing import ModelHarness
from tritonpy.testing import fake_pb_utils as pb

F4 = np.arange(4, dtype=np.float32)
F14 = F4.reshape(1, 4)


def _request(**arrays: Any) -> Any:
    tensors = [pb.Tensor(name, np.asarray(value)) for name, value in arrays.items()]
    return pb.InferenceRequest(model_name="m", inputs=tensors)


def _answer(response: Any) -> Any:
    if response.has_error():
        return ("error", int(response.error().code()), response.error().message())
    return {t.name(): t.as_numpy().tolist() for t in response.output_tensors()}


def _keyword_only(*, A: Any, B: Any) -> None: ...


def _wrapped(A: Any, B: Any) -> None: ...


@functools.wraps(_wrapped)
def _wrapper(*args: Any, **kwargs: Any) -> None: ...


@pytest.mark.parametrize(
    ("infer", "expected"),
    [
        (lambda A, B: None, ["A", "B"]),
        (lambda B, A: None, ["B", "A"]),  # the signature's order, whatever the declarations'
        (lambda A, B, scale=2: None, ["A", "B"]),  # a defaulted extra is left to its default
        (lambda A, B, *rest, **more: None, ["A", "B"]),
        (lambda A, /, B: None, ["A", "B"]),  # positional-only
        (lambda **inputs: None, None),
        (_keyword_only, None),
        (lambda A, C, B: None, None),  # C is no input: it would take B's place
        (lambda A: None, None),  # too few
        (_wrapper, None),  # a wrapper's own (*args, **kwargs), not what it wraps
    ],
    ids=[
        "declared", "reordered", "default", "var", "positional-only", "kwargs",
        "keyword-only", "other-name", "too-few", "wrapper",
    ],
)  # fmt: skip
def test_the_positional_order_comes_from_the_signature(infer: Any, expected: Any) -> None:
    assert positional_order(infer, ["A", "B"]) == expected


class AddSub(tp.Model):
    inputs = {"A": tp.Tensor("FP32", [4]), "B": tp.Tensor("FP32", [-1])}
    outputs = {"SUM": tp.Tensor("FP32", [4]), "DIFF": tp.Tensor("FP32", [-1])}

    def infer(self, A: np.ndarray, B: np.ndarray) -> Dict[str, Any]:
        return {"SUM": A + len(B), "DIFF": B - A[: len(B)]}


class Reordered(AddSub):
    def infer(self, B: np.ndarray, A: np.ndarray) -> Dict[str, Any]:  # type: ignore[override]
        return {"SUM": A + len(B), "DIFF": B - A[: len(B)]}


class ByKeyword(AddSub):
    def infer(self, **inputs: np.ndarray) -> Dict[str, Any]:  # type: ignore[override]
        return super().infer(inputs["A"], inputs["B"])


class Defaulted(AddSub):
    def infer(self, A: np.ndarray, B: np.ndarray, offset: float = 0.0) -> Dict[str, Any]:
        return super().infer(A + offset, B)


@pytest.mark.parametrize("model", [Reordered, ByKeyword, Defaulted])
def test_every_signature_gets_each_input_by_its_name(model: Any) -> None:
    """Requests name their inputs in either order; infer gets A as A and B as B however it
    takes its arguments (positionally where it can)."""
    calls = [_request(A=F4, B=F4[:2] * 3), _request(B=F4[:3], A=F4 + 1)]
    with ModelHarness(model) as harness:
        assert getattr(harness.model.execute, "func", None) is _plain._execute
        answers = [_answer(harness.model.execute([call])[0]) for call in calls]
    assert answers == [
        {"SUM": [2.0, 3.0, 4.0, 5.0], "DIFF": [0.0, 2.0]},
        {"SUM": [4.0, 5.0, 6.0, 7.0], "DIFF": [-1.0, -1.0, -1.0]},
    ]


def test_an_input_given_twice_is_answered_as_by_the_general_path() -> None:
    twice = pb.InferenceRequest(
        model_name="m", inputs=[pb.Tensor("A", F4), pb.Tensor("A", F4), pb.Tensor("B", F4)]
    )
    answers = []
    for plain in (True, False):
        with ModelHarness(AddSub) as harness:
            if not plain:
                engine_of(harness.model).direct_inputs = None  # the general path
            answers.append(_answer(harness.model.execute([twice])[0]))
    assert answers[0] == answers[1]


def test_the_fake_keeps_the_input_checks() -> None:
    with ModelHarness(AddSub) as harness:
        engine = engine_of(harness.model)
        assert not server_checks_inputs(engine)
        refused = _answer(harness.model.execute([_request(A=F4.astype(np.float64), B=F4)])[0])
    assert refused[:2] == ("error", int(pb.TritonError.INVALID_ARG))


class _StubTensor(pb.Tensor):
    """pb_utils.Tensor as the stub's embedded C++ module names it."""


_StubTensor.__module__ = "c_python_backend_utils"


def test_the_server_is_trusted_with_inputs_it_checked_and_not_with_reshaped_ones(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ModelHarness(AddSub) as harness:
        engine = engine_of(harness.model)
        monkeypatch.setattr(engine.pb, "Tensor", _StubTensor)
        assert server_checks_inputs(engine)
        entry = engine.model_config["input"][0]
        monkeypatch.setitem(entry, "reshape", {"shape": [2, 2]})
        assert not server_checks_inputs(engine)


def test_inputs_the_server_checked_reach_infer_as_they_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the server's checks (simulated), the loops take each input as it comes: the same
    answers for what the server lets through."""
    seen: List[Any] = []

    class Seeing(AddSub):
        def infer(self, A: np.ndarray, B: np.ndarray) -> Dict[str, Any]:
            seen.append(A.dtype)
            return super().infer(A, B)

    monkeypatch.setattr(_plain, "server_checks_inputs", lambda engine: True)
    with ModelHarness(Seeing) as harness:
        good = _answer(harness.model.execute([_request(A=F4, B=F4[:1])])[0])
        harness.model.execute([_request(A=F4.astype(np.float64), B=F4)])  # never from a server
    assert good == {"SUM": [1.0, 2.0, 3.0, 4.0], "DIFF": [0.0]}
    assert seen == [np.float32, np.float64]


class Counting(tp.Model):
    inputs = {"VALUE": tp.Tensor("FP32", [4])}
    outputs = {"SUM": tp.Tensor("FP32", [4]), "SEEN": tp.Tensor("INT32", [1])}
    max_batch_size = 8
    sequence = tp.Sequence(strategy="oldest", idle_timeout_s=60)

    def start_sequence(self, sequence: tp.SequenceInfo) -> Any:
        return {"sum": np.zeros(4, np.float32), "seen": 0}

    def infer(self, VALUE: np.ndarray, sequence: tp.SequenceInfo) -> Dict[str, Any]:
        state = sequence.state
        state["sum"] = state["sum"] + VALUE[0]
        state["seen"] += 1
        return {"SUM": state["sum"][None], "SEEN": np.array([[state["seen"]]], np.int32)}


def _in_sequence(correlation_id: Any, flags: int, value: float) -> Any:
    tensor = pb.Tensor("VALUE", np.full((1, 4), value, np.float32))
    return pb.InferenceRequest(correlation_id=correlation_id, flags=flags, inputs=[tensor])


def test_sequences_are_found_as_by_the_general_path() -> None:
    """START, continuations, a START under an open id (the old sequence ends, evicted), a null
    request (no id, no flags), an unknown id, END, and string ids: the same answers and the same
    hooks as the general path's."""
    calls = [
        [_in_sequence(7, 1, 1.0), _in_sequence("s", 1, 10.0)],
        [_in_sequence(7, 0, 2.0), _in_sequence("s", 0, 20.0)],
        [_in_sequence(7, 1, 5.0)],  # a new sequence under 7: the first one is evicted
        [pb.InferenceRequest(correlation_id=0, flags=0, inputs=[])],  # a null request
        [_in_sequence(9, 0, 1.0)],  # never started
        [_in_sequence(7, 2, 1.0), _in_sequence("s", 2, 1.0)],
        [_in_sequence(7, 0, 1.0)],  # ended
    ]
    runs = []
    for plain in (True, False):
        ended: List[Any] = []

        class Ending(Counting):
            def end_sequence(self, sequence: tp.SequenceInfo, ended: List[Any] = ended) -> None:
                ended.append((sequence.id, sequence.evicted, sequence.state["seen"]))

        with ModelHarness(Ending, config=Ending.declared_config()) as harness:
            engine = engine_of(harness.model)
            assert getattr(harness.model.execute, "func", None) is execute_plain_sequences
            if not plain:
                engine.direct_inputs = None  # the general path
            answers = [[_answer(r) for r in harness.model.execute(call)] for call in calls]
            assert len(engine.sequences or ()) == 0
        runs.append((answers, ended))
    assert runs[0] == runs[1]
    answers, ended = runs[0]
    assert answers[1] == [
        {"SUM": [[3.0] * 4], "SEEN": [[2]]},
        {"SUM": [[30.0] * 4], "SEEN": [[2]]},
    ]
    assert answers[2] == [{"SUM": [[5.0] * 4], "SEEN": [[1]]}]
    assert answers[3] == [{}]
    assert answers[4][0][:2] == answers[6][0][:2] == ("error", int(pb.TritonError.INVALID_ARG))
    assert ended == [(7, True, 2), (7, False, 2), ("s", False, 3)]
