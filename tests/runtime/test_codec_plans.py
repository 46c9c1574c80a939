"""Codec plans: the one named description of how a codec's values move without its general
steps (``Codec.plan`` -> ``CodecPlan``), what the built-in codecs declare, a custom codec
written against it (as docs/codecs.md shows), and the one dtype/shape rule (``ArrayRule``)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import pytest

import tritonpy as tp
from tritonpy._runtime._engine.engine import engine_of
from tritonpy._runtime.codecs._plan import ArrayRule
from tritonpy.testing import ModelHarness


def test_the_builtin_codecs_plans() -> None:
    tensor = tp.Tensor("FP32", [-1]).plan(batched=True)
    assert (tensor.plain, tensor.read, tensor.write) == (True, "numpy", "numpy")
    assert tensor.dtype == np.dtype(np.float32) and tensor.dims == (-1,)
    assert tensor.groups_requests  # ragged rows keep requests apart
    assert tp.Tensor("FP32", [2], optional=True).plan(batched=True).read is None
    assert tp.Tensor("FP32", [-1], ragged="pad").plan(batched=True) == tp.CodecPlan()
    text = tp.Text().plan(batched=True)
    assert (text.plain, text.read, text.write, text.dtype) == (False, "codec", "numpy", object)
    assert text.to_array is not None and text.decode_many is not None
    unbatched = tp.Text().plan(batched=False)
    assert (unbatched.read, unbatched.write, unbatched.to_array) == (None, "numpy", None)
    assert tp.JSON().plan(batched=True).write == "codec"
    assert tp.JSON().plan(batched=False) == tp.CodecPlan()


def test_a_subclass_with_its_own_steps_gets_the_general_plan() -> None:
    class Doubled(tp.Tensor):
        def decode(self, name: str, tensor: Any, batched: bool) -> Any:
            return super().decode(name, tensor, batched) * 2

    plan = Doubled("FP32", [2]).plan(batched=True)
    assert (plan.plain, plan.read, plan.write) == (False, None, None)

    class Keyed(tp.Text):
        def group_key(self, value: Any) -> Any:
            return len(value)

    assert Keyed().plan(batched=True).groups_requests


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"read": "pandas"}, r"CodecPlan.read must be one of \[None, 'numpy'"),
        ({"read": "numpy"}, r"CodecPlan\(read='numpy'\) needs dtype"),
        ({"read": "codec", "decode_one": len}, r"needs decode_many; give them"),
        ({"write": "torch", "dtype": "f"}, r"needs tensor_type, to_dlpack"),
        ({"plain": True}, r"plain=True\) needs the numpy dtype"),
    ],
)
def test_a_plan_that_misses_what_its_way_needs_is_refused(
    fields: Dict[str, Any], message: str
) -> None:
    with pytest.raises(tp.DeclarationError, match=message):
        tp.CodecPlan(**fields)


class Celsius(tp.Codec):
    """Temperatures sent in tenths of a degree (INT16); ``infer`` gets degrees as float32.
    Its plan decodes a whole request, or every request of a call, in one numpy operation."""

    def __init__(self) -> None:
        super().__init__("INT16", [1])

    def decode(self, name: str, tensor: Any, batched: bool) -> Any:
        array = tensor.as_numpy()
        if (array < -2731).any():
            raise tp.InputError(f"input {name!r}: below absolute zero; send -2731 or more")
        return array.astype(np.float32) / 10

    def merge(self, values: Sequence[Any]) -> Any:
        return np.concatenate(values)

    def encode(self, name: str, value: Any, batched: bool) -> Any:
        return np.round(np.asarray(value) * 10).astype(np.int16)

    def plan(self, batched: bool) -> tp.CodecPlan:
        if not batched:
            return super().plan(batched)
        return tp.CodecPlan(read="codec", decode_one=self._one, decode_many=self._many)

    def _one(self, name: str, tensor: Any, batched: bool) -> Any:
        array = tensor.as_numpy()
        if (array < -2731).any():
            raise ValueError("below absolute zero")  # the general path words the error
        return array.astype(np.float32) / 10

    def _many(self, name: str, tensors: Sequence[Any]) -> Tuple[Any, List[int]]:
        arrays = [tensor.as_numpy() for tensor in tensors]
        if any((array < -2731).any() for array in arrays):
            raise ValueError("below absolute zero")
        return np.concatenate(arrays).astype(np.float32) / 10, [len(a) for a in arrays]


class Thermometer(tp.Model):
    inputs = {"T": Celsius()}
    outputs = {"F": tp.Tensor("FP32", [1])}
    max_batch_size = 8

    def setup(self) -> None:
        self.calls: List[int] = []

    def infer(self, T: np.ndarray) -> Dict[str, Any]:
        self.calls.append(len(T))
        return {"F": T * 9 / 5 + 32}


def _answers(results: List[Any]) -> List[Any]:
    return [(r.code, r.message) if isinstance(r, Exception) else r["F"].tolist() for r in results]


def test_a_custom_codec_plan_takes_the_direct_path_and_keeps_the_general_errors() -> None:
    requests = [
        {"T": np.array([[100], [0]], np.int16)},
        {"T": np.array([[370]], np.int16)},
    ]
    bad = {"T": np.array([[-3000]], np.int16)}
    with ModelHarness(Thermometer) as harness:
        engine = engine_of(harness.model)
        assert engine.direct_inputs is not None  # the plan puts the model on the direct path
        answers = _answers(harness.infer_requests(requests))
        assert harness.model.calls == [3]  # merged in one call
        refused = _answers(harness.infer_requests([requests[1], bad]))
    assert np.allclose(answers[0], [[50.0], [32.0]]) and np.allclose(answers[1], [[98.6]])
    assert np.allclose(refused[0], [[98.6]])
    assert refused[1] == ("INVALID_ARG", "input 'T': below absolute zero; send -2731 or more")


@pytest.mark.parametrize(
    ("dims", "shape", "batched", "fits"),
    [
        ((2,), (2,), False, True),
        ((2,), (3, 2), True, True),
        ((2,), (3,), True, False),
        ((-1,), (7,), False, True),
        ((-1,), (), True, False),
        ((-1, 3), (2, 5, 3), True, True),
        ((-1, 3), (2, 5, 4), True, False),
        ((-1, 3), (5, 3, 1), False, False),
    ],
)
def test_the_array_rule(
    dims: Tuple[int, ...], shape: Tuple[int, ...], batched: bool, fits: bool
) -> None:
    rule = ArrayRule.of(np.dtype(np.float32), dims)
    assert rule.fits(np.zeros(shape, np.float32), batched) is fits
    assert not rule.fits(np.zeros(shape, np.float64), batched)
    assert rule.fits_shape(shape[1:] if batched else shape) is fits or (batched and not shape)


def test_the_direct_and_general_paths_apply_the_same_rule() -> None:
    """Arrays of every fit and misfit, through the direct path and the general one."""

    class Echo(tp.Model):
        inputs = {"X": tp.Tensor("FP32", [-1, 2])}
        outputs = {"Y": tp.Tensor("FP32", [-1, 2])}
        max_batch_size = 4

        def infer(self, X: np.ndarray) -> Dict[str, Any]:
            return {"Y": X}

    arrays: List[Optional[np.ndarray]] = [
        np.zeros((1, 3, 2), np.float32),
        np.zeros((2, 1, 2), np.float32),
        np.zeros((1, 3, 3), np.float32),
        np.zeros((1, 3, 2), np.float64),
        np.zeros((1, 2), np.float32),
    ]
    answers = []
    for direct in (True, False):
        with ModelHarness(Echo) as harness:
            if not direct:
                engine_of(harness.model).direct_inputs = None
            answers.append(
                [_answers_any(harness.infer_requests([{"X": a}])) for a in arrays if a is not None]
            )
    assert answers[0] == answers[1]
    assert [type(a[0]).__name__ for a in answers[0]] == ["list", "list", "tuple", "tuple", "tuple"]


def _answers_any(results: List[Any]) -> List[Any]:
    return [(r.code, r.message) if isinstance(r, Exception) else r["Y"].tolist() for r in results]
